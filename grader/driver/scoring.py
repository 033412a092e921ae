"""From what the grader programs reported to points and verdicts. Pure functions over
PhaseResult, so every rule here is unit-tested without a GPU (grader/tests/test_scoring.py; thresholds
that follow the GPU: test_thresholds.py)."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from . import skeleton
from .manifest import Lesson, Task
from .runner import PhaseResult
from .sanitizer import ERROR_EXIT_CODE

# Statuses of one component (correctness or performance) of a task.
PASSED = "passed"
FAILED = "failed"
NOT_IMPLEMENTED = "not_implemented"
CRASHED = "crashed"
TIMED_OUT = "timed_out"
COMPILE_ERROR = "compile_error"
MISSING = "missing"
NOT_RUN = "not_run"     # performance, when correctness did not pass
SKIPPED = "skipped"     # performance under --sanitize; tests skipped for want of a GPU
TAMPERED = "tampered"   # the report held records the grader program did not write

# The outcome a grader program reports for a test that ended because the call wrote nothing at
# all (grader::wrote_nothing). Whether that is "not implemented yet" only the source can say.
WROTE_NOTHING = "wrote_nothing"

STATUS_LABELS = {
    PASSED: "passed",
    FAILED: "FAILED",
    NOT_IMPLEMENTED: "not implemented yet",
    CRASHED: "CRASHED",
    TIMED_OUT: "TIMED OUT",
    COMPILE_ERROR: "does not compile",
    MISSING: "missing",
    NOT_RUN: "not timed",
    SKIPPED: "skipped",
    TAMPERED: "REPORT TAMPERED",
}

# CUDA errors after which the process cannot go on: the kernel crashed.
_CRASH_ERRORS = {
    "cudaErrorIllegalAddress": "illegal memory access",
    "cudaErrorLaunchFailure": "unspecified launch failure",
    "cudaErrorMisalignedAddress": "misaligned memory access",
    "cudaErrorIllegalInstruction": "illegal instruction",
    "cudaErrorHardwareStackError": "stack overflow in a kernel",
    "cudaErrorAssert": "a device-side assert fired",
    "cudaErrorLaunchTimeout": "the kernel ran too long and was stopped",
}
_CUDA_ERROR = re.compile(r"\b(cudaError[A-Za-z]+)\b")

METRIC_LABELS = {"fraction_of_copy_bandwidth": "of the measured copy bandwidth",
                 "fraction_of_cublas": "of cuBLAS FP32", "fraction_of_cub": "of CUB",
                 "fraction_of_overlap_bound": "of the overlap bound max(kernel, copies in and out at once)",
                 "speedup_over_cudamalloc": "as fast as cudaMalloc and cudaFree per batch",
                 "speedup_over_pageable_sequential": "as fast as the sequential pageable version",
                 "speedup_over_host_api": "as fast as cuRAND's host API drawing the same numbers into memory, then using them",
                 "speedup_over_global_atomics": "as fast as one global atomicAdd per value"}


def format_metric(metric: str, value: float) -> str:
    """A fraction as a percentage (87%), a speedup as a factor (10.3x)."""
    return f"{value:.1f}x" if metric.startswith("speedup") else f"{value:.0%}"


def _format_precise(metric: str, value: float) -> str:
    return f"{value:.2f}x" if metric.startswith("speedup") else f"{value:.1%}"

# What to look at when a kernel is below its threshold, by metric. A checklist, not a hint:
# the figure alone proves no cause, so it is labelled as such ("Hint [id]" is for causes the
# evidence shows, each with a broken variant: grader/README.md).
METRIC_CHECKLIST = {
    "fraction_of_copy_bandwidth": "a memory-bound kernel should move data at close to the copy bandwidth. Are "
                                  "consecutive threads reading consecutive elements, and does the grid give every SM "
                                  "work?",
    "fraction_of_cublas": "is threadIdx.x the column index, so that a warp reads consecutive elements of B and "
                          "writes consecutive elements of C? Is each value loaded from global memory reused from "
                          "shared memory or registers as many times as the tile allows?",
    "fraction_of_cub": "does each thread reduce many elements in registers before the block cooperates, and is "
                       "the whole GPU busy?",
    "speedup_over_host_api": "does every thread draw many numbers from one generator state, and is that state "
                             "cheap to make (a Philox state is; a XORWOW state's curand_init skips ahead to its "
                             "subsequence, which costs far more)? Are the numbers used where they are drawn, "
                             "never stored in global memory, and the counts combined once per block or warp?",
    "speedup_over_global_atomics": "does each block count into its own histogram in shared memory, and add each "
                                   "bin to global memory once at the end? Is the whole GPU busy, each thread "
                                   "counting many values?",
}

# The rate each metric is a fraction of, reported beside it and compared with the reference.
_RATES = {"gflops": "GFLOP/s", "gbps": "GB/s"}

# The figures a threshold can be scaled by (the manifest's "threshold": {"factor": f, "of": name}):
# measured on the GPU at hand (grader::yardstick: by the reference solution's run of the same test,
# right before the student's or, in a class, from the timing cache), in the same units as the
# task's metric. For each, a short name for the scoreboard line and a sentence for the details.
# Why a threshold follows the GPU: grader/README.md, "Thresholds on the students' GPUs".
YARDSTICKS = {
    "grader_naive_fraction_of_cublas": (
        "a naive kernel",
        "what a naive kernel of the grader's reaches on this GPU, timed with the reference's run of this test "
        "(C = A^T B, one thread per "
        "element of C: the same loads per multiply-add as the lesson's naive kernel). That fraction differs "
        "between GPUs (about 12% of cuBLAS FP32 on an H100; estimated 8-10% on an A10, 13-19% on a T4) with how "
        "many loads an SM issues per FP32 operation and the clocks cuBLAS holds, so the threshold follows it"),
    "grader_tile_copy_fraction_of_copy_bandwidth": (
        "a tile copy",
        "what the grader's copy through 32 x 32 tiles of shared memory (one element a thread: the memory "
        "traffic of a plain padded transpose) reaches on this GPU, timed with the reference's run of this "
        "test. One load a thread keeps fewer bytes in flight than the fastest memories need (a plain padded "
        "transpose reached 55% of the copy bandwidth on an H100, 42% on an H200), so the threshold follows "
        "it; a tile without the padding reached about 0.6 of the plain padded transpose on both"),
}

# A metric below its threshold is measured a second time before it fails the task, and the better
# measurement counts: a timing varies by a few percent from run to run, and now and then by far
# more (an H100 once timed a CUB call at 72% of CUB's own sum, where every other run gave 96%). A
# verdict should not hinge on either.


@dataclass
class ComponentResult:
    """Correctness or performance of one task."""
    kind: str            # "correctness" or "performance"
    status: str
    score: float
    max_score: float
    summary: str         # one line for the scoreboard
    details: str = ""    # what was expected, what came back, hints
    metrics: Dict[str, float] = field(default_factory=dict)
    extra_data: Dict[str, object] = field(default_factory=dict)  # more for results.json's extra_data

    @property
    def passed(self) -> bool:
        return self.status == PASSED


@dataclass
class TaskResult:
    task: Task
    correctness: ComponentResult
    performance: Optional[ComponentResult] = None

    @property
    def components(self) -> List[ComponentResult]:
        return [self.correctness] + ([self.performance] if self.performance else [])

    @property
    def score(self) -> float:
        return sum(c.score for c in self.components)


@dataclass
class LessonResult:
    lesson: Lesson
    tasks: List[TaskResult]
    # Seconds the lesson's grading took, by phase (cli.Grader.grade_lesson): "correctness",
    # "sanitizer_check", "performance", "reference" (the processes' own wall time) and "total".
    wall_s: Dict[str, float] = field(default_factory=dict)
    # Where some of those seconds went: "correctness_in_tests", "performance_in_tests" and
    # "reference_in_tests", inside the test cases (the rest is the programs' start and exit).
    wall_detail_s: Dict[str, float] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tasks)


@dataclass
class GradeRun:
    """Everything one ./grade run found: what it graded, where, and the results."""
    tree: str
    seed: int
    device: Dict[str, object]
    lessons: List[LessonResult]
    sanitize: bool = False
    notes: List[str] = field(default_factory=list)  # lines about the whole run, under the header
    # The seconds this run waited for the GPU lock and held it, shared and exclusive
    # (gpu_lock.lock_seconds): held exclusive is its time alone on the GPU.
    gpu_lock_s: Dict[str, Dict[str, float]] = field(default_factory=dict)
    nvidia_smi_s: float = 0.0  # asking nvidia-smi who else was on the GPU, while it was held alone
    # --park-timed: timed runs started ahead of the hold, parked, and let go on in it (Grader._park).
    parked: Dict[str, int] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return sum(l.score for l in self.lessons)

    @property
    def max_score(self) -> float:
        """The required tasks' points; optional tasks' points (bonus_score) come on top."""
        return sum(l.lesson.max_points for l in self.lessons)

    @property
    def bonus_max_score(self) -> float:
        return sum(l.lesson.bonus_points for l in self.lessons)

    @property
    def all_passed(self) -> bool:
        """Every component of every required task passed; performance skipped under --sanitize
        does not count against it, and neither does an optional task."""
        components = [c for l in self.lessons for t in l.tasks if not t.task.optional for c in t.components]
        return bool(components) and all(
            c.status == PASSED or (c.kind == "performance" and c.status == SKIPPED) for c in components)


def hint(hint_id: str, text: str) -> str:
    """A hint the evidence backs, labelled like the grader programs' (grader::hint): "Hint [id]: text"."""
    return f"Hint [{hint_id}]: {text}"


