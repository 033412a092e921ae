"""./grade: build and grade every lesson, or the ones named, and print the scoreboard.

Exit codes: 0 everything passed; 1 something did not; 2 bad arguments or tree; 3 no GPU
(everything compiled); 4 the build itself could not be set up; 5 no GPU, and a lesson does not
compile. results.json and junit.xml are written in every case a lesson was looked at, with the
reason for each task that was not run."""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from . import build, counters, gpu_processes, progress, races, sanitizer, skeleton, timing_cache
from .file_lock import LockError
from .gpu_lock import GpuLock, lock_seconds
from .manifest import Lesson, ManifestError, load_manifest, select_lessons
from .reports import format_scoreboard, write_reports
from .runner import (ParkedRun, PhaseResult, exit_on_sigterm, hung_task_phase, program_environment, ran_cleanly,
                     run_phase, side_by_side, task_phase, untimed_settings, wait_all_parked)
from .timing_cache import TimingCache
from .scoring import (CHECK_CLEAN, CHECK_FINDING, CHECK_NOT_FINISHED, CHECK_TAMPERED, CHECK_TIMED_OUT,
                      COMPILE_ERROR, MISSING, NOT_IMPLEMENTED, PASSED, SKIPPED, STATUS_LABELS, ComponentResult,
                      GradeRun, LessonResult,
                      SanitizerRun, TaskResult, ToolOutcome, confirm_correctness, counters_wanted, fell_short,
                      judge_correctness, judge_performance, lesson_not_gradable, measure_again, note_other_processes,
                      sanitizer_outcome)

BANDWIDTH_ENV = "WORKBOOK_COPY_BANDWIDTH_GBPS"  # the copy bandwidth, as the grader programs read it
EXIT_OK, EXIT_NOT_ALL_PASSED, EXIT_USAGE, EXIT_NO_GPU, EXIT_BUILD, EXIT_NO_GPU_NOR_COMPILE = 0, 1, 2, 3, 4, 5
SANITIZER_SLOWDOWN = 10  # compute-sanitizer slows kernels and API calls this much, give or take
# The check of a pass under compute-sanitizer gets CHECK_START_S plus CHECK_SLOWDOWN times what the
# same tests took without it (Grader._check_limit). It runs the small sizes only, so this is generous;
# a check that runs out of time leaves the pass standing, unconfirmed.
CHECK_SLOWDOWN = 20
CHECK_START_S = 60
# A lesson's correctness tests run in one process (Grader._correctness_together); a task whose tests
# took more than this share of its time limit there is run alone, where the program's start counts too.
TOGETHER_SHARE = 0.5
# The check of several tasks under one of SPLIT_TOOLS, whose plain correctness tests took
# SPLIT_CHECK_S or more together, runs as one process per task, side by side, where the machine has
# a core for each process (Grader._sanitizer_check). Racecheck instruments every shared-memory
# access and is by far the slowest: on an H100 it took 12.7 s over lesson 04's three tasks in one
# process, the longest task 5.2 s, beside memcheck's 4 s and synccheck's 2 s; and every other
# grading's timed phase waits for the longest correctness-side process to end. The split buys a
# grading time only where the GPU has room for the extra processes: ./grade-class, whose gradings
# keep it busy, turns it off (--one-check-per-tool). On an H200, a class of 12 with the split ran 8
# more racecheck processes a submission (lesson 06 one per task, six), each with the tool's start
# and a context of its own, which the gradings side by side wait for one after another.
SPLIT_CHECK_S = 5.0
SPLIT_TOOLS = ("racecheck",)