# A wait this much longer than every finished one, and at least this share of the time limit,
# is a launch that did not finish rather than checks that were merely slow.
STUCK_FACTOR = 10
STUCK_SHARE = 0.5


def timeout_details(phase: PhaseResult) -> str:
    """What a phase stopped at its time limit was doing, from the GPU waits its tests reported:
    one launch that never finished, or checks that finished one after another but too slowly."""
    facts = f"The test did not finish within {phase.timeout_s:g} s."
    done = phase.wait_durations_s
    longest = max(done, default=0.0)
    if phase.open_wait is not None:
        what, since = phase.open_wait
        stuck_for = max(0.0, phase.elapsed_s - since)
        waiting = f" It was waiting for the GPU ({what or 'a launch'}) for the last {stuck_for:.1f} s"
        earlier = (f"; the {len(done)} waits before it took at most {longest:.2f} s each." if done
                   else ", the first wait of the test.")
        if stuck_for >= STUCK_SHARE * phase.timeout_s and stuck_for >= STUCK_FACTOR * max(longest, 0.1):
            return (facts + waiting + earlier + "\n" +
                    hint("timeout-stuck", "one launch ran for the rest of the time limit without finishing: a "
                                          "loop that never ends (does every loop advance, i += stride, and stop, "
                                          "i < n?) or vastly more work than the task needs."))
        # Slow only when the open wait is no longer than the finished ones could explain;
        # in between (long, but short of half the limit) the facts say all that is known.
        if done and stuck_for <= STUCK_FACTOR * max(longest, 0.1):
            return (facts + waiting + earlier + "\n" +
                    hint("timeout-slow", f"the test was still making progress: {len(done)} GPU waits had finished, "
                                         f"the slowest in {longest:.2f} s, so the kernels end, but too slowly for "
                                         "the time limit. Time one call (lesson 02) and compare it with the "
                                         "reference's."))
        return facts + waiting + earlier
    if done:
        return facts + f" {len(done)} GPU waits had finished, the slowest in {longest:.2f} s."
    return facts


def _messages(phase: PhaseResult) -> List[str]:
    return [m for r in phase.records for m in r.get("messages", [])]


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


def _tampering(phase: PhaseResult) -> Optional[ComponentResult]:
    """A verdict when the authenticated report shows interference: lines the grader program did
    not write (or not there), or an exit with status 0 before its last record. None otherwise."""
    if phase.forged_lines:
        n = phase.forged_lines
        if phase.key_problem:
            # Under compute-sanitizer the program is the sanitizer's child: it must pass the pipe on.
            launcher = (" (or compute-sanitizer, which started the program, did not pass the pipe on)"
                        if phase.sanitizer_tool else "")
            return ComponentResult(
                "", TAMPERED, 0, 0, "the grader program could not read its key, so nothing it reported counts",
                f"The grader program found no whole key in the pipe the driver gave it ({phase.key_problem}). It "
                "reads that pipe at start-up, before any of the submission's own code runs (unless that code asks "
                "to run earlier still), and nothing else should touch it; so something read or closed the pipe "
                f"first{launcher}. None of the {_lines(n)} of its report can be authenticated, so none counts; the "
                f"first:\n  {phase.first_forged}")
        replayed = ""
        if phase.out_of_sequence:
            replayed = (f" ({phase.out_of_sequence} of them copies of lines the grader wrote, out of their place: "
                        "replayed, moved, or after lines that were removed)")
        return ComponentResult(
            "", TAMPERED, 0, 0, f"the report file holds {_lines(n)} the grader did not write",
            f"The report file holds {_lines(n)} the grader did not write{replayed}, the first:\n"
            f"  {phase.first_forged}\nThe grader program's results are authenticated per run, so results "
            "written by other code do not count.")
    if phase.authenticated and not phase.run_completed and phase.returncode == 0 and not phase.timed_out:
        if phase.unfinished_test:
            when = f" during \"{phase.unfinished_test}\""
        elif phase.records:
            when = f" after {len(phase.records)} of its tests"
        elif phase.report_found:
            when = " before its first test"
        else:
            when = " before its first test (its report file is missing: never written, or removed)"
        return ComponentResult("", FAILED, 0, 0, "the grader program exited with status 0 before it finished its tests",
                               f"The grader program exited with status 0{when} before it finished its tests "
                               "(something in the submission ended the process, e.g. exit()). Graded code must "
                               "return to its caller; a task counts only when the grader finishes its checks.")
    return None


def _crash_site(phase: PhaseResult, code: str) -> str:
    """Which call crashed, as far as the run shows it: the test, the values it had captured
    (n := 1000, the block), and the grader's last wait for the GPU that never returned, during
    which the error surfaced. Facts only; empty when the run shows none of them."""
    lines = []
    crashed = next((r for r in phase.records if code in "\n".join(r.get("messages", []))), None)
    test = (crashed or {}).get("test") or phase.unfinished_test
    if test:
        lines.append(f'It happened in the test "{test}"')
    captured = [line.strip() for m in (crashed or {}).get("messages", []) for line in m.splitlines()
                if " := " in line]
    if captured:
        lines.append("with " + ", ".join(captured))
    # The first call of that test that ended by throwing with this very error pending: the
    # error surfaced there (a call that threw an exception of its own has no CUDA error).
    surfaced = next((what for t, what, error in phase.raised_waits
                     if what and code in error.split() and (not test or t == test)), "")
    if surfaced:
        lines.append(f"in the grader's call {surfaced}, which ended with that error")
    elif phase.open_wait and phase.open_wait[0]:
        lines.append(f"while the grader waited for the GPU after: {phase.open_wait[0]}")
    return (" " + " ".join(lines) + ".") if lines else ""