def parse_args(argv: List[str], root: Path) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="./grade",
        description="Build and grade the workbook's lessons: correctness first, then speed against the GPU's "
                    "measured ceilings and the reference solutions.",
        epilog="examples:  ./grade            grade every lesson in exercises/\n"
               "           ./grade 01         grade lesson 01 (or: ./grade vector_add)\n"
               "           ./grade 03.2       grade task 2 of lesson 03 only\n"
               "           ./grade --no-timing 02   correctness only, nothing timed\n"
               "           ./grade --sanitize 01   run lesson 01 under compute-sanitizer, with every report\n"
               "           ./grade --no-sanitizer-check 05   quicker: passes are not checked under compute-sanitizer\n"
               "           ./grade --tree solutions   the instructor's check of the reference solutions\n"
               "           ./grade --tree ~/submissions/alice   grade another tree laid out like exercises/\n"
               "           ./grade --hint 03.2   the next hint for task 2 of lesson 03 (three per task, in tiers)\n"
               "           ./grade --progress   which tasks passed when they were last graded\n"
               "           ./grade --watch 03   grade lesson 03 again each time its exercise file is saved\n"
               "\n"
               "Reports go to grade-results/ for exercises/ and to grade-results/<tree name>/ for another tree (its\n"
               "folder's name and a hash of its path, such as alice_1a2b3c4d), unless --results says where.\n"
               "Several ./grade runs may share the GPU and the build directory: each tree gets programs of its own,\n"
               "correctness tests run side by side, and performance is timed alone, one grading at a time.\n"
               "\n"
               "A task that passes has its correctness tests run once more under compute-sanitizer (small sizes, the\n"
               "tools the lesson names): an error it reports fails the task, with its first report quoted. A task that\n"
               "fails because the same inputs gave different results has its tests run once under racecheck: only a\n"
               "shared-memory hazard racecheck reports is called a race.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lessons", nargs="*", metavar="LESSON",
                        help="lesson number, slug or name, or LESSON.TASK for one task (default: all)")
    parser.add_argument("--tree", default="exercises",
                        help="directory laid out like exercises/ to grade (default: exercises)")
    parser.add_argument("--seed", type=int, help="seed of the random inputs (default: a fresh one, printed)")
    parser.add_argument("--sanitize", action="store_true",
                        help="run the correctness tests under compute-sanitizer (memcheck everywhere; racecheck and "
                             "synccheck where a task uses shared memory or warp primitives) and show its findings; "
                             "nothing is timed")
    parser.add_argument("--no-sanitizer-check", action="store_true",
                        help="do not check passes under compute-sanitizer: quicker, but a memory error that leaves "
                             "the results right then passes")
    parser.add_argument("--no-timing", action="store_true",
                        help="grade correctness only: performance is not timed (and scores nothing)")
    parser.add_argument("--no-counters", action="store_true",
                        help="do not profile a kernel that fell short of its threshold (Nsight Compute's counters "
                             "beside the verdict)")
    parser.add_argument("--counters-when-short", action="store_true",
                        help="profile only the kernels that fell short: a task that shows its counters on every "
                             "grade (lesson 06) shows none when it passed (./grade-class's default)")
    parser.add_argument("--one-check-per-tool", action="store_true",
                        help="check a lesson's passes in one compute-sanitizer process per tool, never one per "
                             "task: fewer processes where other gradings keep the GPU busy (./grade-class's "
                             "default)")
    parser.add_argument("--park-timed", action="store_true",
                        help="with --timing-cache: start each lesson's timed tests before the GPU is the grading's "
                             "alone, and let them time once it is, so that their start and first set-up run beside "
                             "other gradings rather than in the hold (./grade-class's default where gradings share a "
                             "GPU)")
    parser.add_argument("--timeout", type=float, help="seconds each task may run (default: the lesson's)")
    parser.add_argument("--timing-cache", metavar="FILE",
                        help="reuse the copy bandwidth and the reference solution's timed figures kept in FILE, "
                             "measuring each once per GPU and again after %d reuses or %d minutes (./grade-class "
                             "gives one file per class)" % (timing_cache.MAX_USES, timing_cache.MAX_AGE_S // 60))
    parser.add_argument("--build-dir", default=str(root / "build" / "grade"), help="CMake build directory")
    parser.add_argument("--no-build", action="store_true", help="use the programs already built in --build-dir")
    parser.add_argument("--results",
                        help="where results.json (Gradescope) and junit.xml go (default: below)")
    parser.add_argument("--list", action="store_true", help="list the lessons and tasks, then stop")
    parser.add_argument("--hint", metavar="LESSON.TASK",
                        help="show the next hint of one task (a nudge, then the concept, then close to the answer); "
                             "the hints shown are remembered")
    parser.add_argument("--progress", action="store_true",
                        help="show each task's verdict at its last grading, and the hints seen, then stop")
    parser.add_argument("--watch", action="store_true",
                        help="after grading, grade again each time a graded lesson's exercise file is saved (Ctrl-C "
                             "stops)")
    args = parser.parse_args(argv)
    if args.seed is not None and not 0 < args.seed < 2**32:
        parser.error("--seed must be between 1 and 4294967295")
    return args


def list_lessons(lessons: List[Lesson]) -> str:
    lines = []
    for lesson in lessons:
        bonus = f" + {lesson.bonus_points:g} optional" if lesson.bonus_points else ""
        lines.append(f"{lesson.slug}  {lesson.title}  ({lesson.max_points:g} points{bonus})")
        for task in lesson.tasks:
            perf = f", performance {task.performance_points:g}" if task.performance_points else ""
            optional = ", optional" if task.optional else ""
            lines.append(f"    Task {task.id}: {task.title}  (correctness {task.correctness_points:g}{perf}{optional})")
    return "\n".join(lines)


def resolve_tree(root: Path, tree: str) -> Path:
    candidate = Path(tree).expanduser()
    if not candidate.is_absolute() and not candidate.exists() and (root / tree).exists():
        candidate = root / tree
    return candidate.resolve()


def results_dir(root: Path, tree: str) -> Path:
    """Where a run's reports go by default: grade-results/ for the exercises, a folder of its
    own for any other tree, so gradings of two trees never overwrite each other's."""
    return root / "grade-results" if tree == "exercises" else root / "grade-results" / tree


def _device_info(index: dict, *flags) -> subprocess.CompletedProcess:
    program = index.get("device_info") or "workbook_device_info"
    if not Path(program).is_file():  # --no-build on a build that never made it
        build_dir = Path(program).resolve().parents[1]
        why = (f"{program} is not built: build it (cmake --build {build_dir} --target "
               "workbook_device_info), or run ./grade without --no-build.")
        return subprocess.CompletedProcess([program, *flags], 1, b"", why.encode())
    return subprocess.run([program, *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                          env=program_environment({}))


def device_facts(index: dict) -> subprocess.CompletedProcess:
    """The GPU's facts (name, UUID, SMs, memory) from workbook_device_info, as JSON on stdout;
    nothing timed, so no lock."""
    return _device_info(index)


KEPT, MEASURED = "kept in the timing cache", "measured alone on the GPU"  # how copy_bandwidth found it


def copy_bandwidth(index: dict, device: dict, cache: Optional[TimingCache] = None, who_else=None,
                   before: Optional[list] = None) -> Tuple[Optional[float], str, Optional[list]]:
    """The GPU's copy bandwidth in GB/s (or None), how it was found (or why not), and what
    `who_else` (nvidia-smi's processes on the GPU) said just after the measurement, None where it
    was not asked. Call it holding the GPU alone (gpu_lock.py): it is measured
    (workbook_device_info --measure-copy), or with a timing cache, reused where this GPU measured
    it lately. A measured figure is kept in the cache only when it is plausible and nothing else
    was seen on the GPU just before (`before`, asked here when not given) and just after it: a
    disturbed figure would be the yardstick of the next gradings too."""
    kept = kept_bandwidth(index, device, cache)
    if kept is not None:
        return kept, KEPT, None
    key = TimingCache.key(device.get("uuid"), "copy_bandwidth")
    who_else = who_else or (lambda: gpu_processes.compute_apps(device.get("uuid")))
    if cache and before is None:
        before = who_else()
    try:
        measured = _device_info(index, "--measure-copy")
    except (subprocess.SubprocessError, OSError) as e:  # a copy that never ended, a program that cannot start
        return None, f"workbook_device_info --measure-copy: {e}", None
    if measured.returncode != 0:
        return None, measured.stderr.decode(errors="replace").strip() or f"workbook_device_info exited {measured.returncode}", None
    try:
        gbps = float(json.loads(measured.stdout)["copy_bandwidth_gbps"])
    except (ValueError, KeyError, TypeError):
        return None, "workbook_device_info --measure-copy gave no figure", None
    after = who_else() if cache and plausible_bandwidth(gbps, device) and before == [] else None
    if after == []:
        cache.put(key, index.get("device_info"), {"copy_bandwidth_gbps": gbps}, "copy_bandwidth_gbps")
    return gbps, MEASURED, after


def kept_bandwidth(index: dict, device: dict, cache: Optional[TimingCache]) -> Optional[float]:
    """The copy bandwidth the timing cache keeps for this GPU, a use counted (TimingCache.take);
    None when it keeps none that is plausible and not due to be measured again."""
    key = TimingCache.key(device.get("uuid"), "copy_bandwidth")
    kept = cache.take(key, index.get("device_info")) if cache else None
    if kept and plausible_bandwidth(kept.get("copy_bandwidth_gbps"), device):
        return float(kept["copy_bandwidth_gbps"])
    return None


def query_device(index: dict, tree: str = "", cache_file: Optional[str] = None) -> subprocess.CompletedProcess:
    """The GPU's facts and its copy bandwidth (copy_bandwidth, alone on the GPU), as JSON on stdout:
    for a program that times everything it runs (tools/bench's sweep). ./grade asks only the facts
    first and the bandwidth inside its hold of the GPU alone, when it times something."""
    facts = device_facts(index)
    if facts.returncode != 0:
        return facts
    try:
        device = json.loads(facts.stdout)
    except ValueError:
        return facts
    cache = TimingCache(Path(cache_file)) if cache_file else None
    with GpuLock.for_device(device, tree).exclusive():
        gbps, why, _ = copy_bandwidth(index, device, cache)
    if gbps is None:
        return subprocess.CompletedProcess(facts.args, 1, b"", why.encode())
    return subprocess.CompletedProcess(facts.args, 0, json.dumps(dict(device, copy_bandwidth_gbps=gbps)).encode(), b"")


def plausible_bandwidth(gbps, device: dict) -> bool:
    """A copy bandwidth worth keeping or reusing: positive, and not above the memory's own
    (theoretical) bandwidth where the device reports it."""
    if not isinstance(gbps, (int, float)) or gbps <= 0:
        return False
    ceiling = device.get("theoretical_bandwidth_gbps")
    return not isinstance(ceiling, (int, float)) or ceiling <= 0 or gbps <= ceiling


def reference_usable(phase: PhaseResult) -> bool:
    """Whether a timing of the reference is worth keeping for the next gradings: it ended, every
    test passed, and it reported figures."""
    return (phase.returncode == 0 and not phase.timed_out and phase.run_completed and not phase.forged_lines
            and bool(phase.records) and all(r.get("outcome") == "passed" for r in phase.records)
            and bool(phase.metrics()))


YARDSTICKS_ENV = "WORKBOOK_YARDSTICKS"  # the reference's figures, as grader::yardstick reads them


def _finite_positive(value) -> bool:
    try:
        return math.isfinite(value) and value > 0
    except OverflowError:  # an integer too large for a float (a damaged timing cache)
        return False


def yardsticks_env(figures: Dict[str, float], tag: str = "") -> Dict[str, str]:
    """The reference's figures on a timed task as the student's program reads its yardsticks
    (grader::yardstick in grader/support/grader.hpp): {"WORKBOOK_YARDSTICKS": "name=value,..."},
    finite positive numbers only; {} when there are none. The program takes from it only the
    figures its test names as yardsticks (the grader's own baselines), never the reference's time.
    `tag` ("task_1"): the figures are that task's, named "task_1.name", for a run that times
    several tasks (two tasks may have a yardstick of one name and different figures)."""
    prefix = f"{tag}." if tag else ""
    given = [f"{prefix}{name}={float(value)!r}" for name, value in sorted(figures.items())
             if isinstance(name, str) and name.isidentifier() and isinstance(value, (int, float))
             and not isinstance(value, bool) and _finite_positive(value)]
    return {YARDSTICKS_ENV: ",".join(given)} if given else {}


def sanitizer_tools(tasks: list) -> List[str]:
    """The compute-sanitizer tools the tasks name (the manifest's "sanitizers"), each once, in the
    manifest's order: one check process each (Grader._sanitizer_check, tools/shared_mix.py)."""
    tools: List[str] = []
    for task in tasks:
        tools += [tool for tool in task.sanitizers if tool not in tools]
    return tools


def check_run(tasks: list, tool: str, every_shape: bool = False) -> Tuple[str, Dict[str, str]]:
    """The test spec and the settings of a check process over `tasks` under `tool`: their
    correctness tests in sanitizer mode. WORKBOOK_SANITIZE names the tool (small sizes for every
    tool, and a subset of the shapes: grader::pass_check_mode, grader/README.md "The check of a
    pass"); "1", every shape of the sanitizer mode, where a race is looked for behind
    results that differ."""
    return (",".join(f"[{t.tag}]~[perf]" for t in tasks), {"WORKBOOK_SANITIZE": "1" if every_shape else tool})


def hung_part(whole: PhaseResult, tasks: list, limit: float) -> Dict[int, PhaseResult]:
    """Of a lesson-wide run (Grader._correctness_together, _timed_together) stopped because one
    test passed its time limit: that test's task, timed out as it would be alone (hung_task_phase),
    where its other tests took no more than their share of the limit; {} otherwise (lines the
    grader did not write, or no task's test was open), when every task is run alone."""
    if not whole.test_over_limit or whole.forged_lines or whole.key_problem:
        return {}
    hung = next((t for t in tasks if t.tag in whole.unfinished_tags), None)
    if hung is None:
        return {}
    part = hung_task_phase(whole, hung.tag)
    return {hung.id: part} if part.in_tests_s <= TOGETHER_SHARE * limit else {}


def account_timed(wall: Dict[str, float], in_tests: Dict[str, float], kind: str, run: Optional[PhaseResult]) -> None:
    """A timed run's seconds into a lesson's accounts: `kind` ("performance", "reference") its
    seconds in the hold alone, those of a parked run before its gate (runner.ParkedRun) under
    "timed_setup", which ran beside other gradings."""
    if run is None:
        return
    wall[kind] += run.elapsed_s - run.before_gate_s
    in_tests[kind] += max(0.0, run.in_tests_s - run.in_tests_before_gate_s)
    if run.before_gate_s:
        wall["timed_setup"] = wall.get("timed_setup", 0.0) + run.before_gate_s


def tasks_yardsticks_env(figures: Dict[str, Dict[str, float]]) -> Dict[str, str]:
    """yardsticks_env of several tasks at once ({tag: figures}), each under its tag."""
    given = [yardsticks_env(of_task, tag).get(YARDSTICKS_ENV, "") for tag, of_task in sorted(figures.items())]
    joined = ",".join(g for g in given if g)
    return {YARDSTICKS_ENV: joined} if joined else {}


@dataclass
class AloneOnTheGpu:
    """One hold of the GPU alone (Grader.alone): what nvidia-smi last said of who else is on the
    GPU (as the hold began, or as its last timed task ended); None when that is unknown."""
    seen: Optional[list] = None


@dataclass
class LessonCheck:
    """A lesson's correctness, checked (Grader.check_lesson), waiting for its timed phases."""
    lesson: Lesson
    program: str
    verdicts: Dict[int, ComponentResult] = field(default_factory=dict)
    wall: Dict[str, float] = field(default_factory=lambda: {"correctness": 0.0, "sanitizer_check": 0.0,
                                                            "performance": 0.0, "reference": 0.0})
    # Of the phases' seconds, those inside the test cases (runner.PhaseResult.in_tests_s).
    in_tests: Dict[str, float] = field(default_factory=lambda: {"correctness": 0.0, "performance": 0.0,
                                                                "reference": 0.0})
    seconds: float = 0.0
    # Tasks whose correctness tests compare timings (the manifest's correctness_timed): their
    # plain tests run in the hold of the GPU alone with the timed phases (Grader.time_lesson), not
    # before it; the check of their pass under compute-sanitizer, which times nothing, runs before
    # the hold with the other tasks' (`early`: its outcomes, used if the plain tests then pass).
    deferred: list = field(default_factory=list)
    early: Dict[int, list] = field(default_factory=dict)


class Grader:
    """Runs the tasks of the chosen lessons and collects their results. Correctness phases
    share the GPU with other gradings; performance phases have it alone (gpu_lock.py).

    A lesson is graded in three steps: the correctness of every task; then, for the tasks that
    passed, the check of the pass under compute-sanitizer (one process per tool for all of them,
    at the sanitizer mode's small sizes), and for the tasks that failed because the same inputs
    gave different results, one racecheck run each (races.py); then the performance of the tasks
    still passing. Several lessons (grade_lessons): the first two steps of every lesson, then the
    performance of all of them in one hold of the GPU alone (alone)."""

    def __init__(self, args: argparse.Namespace, index: dict, reference: Optional[Dict[str, str]], device: dict,
                 seed: int, tree: str = "", code: Optional["CodeState"] = None):
        self.args, self.index, self.reference, self.seed = args, index, reference, seed
        self.code = code
        # The copy bandwidth, the yardstick of the memory-bound timed tasks: measured (or taken
        # from the timing cache) as the first hold of the GPU alone begins (self.alone), so that a
        # grading that times nothing never waits for the GPU alone.
        self.device = device
        self.env = {BANDWIDTH_ENV: str(device.get("copy_bandwidth_gbps", ""))}
        self._bandwidth_asked = bool(self.env[BANDWIDTH_ENV])
        if args.sanitize:
            self.env["WORKBOOK_SANITIZE"] = "1"
        self.gpu_uuid = device.get("uuid")
        self.timing_cache = TimingCache(Path(args.timing_cache)) if getattr(args, "timing_cache", None) else None
        self.gpu = GpuLock.for_device(device, tree, say=self._interrupt)
        self.nvidia_smi_s = 0.0  # asking nvidia-smi who else is on the GPU (self._who_else), in the holds alone
        self._hold: Optional[AloneOnTheGpu] = None  # the hold of the GPU alone under way (self.alone)
        # Reference figures the timing cache gave a lesson's run of several tasks (_timed_together)
        # for a task then timed alone: taken once, not counted as a second use.
        self.kept: Dict[Tuple[str, int], Dict[str, float]] = {}
        # Timed runs started ahead of the hold (--park-timed, self._park), by (program, test spec);
        # how many were started and how many of them timed (the others were stopped unused).
        self.park_timed = bool(getattr(args, "park_timed", False) and self.timing_cache is not None
                               and not args.sanitize and not args.no_timing)
        self._parked: Dict[Tuple[str, str], ParkedRun] = {}
        self.parked_counts = {"started": 0, "parked": 0, "used": 0}
        self._line = ""  # the progress line of the task being graded, so far
        self.sanitizer, why = sanitizer.find_sanitizer(index)
        self.no_sanitizer_why = why  # "" when there is one
        if self.sanitizer:  # its --help read now, not while a check holds the GPU (sanitizer.command)
            sanitizer.kernel_exclude_option(self.sanitizer)
        self._grader_kernels_checked: Dict[str, bool] = {}  # by program: _checks_grader_kernels, read once
        # Nsight Compute, for the counters of a timed task that fell short (counters.py).
        self.ncu, self.no_ncu_why = counters.find_ncu(index)
        self.profile_short = not getattr(args, "no_counters", False)
        self.profile_passes = not getattr(args, "counters_when_short", False)
        # The check of each pass under compute-sanitizer: on unless asked off, or already the whole
        # run is under the sanitizer (--sanitize). Without compute-sanitizer it is left out, and
        # one line (self.notes, under the scoreboard's header) says so.
        self.notes: List[str] = []
        self.check_passes = not args.sanitize and not getattr(args, "no_sanitizer_check", False)
        if self.check_passes and self.sanitizer is None:
            self.check_passes = False
            self.notes.append(f"Passes not checked under compute-sanitizer: {why}.")
        elif not args.sanitize and not self.check_passes:
            self.notes.append("Passes not checked under compute-sanitizer (--no-sanitizer-check).")

    def _say(self, text: str) -> None:
        print(text, end="", flush=True)
        self._line += text

    def _interrupt(self, line: str) -> None:
        """A line of its own (waiting for the GPU), then the task's progress line again."""
        print(("\n" if self._line else "") + line, flush=True)
        print(self._line, end="", flush=True)

    def _end_line(self) -> None:
        print(flush=True)
        self._line = ""

    def _timeout(self, lesson: Lesson) -> float:
        timeout = self.args.timeout or lesson.timeout_s
        return timeout * SANITIZER_SLOWDOWN if self.args.sanitize else timeout

    def _shared(self):
        """The GPU shared with other gradings (the lock, shared); inside a hold of the GPU alone
        (self.alone), that hold: the checks of a task whose tests compare timings run there."""
        return nullcontext() if self._hold is not None else self.gpu.shared()

    def _compares_timings(self, task) -> bool:
        """Whether a task's correctness tests compare timings (the manifest's correctness_timed) in
        this run, and so need the GPU alone: not under --sanitize, where they time nothing."""
        return task.correctness_timed and not self.args.sanitize

    def _correctness(self, program: str, lesson: Lesson, task) -> PhaseResult:
        # Side by side with other gradings, unless its checks compare timings (the manifest says).
        with self.alone() if self._compares_timings(task) else self._shared():
            return self._correctness_phase(program, lesson, task)

    def _untimed_env(self, lesson: Lesson) -> Dict[str, str]:
        """The environment of a process that times nothing (runner.untimed_settings)."""
        return dict(self.env, **untimed_settings(lesson))

    def _correctness_phase(self, program: str, lesson: Lesson, task) -> PhaseResult:
        spec = f"[{task.tag}]~[perf]"
        if not self.args.sanitize:
            return run_phase(program, spec, seed=self.seed, timeout_s=self._timeout(lesson),
                             env=self.env if self._compares_timings(task) else self._untimed_env(lesson))
        executable = self.sanitizer or "compute-sanitizer"
        phase = None
        for tool in task.sanitizers:
            phase = run_phase(program, spec, seed=self.seed, timeout_s=self._timeout(lesson),
                              env=self._untimed_env(lesson),
                              sanitizer=sanitizer.command(executable, tool,
                                                          grader_kernels=self._checks_grader_kernels(lesson, program)),
                              sanitizer_tool=tool)
            if phase.sanitizer_errors or phase.timed_out or not phase.records:
                break
        return phase

    def _correctness_together(self, program: str, lesson: Lesson, codes: Dict[int, Tuple[str, str]],
                              wall: Dict[str, float], in_tests: Dict[str, float]) -> Dict[int, PhaseResult]:
        """The correctness tests of every task of the lesson that shares the GPU, in one process:
        a grader program's start (loading it, creating its CUDA context) costs more than many a
        task's tests. A task's verdict is taken from that run only where it is the verdict the task
        gets alone (task_phase): the run ended normally, and the task's own tests all passed, or
        they found the skeleton untouched. Every other task (a failure, a crash, lines the grader
        did not write) is run alone as before, so that nothing another task's code did in the same
        process can decide its verdict. Each test may take the task's time limit (run_phase's
        test_limit_s), the whole run that many times its tasks; a test stopped there times its task
        out as alone (hung_task_phase), and the other tasks run alone."""
        tasks = [t for t in lesson.tasks if not self._compares_timings(t)]
        if self.args.sanitize or len(tasks) < 2:
            return {}
        limit = self._timeout(lesson)
        spec = ",".join(f"[{t.tag}]~[perf]" for t in tasks)
        with self._shared():
            whole = run_phase(program, spec, seed=self.seed, timeout_s=limit * len(tasks),
                              env=self._untimed_env(lesson),
                              test_limit_s=limit)
        wall["correctness"] += whole.elapsed_s
        in_tests["correctness"] += whole.in_tests_s
        if not ran_cleanly(whole):
            # Whether the other tasks' tests all ran is not known: alone, all but a hung test's.
            return hung_part(whole, tasks, limit)
        taken = {}
        for task in tasks:
            part = task_phase(whole, task.tag)
            if part.in_tests_s > TOGETHER_SHARE * limit:  # alone, its start-up might take it past the limit
                continue
            if judge_correctness(task, part, lesson.slug, *codes[task.id]).status in (PASSED, NOT_IMPLEMENTED):
                taken[task.id] = part
        return taken

    def reproduce(self, lesson: Lesson, task) -> str:
        """The command that runs a task's tests under compute-sanitizer again, with every report."""
        tree = f" --tree {self.args.tree}" if getattr(self.args, "tree", "exercises") != "exercises" else ""
        return f"./grade --sanitize --seed {self.seed}{tree} {lesson.slug[:2]}.{task.id}"

    def _check_limit(self, lesson: Lesson, elapsed_s: float) -> float:
        """The time limit of a check process: CHECK_SLOWDOWN times what the same tasks' correctness
        took without the sanitizer (at full sizes; the check runs the small ones), plus its start-up,
        and never more than ./grade --sanitize allows a task."""
        return min((self.args.timeout or lesson.timeout_s) * SANITIZER_SLOWDOWN,
                   CHECK_START_S + CHECK_SLOWDOWN * elapsed_s)

    def _check_run(self, program: str, lesson: Lesson, tasks: list, tool: str, elapsed_s: float,
                   every_shape: bool = False) -> SanitizerRun:
        """One compute-sanitizer process over the correctness tests of `tasks`, in sanitizer mode."""
        with self._shared():
            return self._sanitized(program, lesson, tasks, tool, elapsed_s, every_shape)

    def _sanitized(self, program: str, lesson: Lesson, tasks: list, tool: str, elapsed_s: float,
                   every_shape: bool = False) -> SanitizerRun:
        spec, settings = check_run(tasks, tool, every_shape)
        limit = self._check_limit(lesson, elapsed_s)
        phase = run_phase(program, spec, seed=self.seed, timeout_s=limit,
                          env=dict(self._untimed_env(lesson), **settings),
                          sanitizer=sanitizer.command(self.sanitizer, tool, check=True,
                                                      grader_kernels=self._checks_grader_kernels(lesson, program)),
                          sanitizer_tool=tool)
        return SanitizerRun(tool, [t.id for t in tasks], phase, limit)

    def _checks_grader_kernels(self, lesson: Lesson, program: str) -> bool:
        """Whether the sanitizer checks the grader's own kernels too (sanitizer.command): where the
        student's sources name their mark, or are not known, or the student's compiled code has
        it in a symbol (a name a macro pasted together, which the sources do not show). Read once a
        program: every tool's process of the lesson asks."""
        if program not in self._grader_kernels_checked:
            self._grader_kernels_checked[program] = (self.code is None or self.code.names_grader_kernels(lesson)
                                                     or compiled_code_names_mark(program))
        return self._grader_kernels_checked[program]

    def _check_runs_side_by_side(self, program: str, lesson: Lesson, batches: list,
                                 elapsed: Dict[int, float]) -> List[SanitizerRun]:
        """One compute-sanitizer process per (tool, tasks) of `batches`, all at once: the tools are
        independent processes, and each leaves the GPU idle most of its time (it instruments on the
        CPU), so side by side they take about as long as the slowest alone."""
        with self._shared():
            return side_by_side([partial(self._sanitized, program, lesson, tasks, tool,
                                         sum(elapsed[t.id] for t in tasks)) for tool, tasks in batches],
                                workers=min(len(batches), os.cpu_count() or 1))

    def _sanitizer_check(self, program: str, lesson: Lesson, passed: list, elapsed: Dict[int, float],
                         wall: Dict[str, float]) -> Dict[int, List[ToolOutcome]]:
        """Checks the passes of `passed` tasks under their tools (the manifest's "sanitizers"), one
        process per tool for all the tasks that name it (racecheck one per task where their
        correctness took SPLIT_CHECK_S or more, unless --one-check-per-tool), all side by side. A
        process that ran to its end without a finding judges each task by that task's own records.
        A process of several tasks that found an error, or stopped early (a crash in one task's
        tests leaves the later ones unrun), is run again task by task, so that a task is failed
        only by its own tests; one that ran out of time is not (it would again), and leaves its
        tasks unconfirmed. A task with a finding is judged by the first tool, in the manifest's
        order, that found one: the tools after it do not count."""
        outcomes: Dict[int, List[ToolOutcome]] = {t.id: [] for t in passed}
        tools = sanitizer_tools(passed)
        batches, split = [], set()  # split: the tools run one process per task
        for tool in tools:
            tasks = [t for t in passed if tool in t.sanitizers]
            if (tool in SPLIT_TOOLS and not getattr(self.args, "one_check_per_tool", False) and len(tasks) > 1
                    and sum(elapsed[t.id] for t in tasks) >= SPLIT_CHECK_S
                    and len(tools) - 1 + len(tasks) <= (os.cpu_count() or 1)):
                split.add(tool)
            batches += [(tool, [t]) for t in tasks] if tool in split else [(tool, tasks)]
        self._say(f"  {lesson.slug} passes under compute-sanitizer:")
        runs = self._check_runs_side_by_side(program, lesson, batches, elapsed)
        wall["sanitizer_check"] += max((run.phase.elapsed_s for run in runs), default=0.0)  # side by side
        separator = ""
        for (tool, everyone), run in zip(batches, runs):
            batch = [t for t in everyone
                     if not any(o.outcome in (CHECK_FINDING, CHECK_TAMPERED) for o in outcomes[t.id])]
            if not batch:
                continue
            self._say(separator)
            separator = ";"
            name = f"{tool} task {everyone[0].id}" if tool in split else tool
            # Each task's own records decide, unless the sanitizer found something (whose tests?) or
            # the program stopped early (a crash in one task's tests leaves the later ones unrun).
            if len(everyone) == 1 or (not run.found and (run.phase.timed_out or run.phase.run_completed)):
                for t in batch:
                    outcomes[t.id].append(sanitizer_outcome(t, run))
                words = {self._word(outcomes[t.id][-1]) for t in batch}
                if run.phase.timed_out and not run.found:
                    self._say(f" {name} did not finish within {run.limit_s:.0f} s")
                elif len(words) == 1:
                    self._say(f" {name} {words.pop()} ({run.phase.elapsed_s:.0f} s)")
                else:
                    self._say(f" {tool}: " + ", ".join(f"task {t.id} {self._word(outcomes[t.id][-1])}"
                                                        for t in batch))
                continue
            self._say(f" {tool} {'found errors' if run.found else 'did not finish'}, task by task:")
            for t in batch:
                alone = self._check_run(program, lesson, [t], tool, elapsed[t.id])
                wall["sanitizer_check"] += alone.phase.elapsed_s
                outcomes[t.id].append(sanitizer_outcome(t, alone))
                self._say(f" task {t.id} {self._word(outcomes[t.id][-1])}" + ("," if t is not batch[-1] else ""))
        self._end_line()
        return outcomes

    def _results_differ(self, program: str, lesson: Lesson, task, correctness: ComponentResult, elapsed_s: float,
                        wall: Dict[str, float]) -> ComponentResult:
        """A task whose tests saw the same inputs give different results: its correctness tests once
        more under racecheck, at the sanitizer mode's small sizes, and the verdict races.py makes of
        what racecheck reported. Under --sanitize the run itself was under the task's tools."""
        reproduce = self.reproduce(lesson, task)
        if self.sanitizer is None:
            return races.follow_up(task, correctness, None, reproduce,
                                   f"there is no compute-sanitizer here ({self.no_sanitizer_why})")
        self._say(f"  {lesson.slug} task {task.id}: results differ between runs; racecheck ")
        run = self._check_run(program, lesson, [task], "racecheck", elapsed_s, every_shape=True)
        wall["sanitizer_check"] += run.phase.elapsed_s
        verdict = races.follow_up(task, correctness, run, reproduce)
        outcome = verdict.extra_data["results_differ"]["racecheck"]
        self._say({"hazard": "reported a shared-memory hazard", "no_hazard": "reported no hazard"}.get(
            outcome, "did not finish") + f" ({run.phase.elapsed_s:.0f} s)")
        self._end_line()
        return verdict

    @staticmethod
    def _word(outcome: ToolOutcome) -> str:
        return {CHECK_CLEAN: "clean", CHECK_FINDING: "FOUND ERRORS", CHECK_TIMED_OUT: "did not finish in time",
                CHECK_NOT_FINISHED: "did not finish", CHECK_TAMPERED: "REPORT TAMPERED"}[outcome.outcome]

    @contextmanager
    def alone(self) -> Iterator["AloneOnTheGpu"]:
        """The GPU alone, for the timed phases inside (the per-GPU lock, exclusive). Inside a hold,
        the hold itself: a grading takes the GPU alone once for all its timed phases
        (grade_lessons), so other gradings wait for it, and it for theirs, once, not at every task.
        nvidia-smi is asked who else is on the GPU as the hold begins and after each timed task
        (self._timed): one question more than there are tasks."""
        if self._hold is not None:
            yield self._hold
            return
        hold = AloneOnTheGpu()
        with self.gpu.exclusive():
            self._hold = hold
            try:
                hold.seen = self._who_else()
                if not self._bandwidth_asked:
                    self._copy_bandwidth(hold)
                yield hold
            finally:
                self._hold = None

    def _copy_bandwidth(self, hold: "AloneOnTheGpu") -> None:
        """The copy bandwidth, measured or taken from the timing cache, at the start of the first
        hold alone; without it, each timed test measures its own (workbook::copy_bandwidth_gbps_for_run)."""
        self._bandwidth_asked = True
        gbps, how, after = copy_bandwidth(self.index, self.device, self.timing_cache, self._who_else, before=hold.seen)
        if how == MEASURED:  # the first timed task's "before": as the measurement ended, not as the hold began
            hold.seen = after if after is not None else self._who_else()
        if gbps is None:
            note = f"The copy bandwidth could not be measured ({how}); each timed test measured its own."
            self.notes.append(note)
            print(note, flush=True)
            return
        self._use_bandwidth(gbps, how)

    def _use_bandwidth(self, gbps: float, how: str) -> None:
        self.env[BANDWIDTH_ENV] = str(gbps)
        self.device["copy_bandwidth_gbps"] = gbps
        print(f"  copy bandwidth {gbps:.0f} GB/s ({how}), the yardstick of the memory-bound tasks", flush=True)

    def _who_else(self):
        """The processes on the GPU besides the programs parked there (ParkedRun: a context each and
        nothing running, of this grading or another's); None when unknown."""
        asked = time.monotonic()
        try:
            apps = gpu_processes.compute_apps(self.gpu_uuid)
            if apps:
                parked = self.gpu.parked()
                apps = [app for app in apps if app[0] not in parked]
            return apps
        finally:
            self.nvidia_smi_s += time.monotonic() - asked

    def _timed_run(self, lesson: Lesson, tasks: list, figures: Dict[int, Optional[Dict[str, float]]]
                   ) -> Tuple[str, Dict[str, str], float, Optional[float]]:
        """The test spec, environment, time limit and per-test limit of the student's timed run of
        `tasks` of a lesson, given the reference's figures of each task ({} or None where there are
        none): one task as _timed runs it, several as _timed_together does. The one derivation for
        the run parked before the hold (_park) and the run the hold wants (_run_timed)."""
        limit = self._timeout(lesson)
        if len(tasks) == 1:
            return (f"[{tasks[0].tag}][perf]", dict(self.env, **yardsticks_env(figures.get(tasks[0].id) or {})),
                    limit, None)
        given = {t.tag: figures[t.id] for t in tasks if figures.get(t.id)}
        return (",".join(f"[{t.tag}][perf]" for t in tasks), dict(self.env, **tasks_yardsticks_env(given)),
                limit * len(tasks), limit)

    def _run_timed(self, program: str, lesson: Lesson, tasks: list,
                   figures: Dict[int, Optional[Dict[str, float]]]) -> PhaseResult:
        """The student's timed run of `tasks`, inside the hold alone (_timed_run says what it is):
        the one parked for it (self._park) let go on, where one waits with the same tests and
        environment; else run now."""
        spec, env, timeout_s, test_limit_s = self._timed_run(lesson, tasks, figures)
        parked = self._parked.pop((program, spec), None)
        if parked is not None:
            try:
                if parked.env == env and parked.still_parked():
                    result = parked.go(timeout_s, test_limit_s)
                    # The per-test limit counts from go; a test whose own seconds (its set-up
                    # before the gate included) passed it would have been stopped alone: run again.
                    if not (test_limit_s and not result.timed_out
                            and any(s > test_limit_s for s in result.record_seconds)):
                        self.parked_counts["used"] += 1
                        return result
            finally:
                parked.close()
                self.gpu.unmark_parked(parked.pid)
        return run_phase(program, spec, seed=self.seed, timeout_s=timeout_s, env=env, test_limit_s=test_limit_s)

    def _park(self, checks: List["LessonCheck"]) -> None:
        """--park-timed: each checked lesson's timed run started before the hold alone and parked
        before its first timing (ParkedRun), the GPU held shared meanwhile, as for a correctness
        phase: the programs' start, CUDA contexts and first set-up then run beside other gradings,
        not in the hold, where _run_timed lets them go on. Only where the run is known beforehand:
        the copy bandwidth and the reference's figures of every timed task come from the timing
        cache (a figure to measure is measured in the hold, before the student's run, as without
        parking), and no task's correctness is still to be checked in the hold (deferred). The
        figures taken here are handed to the hold (self.kept), not taken twice."""
        if not self._bandwidth_asked:
            gbps = kept_bandwidth(self.index, self.device, self.timing_cache)
            if gbps is None:
                return  # the hold measures it first
            self._bandwidth_asked = True
            self._use_bandwidth(gbps, KEPT)
        wanted = []
        for check in checks:
            lesson, ref_program = check.lesson, (self.reference or {}).get(check.lesson.slug)
            tasks = [t for t in lesson.tasks if t.id in check.verdicts and self.times(t, check.verdicts[t.id])]
            if not tasks or check.deferred:
                continue
            figures = {t.id: self._kept_reference(lesson, t, ref_program) for t in tasks}
            self.kept.update({(lesson.slug, i): f for i, f in figures.items() if f})
            if ref_program and not all(figures.values()):
                continue
            spec, env, _, _ = self._timed_run(lesson, tasks, figures)
            wanted.append((check.program, spec, env, self._timeout(lesson)))
        if not wanted:
            return
        started = []
        try:
            with self._shared():
                for program, spec, env, limit in wanted:
                    try:
                        started.append((ParkedRun(program, spec, seed=self.seed, env=env), limit))
                    except OSError:  # a program that cannot start: the hold runs it, and says why
                        continue
                self.parked_counts["started"] += len(started)
                wait_all_parked(started)
                for run, limit in started:
                    if run.parked_at is not None:
                        self._parked[(run.program, run.test_spec)] = run
                        self.gpu.mark_parked(run.pid)
                        self.parked_counts["parked"] += 1
                    else:  # it ended (a failure before any timing), or is slow: the hold runs it again
                        run.close()
        except BaseException:
            for run, _ in started:
                run.close()
            raise

    def _unpark(self) -> None:
        """Stops the parked runs no timed phase took."""
        for run in self._parked.values():
            run.close()
            self.gpu.unmark_parked(run.pid)
        self._parked.clear()

    def _reference_key(self, lesson: Lesson, task) -> str:
        return TimingCache.key(self.gpu_uuid, f"reference/{lesson.slug}/{task.id}")

    def _kept_reference(self, lesson: Lesson, task, ref_program: Optional[str]) -> Optional[Dict[str, float]]:
        """The reference's figures for a task that the timing cache holds for this GPU, if any:
        those it already gave a lesson-wide run (self.kept), else taken from it (a use counted)."""
        if (lesson.slug, task.id) in self.kept:
            return self.kept.pop((lesson.slug, task.id))
        if not (self.timing_cache and ref_program):
            return None
        return self.timing_cache.take(self._reference_key(lesson, task), ref_program)

    def _keep_reference(self, lesson: Lesson, task, ref_program: Optional[str], reference: Optional[PhaseResult],
                        seen: list, others: list) -> None:
        """A reference timed now kept for the next gradings: when it is usable, nothing else used
        the GPU meanwhile (others) and nvidia-smi answered both before and after (seen); inside the
        hold alone (one grading measures, timing_cache.py)."""
        if (self.timing_cache and reference is not None and reference_usable(reference) and not others
                and all(s is not None for s in seen)):
            self.timing_cache.put(self._reference_key(lesson, task), ref_program, reference.metrics(), task.perf_metric)

    def _timed(self, program: str, lesson: Lesson, task,
               fresh: bool = False) -> Tuple[PhaseResult, Optional[PhaseResult], list]:
        """The reference's performance test, then the task's, alone on the GPU (self.alone); and the
        other processes nvidia-smi saw on the GPU just before and just after them (before: as the
        previous task ended, or as the hold began). The reference goes first: its figures, taken
        from the timing cache or measured now, give the student's program its yardsticks
        (yardsticks_env), which it then need not time again. `fresh`: the reference is timed now
        whatever the cache holds (and its new figures kept): the second measurement of a task
        below its threshold compares the student with yardsticks timed right before, not with
        figures up to timing_cache.MAX_AGE_S old."""
        spec = f"[{task.tag}][perf]"
        ref_program = (self.reference or {}).get(lesson.slug)
        reference = None
        with self.alone() as hold:
            before = hold.seen
            kept = None if fresh else self._kept_reference(lesson, task, ref_program)
            if kept:  # the reference's figure this GPU measured lately (timing_cache.py)
                reference = PhaseResult(records=[{"outcome": "passed", "metrics": kept}])
            elif ref_program:
                try:
                    reference = run_phase(ref_program, spec, seed=self.seed, timeout_s=self._timeout(lesson),
                                          env=self.env)
                except FileNotFoundError:  # --no-build on a build that never made it: no comparison then
                    reference = None
            given = kept or (reference.metrics() if reference is not None and reference_usable(reference) else {})
            phase = self._run_timed(program, lesson, [task], {task.id: given})
            after = hold.seen = self._who_else()
            ours = [os.getpid()] + [p.pid for p in (phase, reference) if p and p.pid]
            others = gpu_processes.others([before, after], ours)
            if not kept:
                self._keep_reference(lesson, task, ref_program, reference, [before, after], others)
        return phase, reference, others

    def _timed_together(self, program: str, lesson: Lesson, tasks: list, wall: Dict[str, float],
                        in_tests: Dict[str, float]) -> Dict[int, Tuple[PhaseResult, Optional[PhaseResult], list]]:
        """_timed for several tasks of a lesson at once, in one hold alone on the GPU: the
        reference's timed tests of the tasks the timing cache has no figures for in one process,
        then the student's timed tests of every task in one (each task given its own yardsticks,
        tasks_yardsticks_env), each test held to the lesson's time limit. A task comes back only
        where that run ended normally and every test of the task passed with its figure, within
        half the limit, or where its test was the one stopped at the limit; the others are timed
        one by one (self._timed), as before. Each part's elapsed_s is its tests''
        seconds and its share of the program's start and exit; the runs' whole seconds go into
        `wall` and `in_tests` here. The other processes nvidia-smi saw are the whole run's, every
        task's."""
        ref_program = (self.reference or {}).get(lesson.slug)
        limit = self._timeout(lesson)
        with self.alone() as hold:
            before = hold.seen
            kept = {t.id: self._kept_reference(lesson, t, ref_program) for t in tasks}
            missing = [t for t in tasks if not kept[t.id] and ref_program]
            references: Dict[int, PhaseResult] = {}
            ref_whole = None
            if missing:
                try:
                    ref_whole = run_phase(ref_program, ",".join(f"[{t.tag}][perf]" for t in missing), seed=self.seed,
                                          timeout_s=limit * len(missing),
                                          env=self.env, test_limit_s=limit)
                except FileNotFoundError:  # --no-build on a build that never made it: no comparison then
                    ref_whole = None
                if ref_whole is not None and ran_cleanly(ref_whole):
                    references = {t.id: task_phase(ref_whole, t.tag, len(missing)) for t in missing}
            for t in tasks:
                if kept[t.id]:
                    references[t.id] = PhaseResult(records=[{"outcome": "passed", "metrics": kept[t.id]}])
            given = {t.id: references[t.id].metrics() for t in tasks
                     if t.id in references and (kept[t.id] or reference_usable(references[t.id]))}
            whole = self._run_timed(program, lesson, tasks, given)
            after = hold.seen = self._who_else()
            for kind, run in (("performance", whole), ("reference", ref_whole)):
                account_timed(wall, in_tests, kind, run)
            ours = [os.getpid()] + [p.pid for p in (whole, ref_whole) if p and p.pid]
            others = gpu_processes.others([before, after], ours)
            for t in missing:
                self._keep_reference(lesson, t, ref_program, references.get(t.id), [before, after], others)
        parts: Dict[int, PhaseResult] = {}
        if ran_cleanly(whole):
            # Only a measurement: every test of the task passed and gave its figure, within its
            # share of the limit. A failure may be another task's doing (a sticky CUDA error, memory
            # it left allocated), so it is timed alone, as is a task alone nearer its limit.
            for t in tasks:
                part = task_phase(whole, t.tag, len(tasks))
                if (part.records and all(r.get("outcome") == "passed" for r in part.records)
                        and t.perf_metric in part.metrics() and part.in_tests_s <= TOGETHER_SHARE * limit):
                    parts[t.id] = part
        else:
            parts = hung_part(whole, tasks, limit)
        # A reference the run could not give a task (its own run did not end normally) is timed
        # with the task alone, as before; the figures the cache gave are handed on (self.kept).
        taken = {t.id: (parts[t.id], references.get(t.id), others) for t in tasks
                 if t.id in parts and (t.id in references or not ref_program)}
        self.kept.update({(lesson.slug, t.id): kept[t.id] for t in tasks if kept[t.id] and t.id not in taken})
        return taken

    def _counters(self, program: str, lesson: Lesson, task, performance: ComponentResult,
                  wall: Dict[str, float], short: bool = True) -> None:
        """The hardware's counters of a timed task that fell short (or of one that shows them
        always), below its verdict: its timed test once more under Nsight Compute, alone on the GPU
        (counters.py); the causes they prove only when it fell short. Their time is its own line of
        the wall times ("counters")."""
        if self.ncu is None:
            self._no_counters(performance, short, self.no_ncu_why)
            return
        self._say("profiling, ")
        metrics = performance.metrics
        with self.alone():
            lines, elapsed_s = counters.profile(run_phase, program, f"[{task.tag}][perf]", ncu=self.ncu,
                                                seed=self.seed, timeout_s=self._timeout(lesson) * counters.PROFILE_SLOWDOWN,
                                                # the yardsticks the timed run took, not timed again
                                                env=dict(self.env, **yardsticks_env(metrics)),
                                                least_bytes=metrics[counters.PROFILED_BYTES],
                                                bandwidth_bound=task.perf_metric in counters.BANDWIDTH_METRICS,
                                                causes=short)
        wall["counters"] = wall.get("counters", 0.0) + elapsed_s
        metrics["counters_s"] = round(elapsed_s, 2)
        if not any(line.startswith(counters.REPORT_HEADING) for line in lines):  # "No counters: ..."
            why = lines[0][len("No counters: "):] if lines[0].startswith("No counters: ") else lines[0]
            self._no_counters(performance, short, why.rstrip("."))
            return
        performance.extra_data["counters"] = "shown"  # the scoreboard lists a passed task's counters
        performance.details += "\n" + "\n".join(lines) + f"\n(Profiling took {elapsed_s:.0f} s.)"

    def _no_counters(self, performance: ComponentResult, short: bool, why: str) -> None:
        """No counters for a task: said in its verdict when it fell short; for a task that shows
        them on every grade and passed, once for the whole run, under the scoreboard's header."""
        if short:
            performance.details += f"\nNo counters: {why}."
            return
        note = f"No counters on the tasks that show them on every grade: {why}."
        if note not in self.notes:
            self.notes.append(note)

    def times(self, task, correctness: ComponentResult) -> bool:
        """Whether a task with this correctness verdict is timed in this run."""
        return bool(task.performance_points and correctness.passed and not self.args.sanitize
                    and not self.args.no_timing)

    def needs_hold(self, check: "LessonCheck") -> bool:
        """Whether a checked lesson needs the GPU alone: a task timed, or one whose tests compare
        timings still to run (check_lesson's deferred)."""
        return self.times_any(check) or bool(check.deferred)

    def times_any(self, check: "LessonCheck") -> bool:
        """Whether any task of a checked lesson is timed (and so needs the GPU alone); of the tasks
        checked so far (not those deferred to the hold alone, check_lesson)."""
        return any(self.times(task, check.verdicts[task.id]) for task in check.lesson.tasks
                   if task.id in check.verdicts)

    def grade_lessons(self, work: List[Tuple[Lesson, Optional[str], Optional[LessonResult]]]) -> List[LessonResult]:
        """Grades each (lesson, program) of `work`, or takes the result already given for it (a
        lesson that cannot be graded): every lesson's correctness first, side by side with other
        gradings, then every timed phase in one hold alone on the GPU (self.alone)."""
        checked = [(given, None if given else self.check_lesson(lesson, program)) for lesson, program, given in work]
        hold = any(c and self.needs_hold(c) for _, c in checked)
        try:
            if hold and self.park_timed:
                self._park([c for _, c in checked if c is not None])
            with self.alone() if hold else nullcontext():
                try:
                    return [given or self.time_lesson(check) for given, check in checked]
                finally:
                    self._unpark()  # the runs no timed phase took, stopped while the GPU is still ours
        finally:
            self._unpark()  # an error before the hold

    def grade_lesson(self, lesson: Lesson, program: str) -> LessonResult:
        """One lesson: its correctness, then its timed phases alone on the GPU."""
        return self.grade_lessons([(lesson, program, None)])[0]

    def check_lesson(self, lesson: Lesson, program: str) -> "LessonCheck":
        """A lesson's correctness: every task's tests, the check of its passes under compute-sanitizer,
        and racecheck for results that differ between runs. The plain tests of a task that compare
        timings (correctness_timed) are left for the hold of the GPU alone (time_lesson): run here,
        they would take a hold of their own, and every other grading on the GPU would wait for this
        one twice. Its check under compute-sanitizer runs here with the others' (LessonCheck.early);
        a racecheck follow-up of its results, rare, in that hold."""
        check = LessonCheck(lesson, program)
        started = time.monotonic()
        check.deferred = [t for t in lesson.tasks if self._compares_timings(t)]
        self._check_tasks(check, [t for t in lesson.tasks if t not in check.deferred], side_by_side=True)
        check.seconds = time.monotonic() - started
        return check

    def _check_tasks(self, check: "LessonCheck", tasks: list, side_by_side: bool) -> None:
        """check_lesson's steps for `tasks` of its lesson, their verdicts into `check`; with
        `side_by_side`, the tasks that share the GPU first in one process (_correctness_together)."""
        lesson, program = check.lesson, check.program
        wall, in_tests = check.wall, check.in_tests
        verdicts: Dict[int, ComponentResult] = check.verdicts
        elapsed: Dict[int, float] = {}
        codes = {task.id: self.code.of(lesson, task) if self.code else (skeleton.UNKNOWN, "")
                 for task in lesson.tasks}
        together = self._correctness_together(program, lesson, codes, wall, in_tests) if side_by_side else {}
        for task in tasks:
            self._say(f"  {lesson.slug} task {task.id}: ")
            phase = together.get(task.id)
            if phase is None:
                phase = self._correctness(program, lesson, task)
                wall["correctness"] += phase.elapsed_s
                in_tests["correctness"] += phase.in_tests_s
            elapsed[task.id] = phase.elapsed_s
            verdicts[task.id] = judge_correctness(task, phase, lesson.slug, *codes[task.id])
            self._say(f"correctness {STATUS_LABELS[verdicts[task.id].status]}")
            self._end_line()

        passed = [t for t in tasks if verdicts[t.id].passed]
        # Before the hold, the deferred tasks' check too, ahead of their plain tests (their seconds
        # unknown: the check's time limit is the other tasks', at least CHECK_START_S).
        early = check.deferred if side_by_side and self.check_passes else []
        for task in early:
            elapsed[task.id] = 0.0
        to_check = [t for t in passed if t.id not in check.early] + early
        outcomes: Dict[int, List[ToolOutcome]] = {}
        if self.check_passes and to_check:
            outcomes = self._sanitizer_check(program, lesson, to_check, elapsed, wall)
            check.early.update({t.id: outcomes[t.id] for t in early})
        outcomes.update({t.id: check.early[t.id] for t in passed if t.id in check.early})
        for task in passed:
            if task.id not in outcomes:
                continue
            verdicts[task.id] = confirm_correctness(task, verdicts[task.id], outcomes[task.id],
                                                    self.reproduce(lesson, task))
            if not verdicts[task.id].passed:
                print(f"  {lesson.slug} task {task.id}: correctness {STATUS_LABELS[verdicts[task.id].status]} "
                      f"({verdicts[task.id].summary})", flush=True)

        if not self.args.sanitize:
            for task in tasks:
                if races.results_differ(verdicts[task.id]):
                    verdicts[task.id] = self._results_differ(program, lesson, task, verdicts[task.id],
                                                             elapsed[task.id], wall)

    def time_lesson(self, check: "LessonCheck") -> LessonResult:
        """A checked lesson's timed phases, in a hold alone on the GPU (the caller's, or one of its
        own), and its results."""
        lesson, program, verdicts, wall, in_tests = check.lesson, check.program, check.verdicts, check.wall, check.in_tests
        started = time.monotonic()
        results = []
        with self.alone() if self.needs_hold(check) else nullcontext():
            if check.deferred:  # their tests compare timings: checked here, alone on the GPU
                self._check_tasks(check, check.deferred, side_by_side=False)
            timed_tasks = [task for task in lesson.tasks if self.times(task, verdicts[task.id])]
            together = (self._timed_together(program, lesson, timed_tasks, wall, in_tests)
                        if len(timed_tasks) > 1 else {})
            for task in lesson.tasks:
                correctness = verdicts[task.id]
                perf_phase = reference_phase = again = None
                others: list = []
                if self.times(task, correctness):
                    self._say(f"  {lesson.slug} task {task.id}: ")
                    if task.id in together:  # its seconds already counted in the lesson's run
                        perf_phase, reference_phase, others = together[task.id]
                        timed: list = []
                    else:
                        perf_phase, reference_phase, others = self._timed(program, lesson, task)
                        timed = [perf_phase, reference_phase]
                    if measure_again(task, perf_phase):  # timing noise must not decide the verdict
                        self._say("below the threshold: measuring again, ")
                        second, second_reference, more = self._timed(program, lesson, task, fresh=True)
                        again = (second, second_reference)
                        timed += [second, second_reference]
                        others = gpu_processes.others([others, more], [])
                    for i, run in enumerate(timed):
                        account_timed(wall, in_tests, ("performance", "reference")[i % 2], run)
                performance = judge_performance(task, correctness, perf_phase, lesson.slug, reference_phase, again)
                note_other_processes(performance, others)
                short = fell_short(task, performance)
                if (self.profile_short and counters_wanted(task, performance) and counters.PROFILED_BYTES in performance.metrics
                        and (short or self.profile_passes)):
                    self._counters(program, lesson, task, performance, wall, short=short)
                elif self.profile_short and not self.profile_passes and counters_wanted(task, performance) and not short:
                    self._no_counters(performance, False, "they are left out where the task passed "
                                                          "(--counters-when-short; ./grade alone shows them)")
                if perf_phase is not None and performance:
                    self._say(f"performance {STATUS_LABELS[performance.status]}")
                    self._end_line()
                results.append(TaskResult(task, correctness, performance))
        wall["total"] = check.seconds + time.monotonic() - started
        detail = {f"{k}_in_tests": v for k, v in in_tests.items()}
        return LessonResult(lesson, results, {k: round(v, 2) for k, v in wall.items()},
                            {k: round(v, 2) for k, v in detail.items()})


def compiled_code_names_mark(program: str) -> bool:
    """Whether the student's compiled lesson has sanitizer.GRADER_KERNEL_MARK in it: the static
    library that the grader program grade_<slug>__<tree> links, built beside it as
    libimpl_<slug>__<tree>.a (cmake/Workbook.cmake), whose symbols name every kernel in it. False
    where there is no such library to read."""
    folder, name = os.path.split(program)
    if not name.startswith("grade_"):
        return False
    try:
        built = Path(folder, "libimpl_" + name[len("grade_"):] + ".a").read_bytes()
    except OSError:
        return False
    return sanitizer.GRADER_KERNEL_MARK.encode() in built


class CodeState:
    """Whether each task's code in the graded tree is still the skeleton (skeleton.py), and
    where that code is, as the student would name it."""

    def __init__(self, root: Path, tree_dir: Path):
        self.tree_dir, self.skeletons = tree_dir, skeleton.load(root)
        try:  # exercises/... for the student's own tree, wherever ./grade runs from
            self.shown = str(Path(tree_dir).resolve().relative_to(Path(root).resolve()))
        except ValueError:
            self.shown = str(tree_dir)

    def of(self, lesson: Lesson, task) -> Tuple[str, str]:
        """The task's state, and "function in path/to/file.cu" for the verdict."""
        known = self.skeletons.get(lesson.slug, {}).get(str(task.id), {})
        path = os.path.join(self.shown, lesson.slug, known.get("file") or lesson.sources[0])
        return (skeleton.state(self.skeletons, self.tree_dir, lesson.slug, task.id),
                f"{known['function']} in {path}" if known.get("function") else path)

    def names_grader_kernels(self, lesson: Lesson) -> bool:
        """Whether the lesson's sources in the graded tree name sanitizer.GRADER_KERNEL_MARK (or
        cannot be read): then the tools check the grader's kernels too, since a kernel of the
        student's so named would otherwise go unchecked."""
        for source in lesson.sources:
            try:
                text = (Path(self.tree_dir) / lesson.slug / source).read_text(errors="replace")
            except FileNotFoundError:
                continue  # a file not handed in: nothing of the student's to hide
            except OSError:
                return True
            if sanitizer.GRADER_KERNEL_MARK in text:
                return True
        return False


def build_lessons(build_dir: Path, lessons: List[Lesson], tree: str, tree_dir: Path, programs: Dict[str, str],
                  reference: Optional[Dict[str, str]]) -> Dict[str, str]:
    """Builds each lesson's grader program and the reference's, all in one run of the build tool;
    returns the compiler's first errors of the lessons that do not compile. A reference that does
    not build is dropped."""
    wanted = [(lesson.slug, build.grader_target(lesson.slug, tree), False) for lesson in lessons
              if lesson.slug in programs]
    wanted += [(slug, build.grader_target(slug, "solutions"), True) for slug, _, _ in list(wanted)
               if reference and slug in reference]
    if not wanted:
        return {}
    slugs = [slug for slug, _, is_reference in wanted if not is_reference]
    print(f"Building {', '.join(slugs)} from {tree_dir} ...", flush=True)
    if build.build_targets(build_dir, [target for _, target, _ in wanted]):
        return {}
    # Something did not compile: each target again on its own, for its own errors (a target that
    # built is up to date, and its build returns at once).
    compile_failures: Dict[str, str] = {}
    for slug, target, is_reference in wanted:
        ok, log = build.build_target(build_dir, target)
        if ok:
            continue
        if is_reference:
            reference.pop(slug, None)
        else:
            compile_failures[slug] = build.first_errors(log)
    return compile_failures


def unbuilt_lessons(build_dir: Path, lessons: List[Lesson], tree: str, programs: Dict[str, str],
                    reference: Optional[Dict[str, str]]) -> Dict[str, str]:
    """With --no-build (./grade-class built every submission first): a lesson whose program is
    not there did not compile. The compiler's errors are in the log the class build saved
    (build.error_log_path), when it did. A reference that was not built is dropped."""
    failures: Dict[str, str] = {}
    for lesson in lessons:
        if lesson.slug in programs and not Path(programs[lesson.slug]).is_file():
            log = build.error_log_path(build_dir, tree, lesson.slug)
            failures[lesson.slug] = (log.read_text(errors="replace") if log.is_file() else
                                     f"{programs[lesson.slug]} was not built; build it, or run ./grade without "
                                     "--no-build to see the compiler's errors.")
        if reference and lesson.slug in reference and not Path(reference[lesson.slug]).is_file():
            reference.pop(lesson.slug)
    return failures


def progress_file(root: Path, tree_dir: Path, results: Optional[str] = None) -> Path:
    """Where a tree's progress (verdicts, hints seen) is kept: beside its reports."""
    return Path(results or results_dir(root, build.tree_name(root, tree_dir))) / progress.FILE_NAME


def show_hint(root: Path, tree_dir: Path, selector: str, results: Optional[str] = None) -> int:
    """./grade --hint 03.2: the task's next hint, remembered."""
    try:
        chosen = select_lessons(load_manifest(root / "lessons" / "manifest.json"), [selector])
    except ManifestError as e:
        print(f"grade: {e}", file=sys.stderr)
        return EXIT_USAGE
    lesson = chosen[0]
    if "." not in selector or len(lesson.tasks) != 1:
        print(f"grade: --hint needs one task, as LESSON.TASK (for example {lesson.slug[:2]}.1); lesson "
              f"{lesson.slug} has tasks {', '.join(str(t.id) for t in lesson.tasks)}.", file=sys.stderr)
        return EXIT_USAGE
    task = lesson.tasks[0]
    state = progress.Progress(progress_file(root, tree_dir, results))
    if state.problem:
        print(state.problem)
    if not task.hints:
        print(f"Lesson {lesson.slug} task {task.id} has no hints; its lesson text is the help.")
        return EXIT_OK
    before = state.hints_seen.get(progress.task_key(lesson, task), 0)
    number, text = state.next_hint(lesson, task)
    print(f"{lesson.slug} · Task {task.id}: {task.title}")
    for earlier in range(1, number):
        print(f"  Hint {earlier} (seen): {task.hints[earlier - 1]}")
    last = " (the last one)" if number == len(task.hints) else ""
    again = ", again" if before >= number else ""
    print(f"  Hint {number} of {len(task.hints)}{last}{again}: {text}")
    if number < len(task.hints):
        print(f"More: ./grade --hint {progress.task_key(lesson, task)}")
    state.save()
    return EXIT_OK


def watch(argv: List[str], root: Path, lessons: List[Lesson], tree_dir: Path, poll_s: float = 1.0) -> int:
    """Grades, then grades again whenever a graded lesson's exercise file changes."""
    files = [tree_dir / lesson.slug / source for lesson in lessons for source in lesson.sources]
    rest = [a for a in argv if a != "--watch"]

    def stamps():
        return [f.stat().st_mtime_ns if f.exists() else None for f in files]

    try:
        while True:
            seen = stamps()
            main(rest, root)
            print(f"\nWatching {', '.join(os.path.relpath(f) for f in files)}: save to grade again, Ctrl-C to stop.",
                  flush=True)
            while stamps() == seen:
                time.sleep(poll_s)
            time.sleep(0.3)  # an editor may write a file in more than one step
            print(f"\n{'=' * 30} a file changed: grading again {'=' * 30}\n", flush=True)
    except KeyboardInterrupt:
        print("\nStopped watching.")
        return EXIT_OK


def main(argv: Optional[List[str]] = None, root: Optional[Path] = None) -> int:
    root = Path(root or Path(__file__).resolve().parents[2])
    argv = sys.argv[1:] if argv is None else argv
    exit_on_sigterm()
    args = parse_args(argv, root)
    try:
        lessons = select_lessons(load_manifest(root / "lessons" / "manifest.json"), args.lessons)
    except ManifestError as e:
        print(f"grade: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.list:
        print(list_lessons(lessons))
        return EXIT_OK

    tree_dir = resolve_tree(root, args.tree)
    if not tree_dir.is_dir():
        print(f"grade: there is no directory {args.tree!r} to grade. Give --tree a directory laid out like "
              f"exercises/ (one folder per lesson, e.g. 01_vector_add/).", file=sys.stderr)
        return EXIT_USAGE
    if args.hint:
        return show_hint(root, tree_dir, args.hint, args.results)
    if args.progress:
        state = progress.Progress(progress_file(root, tree_dir, args.results))
        print(progress.format_progress(lessons, state, os.path.relpath(tree_dir)))
        return EXIT_OK
    if args.watch:
        return watch(argv, root, lessons, tree_dir)

    build_dir = Path(args.build_dir).resolve()
    # Configuring and building hold the build directory's lock (another ./grade may share it);
    # grading happens after, outside it.
    try:
        with build.locked(build_dir, build.tree_name(root, tree_dir)) if not args.no_build else nullcontext():
            index, tree = build.prepare(root, build_dir, tree_dir, args.no_build)
            programs = build.programs(index, tree)
            reference = build.programs(index, "solutions") if tree != "solutions" else None
            compile_failures = (unbuilt_lessons(build_dir, lessons, tree, programs, reference) if args.no_build
                                else build_lessons(build_dir, lessons, tree, tree_dir, programs, reference))
    except build.BuildError as e:
        print(f"grade: {e}", file=sys.stderr)
        return EXIT_BUILD

    try:
        return grade_on_device(args, root, lessons, tree_dir, build_dir, index, tree, programs, reference,
                               compile_failures)
    except LockError as e:
        print(f"grade: {e}", file=sys.stderr)
        return EXIT_BUILD


def cannot_grade(lesson: Lesson, tree_dir: Path, programs: Dict[str, str],
                 compile_failures: Dict[str, str]) -> Optional[LessonResult]:
    """The lesson's verdict when it cannot be graded at all (it does not compile, or the tree
    has no folder for it); None when it can."""
    if lesson.slug in compile_failures:
        return lesson_not_gradable(lesson, COMPILE_ERROR, "does not compile",
                                   f"The compiler's first errors:\n{compile_failures[lesson.slug]}")
    if lesson.slug not in programs:
        return lesson_not_gradable(lesson, MISSING, f"no {lesson.slug}/ in {tree_dir}",
                                   f"{tree_dir} has no folder {lesson.slug}/ with {', '.join(lesson.sources)}.")
    return None


def remember(root: Path, tree_dir: Path, run: GradeRun, results: Optional[str] = None) -> List[str]:
    """Records the run's verdicts in the tree's progress file; returns the hints its failed
    tasks show. A progress file that cannot be written costs the hints, never the grading."""
    try:
        state = progress.Progress(progress_file(root, tree_dir, results))
        state.record(run)
        lines = progress.help_lines(run, state)
        state.save()
    except OSError as e:
        return ["", f"(Progress not saved: {e})"]
    return ([state.problem] if state.problem else []) + lines


def grade_on_device(args, root, lessons, tree_dir, build_dir, index, tree, programs, reference,
                    compile_failures) -> int:
    """Everything after the build: the device query, the grading, the reports."""
    device_query = device_facts(index)
    if device_query.returncode != 0:
        reason = device_query.stderr.decode(errors="replace").strip() or "the GPU could not be queried."
        built = [l.slug for l in lessons if l.slug in programs and l.slug not in compile_failures]
        if built:
            print(f"Compiled: {', '.join(built)}.")
        for slug, errors in compile_failures.items():
            print(f"{slug} does not compile:\n{errors}")
        no_gpu = device_query.returncode == EXIT_NO_GPU
        print(f"Nothing was graded. {reason}" + (" The grader needs an NVIDIA GPU with its driver." if no_gpu else ""))
        # An LMS still gets its files: every task with the reason it was not run.
        not_run = f"not run: {reason}"
        results = [cannot_grade(lesson, tree_dir, programs, compile_failures)
                   or lesson_not_gradable(lesson, SKIPPED, not_run.splitlines()[0], not_run) for lesson in lessons]
        run = GradeRun(tree=str(tree_dir), seed=args.seed or 0, device={}, lessons=results, sanitize=args.sanitize)
        remember(root, tree_dir, run, args.results)
        paths = write_reports(run, args.results or results_dir(root, tree))
        print(f"Wrote {' and '.join(paths)}.")
        if not no_gpu:
            return EXIT_BUILD
        return EXIT_NO_GPU_NOR_COMPILE if compile_failures else EXIT_NO_GPU
    device = json.loads(device_query.stdout)

    seed = args.seed or random.randrange(1, 2**31)
    print(f"Grading {tree_dir} with seed {seed} on {device.get('name')}", flush=True)
    grader = Grader(args, index, reference, device, seed, tree, code=CodeState(root, tree_dir))
    for note in grader.notes:
        print(note, flush=True)
    # Every lesson's correctness, then all the timed phases in one hold of the GPU alone.
    lesson_results = grader.grade_lessons([(lesson, programs.get(lesson.slug),
                                            cannot_grade(lesson, tree_dir, programs, compile_failures))
                                           for lesson in lessons])

    run = GradeRun(tree=str(tree_dir), seed=seed, device=device, lessons=lesson_results, sanitize=args.sanitize,
                   notes=grader.notes, nvidia_smi_s=round(grader.nvidia_smi_s, 2),
                   parked=dict(grader.parked_counts) if grader.park_timed else {},
                   gpu_lock_s={mode: {k: round(v, 2) for k, v in spent.items()} for mode, spent in lock_seconds().items()})
    print()
    print(format_scoreboard(run))
    for line in remember(root, tree_dir, run, args.results):
        print(line)
    paths = write_reports(run, args.results or results_dir(root, tree))
    shown = [os.path.relpath(p) if not os.path.relpath(p).startswith("..") else p for p in paths]
    print(f"\nWrote {' and '.join(shown)}. Reproduce this run: ./grade --seed {seed}"
          + (f" --tree {args.tree}" if args.tree != "exercises" else "")
          + "".join(f" {l}" for l in args.lessons))
    return EXIT_OK if run.all_passed else EXIT_NOT_ALL_PASSED