def _crash(phase: PhaseResult, lesson_slug: str) -> Optional[ComponentResult]:
    """A crash or a hang, if the phase had one; None when the program ran to the end."""
    tampered = _tampering(phase)
    if tampered:
        return tampered
    where = f" in \"{phase.unfinished_test}\"" if phase.unfinished_test else ""
    if phase.timed_out:
        return ComponentResult("", TIMED_OUT, 0, 0, f"timed out after {phase.timeout_s:g} s{where}",
                               timeout_details(phase))
    # The program's output says how a run that went wrong ended; a run that finished its records
    # with no failure is judged by those alone, so printed text cannot turn it into a crash.
    finished_clean = phase.run_completed and not any(r.get("outcome") == "failed" for r in phase.records)
    text = "\n".join(_messages(phase)) + ("" if finished_clean else "\n" + phase.output_tail)
    for code in _CUDA_ERROR.findall(text):
        if code in _CRASH_ERRORS:
            advice = ("" if phase.sanitizer_tool else
                      f"\nRun ./grade --sanitize {lesson_slug[:2]} to find the source line.")
            return ComponentResult("", CRASHED, 0, 0,
                                   f"crashed: {_CRASH_ERRORS[code]} ({code})",
                                   f"A kernel crashed with {code}." + _crash_site(phase, code) +
                                   " Nothing after it can run in that process." + advice)
    if phase.fatal_signal or phase.killed_by or phase.unfinished_test:
        cause = phase.fatal_signal or (f"killed by {phase.killed_by}" if phase.killed_by else "it stopped early")
        tail = "\n".join(phase.output_tail.splitlines()[-8:])
        return ComponentResult("", CRASHED, 0, 0, f"crashed{where}: {cause}",
                               f"The program ended abnormally ({cause}). Last output:\n{tail}")
    if phase.authenticated and not phase.run_completed and phase.records:
        # Between two tests, with a status other than 0 (0 is _tampering's): the tests after them
        # never ran, so the ones that passed do not make the task pass.
        tail = "\n".join(phase.output_tail.splitlines()[-8:])
        return ComponentResult("", CRASHED, 0, 0,
                               f"the program ended with status {phase.returncode} before it finished its tests",
                               f"The grader program ended with status {phase.returncode} after "
                               f"{len(phase.records)} of its tests, before it finished them. Last output:\n{tail}")
    return None


def judge_correctness(task: Task, phase: PhaseResult, lesson_slug: str, code: str = skeleton.UNKNOWN,
                      where: str = "") -> ComponentResult:
    """Full correctness points when every test of the task passed; a verdict otherwise.
    `code` says whether the task's code is still the skeleton (skeleton.UNTOUCHED, CHANGED or
    UNKNOWN) and `where` names it: a call that wrote nothing is "not implemented yet" only in
    an untouched skeleton, and a failure with the grader's facts in code the student wrote."""
    points = task.correctness_points
    # The sanitizer's findings first: memcheck stops a kernel it catches, which then looks
    # like a crash, but the findings say where and why.
    if phase.sanitizer_errors:
        findings = "\n".join(phase.sanitizer_findings[:15])
        return ComponentResult("correctness", FAILED, 0, points,
                               f"{phase.sanitizer_tool} found {phase.sanitizer_errors} error(s)",
                               f"compute-sanitizer --tool {phase.sanitizer_tool}:\n{findings}")
    crash = _crash(phase, lesson_slug)
    if crash:
        crash.kind, crash.max_score = "correctness", points
        return crash
    records = phase.records
    if not records:
        return ComponentResult("correctness", FAILED, 0, points, "no test ran",
                               "The grader program ran no test for this task (exit code "
                               f"{phase.returncode}). Output:\n{phase.output_tail}")
    outcomes = [r.get("outcome") for r in records]
    if WROTE_NOTHING in outcomes:
        facts = "\n".join(next(r.get("messages", []) for r in records if r.get("outcome") == WROTE_NOTHING))
        facts = facts.strip() or "the call wrote nothing"
        if code == skeleton.UNTOUCHED:
            return ComponentResult("correctness", NOT_IMPLEMENTED, 0, points, "not implemented yet",
                                   f"{where or 'The code'} is still the skeleton: fill in its TODO(task {task.id}).")
        if code == skeleton.CHANGED:
            return ComponentResult("correctness", FAILED, 0, points, facts.splitlines()[0][:100],
                                   facts + (f"\n({where} is no longer the skeleton, so a call that writes nothing is "
                                            "a failure.)" if where else ""))
        return ComponentResult("correctness", FAILED, 0, points, facts.splitlines()[0][:100], facts)
    failed = [r for r in records if r.get("outcome") == "failed"]
    if failed:
        message = "\n".join(failed[0].get("messages", []))
        first_line = next((line for line in message.splitlines() if not line.startswith("Hint")
                           and ("wrong" in line or "written" in line or "threw" in line
                                or "not implemented" in line)), "")
        # Else the first line that is not a captured value ("n := 1000").
        summary = first_line.strip() or next((line.strip() for line in message.splitlines()
                                              if line.strip() and " := " not in line), "wrong result")
        launch = re.search(r"kernel launch failed: (cudaErrorInvalid(?:Value|Configuration))", message)
        if launch and "Hint [" not in message:  # a more specific hint already names the cause
            summary = f"a kernel launch was rejected ({launch.group(1)})"
            message += ("\n" + hint("launch-rejected", "a launch is rejected when its configuration is "
                                                      "impossible: more than 1024 threads per block, 0 blocks, or "
                                                      "too much shared memory."))
        return ComponentResult("correctness", FAILED, 0, points, summary[:100], message)
    if all(o == "skipped" for o in outcomes):
        reason = "\n".join(_messages(phase))
        return ComponentResult("correctness", SKIPPED, 0, points, "skipped: " + reason.splitlines()[0], reason)
    # Metrics a correctness test recorded (lesson 04: the worst rounding error seen, which is how
    # its tolerance was calibrated) go into results.json beside the verdict.
    return ComponentResult("correctness", PASSED, points, points, "correct", "", phase.metrics())


# ---- The check of a pass under compute-sanitizer ----
#
# A task whose correctness passed has its correctness tests run once more under compute-sanitizer,
# at the small sizes of the sanitizer mode (cli.Grader._sanitizer_check). Memory errors that leave
# the values right (a stream-ordered buffer read after its free, a temporary overrun into pool
# memory that happens to be mapped) pass every value check; the sanitizer sees them. A finding
# fails the task; a check that could not finish says so and leaves the pass standing.

CHECK_CLEAN = "clean"                # every test of the task ran and passed, and the tool found nothing
CHECK_FINDING = "finding"            # the tool reported errors: the task fails
CHECK_TIMED_OUT = "timed_out"        # stopped at the check's own time limit: not confirmed, not failed
CHECK_NOT_FINISHED = "not_finished"  # ended otherwise without a finding: not confirmed, not failed
CHECK_TAMPERED = "tampered"          # its report held lines the grader program did not write


@dataclass
class SanitizerRun:
    """One compute-sanitizer process of the check: one tool over the correctness tests of one or
    more tasks that passed, with the check's own time limit."""
    tool: str
    tasks: List[int]
    phase: PhaseResult
    limit_s: float

    @property
    def found(self) -> bool:
        """The tool reported an error: a count in its summary, its exit status for findings, or (in
        a run stopped before its summary) a report that names a kernel."""
        phase = self.phase
        return (phase.sanitizer_errors > 0 or phase.returncode == ERROR_EXIT_CODE
                or any(r.kernel for r in phase.sanitizer_reports))

    @property
    def errors(self) -> int:
        return max(self.phase.sanitizer_errors, len(self.phase.sanitizer_reports), 1)

    def record(self, outcome: str) -> dict:
        """The run as results.json shows it under the task's correctness."""
        return {"tool": self.tool, "tasks": list(self.tasks), "outcome": outcome,
                "wall_s": round(self.phase.elapsed_s, 2), "limit_s": round(self.limit_s, 1)}


@dataclass
class ToolOutcome:
    """What one tool made of one task: an outcome above, the run that decided it, and for a check
    that did not finish what happened (one line, then the facts)."""
    tool: str
    outcome: str
    run: SanitizerRun
    short: str = ""
    facts: str = ""
    tampered: Optional[ComponentResult] = None


def sanitizer_outcome(task: Task, run: SanitizerRun) -> ToolOutcome:
    """The outcome of `run` for `task`, whose tests it ran (alone, or with other tasks' when the
    run was clean: cli.py runs a task alone before it blames it for anything)."""
    phase, tool = run.phase, run.tool
    if run.found:
        return ToolOutcome(tool, CHECK_FINDING, run)
    # Lines the grader program did not write are tampering here as anywhere. An exit with status 0
    # before the last record is not (unlike in the graded run, which already held the code to it):
    # the sanitizer itself may end that way when it cannot run the program. Nor is a key the program
    # could not read, which the graded run of the same code could: that points at the sanitizer,
    # which must pass the key's pipe on to the program.
    if phase.key_problem:
        return ToolOutcome(tool, CHECK_NOT_FINISHED, run, f"the grader program found no key under {tool}",
                           f"Under {tool} the grader program found no whole key in its pipe ({phase.key_problem}), "
                           "so nothing it reported could be read; the graded run had it.")
    tampered = _tampering(phase) if phase.forged_lines else None
    if tampered:
        return ToolOutcome(tool, CHECK_TAMPERED, run, tampered=tampered)
    if phase.timed_out:
        return ToolOutcome(tool, CHECK_TIMED_OUT, run, f"{tool} did not finish within {run.limit_s:.0f} s",
                           f"The check under {tool} was stopped at its time limit of {run.limit_s:.0f} s, the "
                           "sanitizer having reported nothing until then.")
    records = [r for r in phase.records if task.tag in r.get("tags", [])]
    failed = [r for r in records if r.get("outcome") == "failed"]
    tail = "\n".join([line for line in phase.output_tail.splitlines() if line.strip()][-8:])
    if failed:
        message = "\n".join(failed[0].get("messages", [])).strip() or "(no message)"
        return ToolOutcome(tool, CHECK_NOT_FINISHED, run, f"a test failed under {tool}",
                           f"Under {tool} a test of the task failed, with no error reported by the sanitizer:\n"
                           f"{message}")
    if phase.fatal_signal or phase.killed_by or phase.unfinished_test or not phase.run_completed:
        cause = (phase.fatal_signal or (f"killed by {phase.killed_by}" if phase.killed_by else "")
                 or f"exit status {phase.returncode}")
        during = f" during \"{phase.unfinished_test}\"" if phase.unfinished_test else ""
        return ToolOutcome(tool, CHECK_NOT_FINISHED, run, f"{tool} did not finish its run ({cause})",
                           f"Under {tool} the grader program ended{during} before it finished its tests "
                           f"({cause}), with no error reported by the sanitizer. Last output:\n{tail}")
    if not any(r.get("outcome") == "passed" for r in records):
        return ToolOutcome(tool, CHECK_NOT_FINISHED, run, f"no test of the task passed under {tool}",
                           f"Under {tool} no test of the task ran to a pass (all skipped, or none selected). "
                           f"Last output:\n{tail}")
    return ToolOutcome(tool, CHECK_CLEAN, run)


def _names(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def confirm_correctness(task: Task, correctness: ComponentResult, outcomes: List[ToolOutcome],
                        reproduce: str) -> ComponentResult:
    """The correctness verdict of a task that passed, after the check of its pass: failed on the
    first tool that found an error, quoting what that tool printed first; otherwise still passed,
    "confirmed by" the tools that found nothing, with a word on those that could not finish.
    `reproduce` is the command that shows the run again (./grade --sanitize ...)."""
    if not outcomes:
        return correctness
    check = {"status": "confirmed", "tools": {o.tool: o.outcome for o in outcomes},
             "runs": [o.run.record(o.outcome) for o in outcomes]}
    points = correctness.max_score
    finding = next((o for o in outcomes if o.outcome == CHECK_FINDING), None)
    if finding:
        run = finding.run
        reports = run.phase.sanitizer_reports
        first = next((r for r in reports if r.kernel), reports[0] if reports else None)
        check["status"] = "failed"
        if first:
            check["first_report"] = {"kind": first.headline, "kernel": first.kernel, "location": first.location,
                                     "lines": [first.kind] + first.lines}
            summary = f"{finding.tool}: {first.short()}"
            quoted = f" The first, as it printed it:\n{first.quote()}"
        else:
            summary = f"{finding.tool} found {run.errors} error(s)"
            quoted = (" Its report could not be read here (exit status "
                      f"{run.phase.returncode}); the last lines of the run:\n"
                      + "\n".join(run.phase.output_tail.splitlines()[-8:]))
        errors = f"{run.phase.sanitizer_errors} error(s)" if run.phase.sanitizer_errors else "errors"
        details = (f"The tests of task {task.id} passed. Run again at small sizes under compute-sanitizer --tool "
                   f"{finding.tool} to confirm the pass, they made it report {errors}.{quoted}\n"
                   "This is what the sanitizer saw while the tests ran. Their results were right in the graded "
                   "run, which such an error does not rule out: the memory a kernel read or wrote outside what "
                   "it owns may happen to hold the right values there.\n"
                   f"Reproduce: {reproduce}")
        return ComponentResult("correctness", FAILED, 0, points, summary[:140], details, dict(correctness.metrics),
                               {**correctness.extra_data, "sanitizer_check": check})
    tampered = next((o for o in outcomes if o.outcome == CHECK_TAMPERED), None)
    if tampered and tampered.tampered:
        verdict = tampered.tampered
        check["status"] = "tampered"
        return ComponentResult("correctness", verdict.status, 0, points,
                               f"under {tampered.tool}: {verdict.summary}", verdict.details,
                               dict(correctness.metrics), {**correctness.extra_data, "sanitizer_check": check})
    clean = [o.tool for o in outcomes if o.outcome == CHECK_CLEAN]
    unfinished = [o for o in outcomes if o.outcome != CHECK_CLEAN]
    summary = correctness.summary + (f", confirmed by {_names(clean)}" if clean else "")
    details = correctness.details
    if unfinished:
        check["status"] = "partly confirmed" if clean else "not confirmed"
        summary += "; not confirmed: " + "; ".join(o.short for o in unfinished)
        facts = "\n".join(o.facts for o in unfinished)
        details = ((details + "\n") if details else "") + (
            f"The tests of task {task.id} passed; the check of that pass under compute-sanitizer is incomplete:\n"
            f"{facts}\n"
            "The pass stands: only an error the sanitizer reports fails a task. The same tests under the "
            f"sanitizer, with all it says and a longer time limit: {reproduce}")
    return ComponentResult("correctness", PASSED, correctness.score, points, summary, details,
                           dict(correctness.metrics), {**correctness.extra_data, "sanitizer_check": check})


def effective_threshold(task: Task, metrics: Dict[str, float]) -> Tuple[Optional[float], str]:
    """The threshold a measurement is judged against, and how it came about ("" when it is the
    manifest's fixed number). A scaled threshold (manifest.ScaledThreshold) is its factor times the
    yardstick figure the grader program recorded beside the metric; without that figure, a
    positive finite number, there is no threshold (None) and the sentence says why."""
    rule = task.perf_scaled
    if rule is None:
        return task.perf_threshold or 0.0, ""
    base = metrics.get(rule.of)
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base) or base <= 0:
        return None, (f"the grader program did not report {rule.of}, the figure this task's threshold is a "
                      f"multiple of (got {base!r})")
    _, sentence = YARDSTICKS.get(rule.of, (rule.of, f"{rule.of}, measured in this run"))
    metric = task.perf_metric or ""
    return rule.factor * base, f"{rule.factor:g} x {format_metric(metric, base)}, {sentence}"


def _measured(task: Task, phase: Optional[PhaseResult]) -> Optional[Tuple[float, float]]:
    """The task's metric and the threshold it is judged against, when the phase measured both
    without a failure."""
    if phase is None or any(r.get("outcome") == "failed" for r in phase.records):
        return None
    metrics = phase.metrics()
    value = metrics.get(task.perf_metric)
    threshold, _ = effective_threshold(task, metrics)
    return None if value is None or threshold is None else (value, threshold)


def measure_again(task: Task, phase: Optional[PhaseResult]) -> bool:
    """Whether the phase's metric fell short of its threshold, so that it is measured again before
    it fails the task."""
    measured = _measured(task, phase)
    if measured is None:
        return False
    value, threshold = measured
    return value < threshold


def _better_of_two(task: Task, first: Tuple[Optional[PhaseResult], Optional[PhaseResult]],
                   second: Tuple[PhaseResult, Optional[PhaseResult]]):
    """The measurement (phase, reference) that stands higher against its threshold (with a
    threshold that follows the GPU, each against its own), and a line saying both."""
    one, two = _measured(task, first[0]), _measured(task, second[0])
    if one is None:  # nothing to compare with (no recheck is asked for then)
        return first[0], first[1], ""
    note = "\nMeasured twice, since the first fell short of the threshold: "
    metric = task.perf_metric or ""
    if two is None:
        return first[0], first[1], note + (f"{_format_precise(metric, one[0])}, then no figure (the second run "
                                           "failed); the first counts.")
    if task.perf_scaled is None:
        note += f"{_format_precise(metric, one[0])} then {_format_precise(metric, two[0])}; the better one counts."
    else:
        note += (f"{_format_precise(metric, one[0])} against a threshold of {_format_precise(metric, one[1])}, then "
                 f"{_format_precise(metric, two[0])} against {_format_precise(metric, two[1])}; the one further "
                 "above its threshold counts.")
    better = two[0] / two[1] > one[0] / one[1] if one[1] > 0 and two[1] > 0 else two[0] > one[0]
    return (second[0], second[1], note) if better else (first[0], first[1], note)


def judge_performance(task: Task, correctness: ComponentResult, phase: Optional[PhaseResult], lesson_slug: str,
                      reference: Optional[PhaseResult] = None,
                      again: Optional[Tuple[PhaseResult, Optional[PhaseResult]]] = None) -> Optional[ComponentResult]:
    """Performance points when the metric reaches the manifest's threshold. Only correct
    kernels are timed. The reference solution's figure, when given, is reported beside it.
    `again` is a second measurement (the phase and the reference's) taken because the first
    fell short of the threshold: the better of the two counts."""
    measured_twice = ""
    if again is not None:
        phase, reference, measured_twice = _better_of_two(task, (phase, reference), again)
    if not task.performance_points:
        return None
    points = task.performance_points
    if not correctness.passed:
        return ComponentResult("performance", NOT_RUN, 0, points, "correctness must pass first")
    if phase is None:
        return ComponentResult("performance", SKIPPED, 0, points, "not timed (--sanitize or --no-timing)")
    crash = _crash(phase, lesson_slug)
    if crash:
        crash.kind, crash.max_score = "performance", points
        return crash
    failed = [r for r in phase.records if r.get("outcome") == "failed"]
    metrics = phase.metrics()
    if failed or task.perf_metric not in metrics:
        message = "\n".join(m for r in failed for m in r.get("messages", [])) or phase.output_tail
        return ComponentResult("performance", FAILED, 0, points, "could not be measured", message, metrics)

    value = metrics[task.perf_metric]
    threshold, why = effective_threshold(task, metrics)
    if threshold is None:
        return ComponentResult("performance", FAILED, 0, points, "could not be measured",
                               f"No threshold to judge {task.perf_metric} against: {why}.", metrics)
    label = METRIC_LABELS.get(task.perf_metric, task.perf_metric)
    shown, shown_value = format_metric(task.perf_metric, threshold), format_metric(task.perf_metric, value)
    if value < threshold and shown_value == shown:  # "14%, below the 14% threshold" would read as a contradiction
        shown, shown_value = _format_precise(task.perf_metric, threshold), _format_precise(task.perf_metric, value)
    summary = f"{shown_value} {label}"
    rate = next((key for key in _RATES if key in metrics), None)
    if rate:
        summary += f" ({metrics[rate]:.0f} {_RATES[rate]})"
    ref_metrics = reference.metrics() if reference else {}
    if rate and ref_metrics.get(rate):
        metrics["fraction_of_reference"] = metrics[rate] / ref_metrics[rate]
        summary += f", {metrics['fraction_of_reference']:.0%} of the reference"
    details = f"threshold: {shown} {label}" + (f" = {why}." if why else "") + measured_twice
    # Where the threshold follows the GPU, the line itself says what it was here and from what.
    scaled = ""
    if task.perf_scaled is not None:
        metrics["threshold"] = threshold
        base = metrics[task.perf_scaled.of]
        short = YARDSTICKS.get(task.perf_scaled.of, (task.perf_scaled.of, ""))[0]
        scaled = (f"{task.perf_scaled.factor:g} x {format_metric(task.perf_metric, base)}, {short}, on this GPU")
    if measured_twice:
        metrics["measurements"] = 2
    if value >= threshold:
        if scaled:
            summary += f"; threshold here {shown} ({scaled})"
        return ComponentResult("performance", PASSED, points, points, summary, details, metrics)
    checklist = METRIC_CHECKLIST.get(task.perf_metric)
    if checklist:
        details += "\nThings to check (the figure alone does not say which): " + checklist
    return ComponentResult("performance", FAILED, 0, points,
                           summary + f", below the {shown} threshold" + (f" ({scaled})" if scaled else ""),
                           details, metrics)


def fell_short(task: Task, performance: Optional[ComponentResult]) -> bool:
    """Whether a timed task was measured and came out below its threshold (not one that could not
    be measured, or was not timed, or whose threshold could not be known: a scaled threshold
    without its yardstick, the grader's trouble, not a slow kernel): the case the hardware's
    counters are read for (counters.py)."""
    return (performance is not None and performance.status == FAILED and task.perf_metric is not None
            and task.perf_metric in performance.metrics
            and effective_threshold(task, performance.metrics)[0] is not None)


def counters_wanted(task: Task, performance: Optional[ComponentResult]) -> bool:
    """Whether the verdict shows the timed call's counters: a task that fell short, or one whose
    manifest asks for them always ("counters": "always") and was measured."""
    if fell_short(task, performance):
        return True
    return (task.counters_always and performance is not None and task.perf_metric is not None
            and task.perf_metric in performance.metrics)


def _short_name(name: str) -> str:
    name = os.path.basename(name)  # nvidia-smi gives the full path of the program
    return name if len(name) <= 16 else name[:13] + "..."


def note_other_processes(result: Optional[ComponentResult], processes: Sequence[Tuple[int, str]]) -> None:
    """Says beside the performance figures that other processes used the GPU while they were
    measured (gpu_processes.py): the figures may be too low."""
    if result is None or not processes:
        return
    shown = ", ".join(f"pid {pid} {_short_name(name)}" for pid, name in processes[:4])
    if len(processes) > 4:
        shown += ", ..."
    were = "process was" if len(processes) == 1 else "processes were"
    result.summary += f" · {len(processes)} other {were} using the GPU ({shown}): timings may be low"
    result.metrics["other_gpu_processes"] = len(processes)
    result.extra_data["other_gpu_processes"] = [{"pid": pid, "name": name} for pid, name in processes]


def lesson_not_gradable(lesson: Lesson, status: str, summary: str, details: str) -> LessonResult:
    """Every task of a lesson with the same verdict (compile error, lesson missing)."""
    tasks = []
    for task in lesson.tasks:
        correctness = ComponentResult("correctness", status, 0, task.correctness_points, summary, details)
        performance = None
        if task.performance_points:
            performance = ComponentResult("performance", NOT_RUN, 0, task.performance_points,
                                          "correctness must pass first")
        tasks.append(TaskResult(task, correctness, performance))
    return LessonResult(lesson, tasks)
