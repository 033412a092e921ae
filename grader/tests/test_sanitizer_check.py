"""The check of a pass under compute-sanitizer (issue 21), without a GPU: compute-sanitizer's reports
read from canned outputs, the command line per tool, where the sanitizer is found, the verdicts, and
the driver's flow with a stand-in for the process runner (the check runs only after a pass, one
process per tool for the tasks that name it; a finding fails the task and its performance is not
timed; a run out of time or a missing sanitizer fails nothing)."""
import contextlib
import dataclasses
import io
import json
import os
import re
import sys
import stat
import tempfile
import threading
import textwrap
import unittest
from argparse import Namespace
from pathlib import Path
from unittest import mock

from helpers import phase  # also puts the driver on sys.path
from driver import cli, gpu_lock, runner, sanitizer, scoring, skeleton
from driver.manifest import load_manifest, parse_manifest
from driver.reports import format_scoreboard, gradescope_results, junit_xml
from driver.runner import PhaseResult, parse_sanitizer_output
from test_runner import SIGNING_PROGRAM

# ---- compute-sanitizer's output, as it prints it ----
# Shapes taken from compute-sanitizer 2025.x runs (the "at function+offset in file:line" form of
# 2023 on, "Access to ... is out of bounds", thousands separators in sizes, the summary line that
# repeats itself with the count not printed) and from older releases (the "at 0x.. in file:line:
# function" form, "Address ... is out of bounds", racecheck's "ERROR:"). The program's own output
# comes in between, as it does when both write to one pipe.

MEMCHECK_OUT_OF_BOUNDS = """\
========= COMPUTE-SANITIZER
Randomness seeded to: 1234
========= Invalid __global__ read of size 4 bytes
=========     at vector_add(const float *, const float *, float *, int)+0x70 in /home/student/workbook/exercises/01_vector_add/vector_add.cu:12
=========     by thread (40,0,0) in block (3,0,0)
=========     Access to 0x7f1c4a0003e8 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f1c4a000000 of size 1,000 bytes
========= 
========= Invalid __global__ read of size 4 bytes
=========     at vector_add(const float *, const float *, float *, int)+0x70 in /home/student/workbook/exercises/01_vector_add/vector_add.cu:12
=========     by thread (41,0,0) in block (3,0,0)
=========     Access to 0x7f1c4a0003ec is out of bounds
=========     and is 5 bytes after the nearest allocation at 0x7f1c4a000000 of size 1,000 bytes
========= 
===============================================================================
All tests passed (12 assertions in 2 test cases)

========= ERROR SUMMARY: 24 errors
========= ERROR SUMMARY: 14 errors were not printed. Use --print-limit option to adjust the number of printed errors
"""

# A kernel of the lesson reading a cudaMallocAsync temporary after its cudaFreeAsync in stream order
# (--track-stream-ordered-races all). The first three lines have memcheck's usual shape; the wording
# of the last one is ours (the parser keeps it as printed and depends on none of it).
MEMCHECK_STREAM_ORDERED = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at <unnamed>::smooth_kernel(const float *, float *, unsigned long)+0x110 in /home/student/workbook/lessons/05_streams/kernels.cu:27
=========     by thread (0,0,0) in block (0,0,0)
=========     Access to 0x7f2a5c000000 is a use-after-free of a stream-ordered allocation
========= 
========= ERROR SUMMARY: 64 errors
"""

# The same error from a release before 2023, and without -lineinfo.
MEMCHECK_OLD_FORM = """\
========= CUDA-MEMCHECK
========= Invalid __global__ write of size 4 bytes
=========     at 0x00000780 in /home/student/workbook/exercises/01_vector_add/vector_add.cu:13:vector_add(float const *, float const *, float*, int)
=========     by thread (64,0,0) in block (2,0,0)
=========     Address 0x7f8a01200000 is out of bounds
========= ERROR SUMMARY: 1 error
"""
MEMCHECK_NO_LINEINFO = """\
========= Invalid __global__ write of size 4 bytes
=========     at transform_batches_kernel(float *, unsigned long)+0x90
=========     by thread (255,0,0) in block (1,0,0)
=========     Access to 0x7f2a5c001000 is out of bounds
========= ERROR SUMMARY: 3 errors
"""
# A long line that the sanitizer wrapped: the location on a line of its own.
MEMCHECK_WRAPPED = """\
========= Invalid __global__ write of size 8 bytes
=========     at reduce_sum_kernel_with_a_very_long_name+0xca0
=========        in reduction.cu:379
=========     Access to 0x155097f5db68 is out of bounds
========= ERROR SUMMARY: 1 error
"""

RACECHECK = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at matmul_tiled(const float *, const float *, float *, int, int, int)+0x2a0 in /home/student/workbook/exercises/03_matmul/matmul.cu:41
=========     and Read access at matmul_tiled(const float *, const float *, float *, int, int, int)+0x3c0 in /home/student/workbook/exercises/03_matmul/matmul.cu:47 [1024 hazards]
========= 
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
RACECHECK_OLD_FORM = """\
========= ERROR: Race reported between Write access at 0x00000460 in /src/matmul.cu:41:matmul_tiled(float const *, float const *, float*, int, int, int)
=========     and Read access at 0x000007a0 in /src/matmul.cu:47:matmul_tiled(float const *, float const *, float*, int, int, int) [508 hazards]
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
RACECHECK_WARNING_ONLY = """\
========= Warning: Race reported between Write access at reduce_block(const float *, float *, int)+0x150 in reduction.cu:20
=========     and Write access at reduce_block(const float *, float *, int)+0x150 in reduction.cu:20 [32 hazards]
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
"""

SYNCCHECK = """\
========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in warp
=========     at reduce_block(const float *, float *, int)+0x1d0 in /home/student/workbook/exercises/04_reduction/reduction.cu:33
=========     by thread (0,0,0) in block (0,0,0)
========= 
========= ERROR SUMMARY: 1 error
"""

# What memcheck prints after a kernel it stopped, and what the tool says about itself: no report
# of the student's code among them.
NOT_REPORTS = """\
========= COMPUTE-SANITIZER
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaDeviceSynchronize.
=========     Saved host backtrace up to driver entry point at error
========= 
========= Error: Target application terminated before first instrumented API call
========= Tracking kernels launched by child processes requires the --target-processes all option.
========= Target application returned an error
========= ERROR SUMMARY: 0 errors
"""

CLEAN = "========= COMPUTE-SANITIZER\nAll tests passed\n========= ERROR SUMMARY: 0 errors\n"


def read(text):
    result = PhaseResult()
    parse_sanitizer_output(text, result)
    return result


class ReportReadingTest(unittest.TestCase):
    def test_an_out_of_bounds_read_gives_its_kind_kernel_and_line(self):
        r = read(MEMCHECK_OUT_OF_BOUNDS)
        self.assertEqual(r.sanitizer_errors, 24)  # not the 14 of the print-limit line
        first = r.sanitizer_reports[0]
        self.assertEqual(first.kind, "Invalid __global__ read of size 4 bytes")
        self.assertEqual(first.kernel, "vector_add")
        self.assertEqual(first.location, "/home/student/workbook/exercises/01_vector_add/vector_add.cu:12")
        self.assertEqual(first.short(), "Invalid __global__ read of size 4 bytes in vector_add (vector_add.cu:12)")
        self.assertIn("by thread (40,0,0) in block (3,0,0)", first.lines)
        self.assertIn("Access to 0x7f1c4a0003e8 is out of bounds", first.lines)
        self.assertEqual(len(r.sanitizer_reports), 2)  # each report ends at its blank line
        self.assertNotIn("All tests passed", first.quote())
        self.assertFalse([f for f in r.sanitizer_findings if f.startswith("=")])  # Catch2's separator line

    def test_a_stream_ordered_report_keeps_its_lines_as_printed(self):
        first = read(MEMCHECK_STREAM_ORDERED).sanitizer_reports[0]
        self.assertEqual(first.kernel, "smooth_kernel")  # the anonymous namespace and parameters left out
        self.assertTrue(first.location.endswith("lessons/05_streams/kernels.cu:27"))
        self.assertIn("Access to 0x7f2a5c000000 is a use-after-free of a stream-ordered allocation", first.quote())

    def test_the_older_form_and_code_without_lineinfo(self):
        old = read(MEMCHECK_OLD_FORM).sanitizer_reports[0]
        self.assertEqual((old.kernel, os.path.basename(old.location)), ("vector_add", "vector_add.cu:13"))
        self.assertIn("Address 0x7f8a01200000 is out of bounds", old.lines)
        bare = read(MEMCHECK_NO_LINEINFO).sanitizer_reports[0]
        self.assertEqual((bare.kernel, bare.location), ("transform_batches_kernel", ""))
        self.assertEqual(bare.short(), "Invalid __global__ write of size 4 bytes in transform_batches_kernel")
        wrapped = read(MEMCHECK_WRAPPED).sanitizer_reports[0]
        self.assertEqual((wrapped.kernel, wrapped.location), ("reduce_sum_kernel_with_a_very_long_name",
                                                              "reduction.cu:379"))

    def test_a_race_names_both_accesses(self):
        for text in (RACECHECK, RACECHECK_OLD_FORM):
            r = read(text)
            self.assertEqual(r.sanitizer_errors, 1)
            race = r.sanitizer_reports[0]
            self.assertEqual(race.headline, "Race reported between Write access and Read access")
            self.assertEqual(race.kernel, "matmul_tiled")
            self.assertEqual(os.path.basename(race.location), "matmul.cu:41")
            self.assertIn("matmul.cu:47", race.quote())

    def test_racecheck_warnings_are_not_errors(self):
        r = read(RACECHECK_WARNING_ONLY)
        self.assertEqual((r.sanitizer_errors, r.sanitizer_reports), (0, []))

    def test_a_barrier_error(self):
        first = read(SYNCCHECK).sanitizer_reports[0]
        self.assertEqual(first.short(), "Barrier error detected. Divergent thread(s) in warp in reduce_block "
                                        "(reduction.cu:33)")

    def test_api_errors_and_the_tools_own_lines_are_not_reports(self):
        self.assertEqual(read(NOT_REPORTS).sanitizer_reports, [])
        self.assertEqual(read(CLEAN).sanitizer_reports, [])

    def test_function_names_lose_their_parameters_only(self):
        self.assertEqual(sanitizer.function_name("void reduce<256>(const float *, float *)"), "void reduce<256>")
        self.assertEqual(sanitizer.function_name("(anonymous namespace)::smooth_kernel(const float *, float *)"),
                         "smooth_kernel")
        self.assertEqual(sanitizer.function_name("ns::k(void (*)(int), int)"), "ns::k")
        self.assertEqual(sanitizer.function_name("kernel"), "kernel")


class CommandTest(unittest.TestCase):
    def test_memcheck_tracks_stream_ordered_allocations(self):
        command = sanitizer.command("/cuda/bin/compute-sanitizer", "memcheck")
        self.assertEqual(command[:3], ["/cuda/bin/compute-sanitizer", "--tool", "memcheck"])
        self.assertIn("--track-stream-ordered-races all", " ".join(command))
        # Allocations padded: a read just past an array of a multiple of 512 bytes is reported.
        self.assertIn("--padding 512", " ".join(command))
        self.assertIn(f"--error-exitcode {sanitizer.ERROR_EXIT_CODE}", " ".join(command))
        self.assertNotIn("--report-api-errors", command)  # ./grade --sanitize shows API errors as before
        self.assertNotIn("--leak-check", command)

    def test_the_check_leaves_api_errors_out_and_other_tools_have_no_memcheck_flags(self):
        check = sanitizer.command("cs", "memcheck", check=True)
        self.assertIn("--report-api-errors no", " ".join(check))
        self.assertNotIn("--leak-check", check)
        racecheck = sanitizer.command("cs", "racecheck", check=True)
        self.assertEqual(racecheck[1:3], ["--tool", "racecheck"])
        self.assertNotIn("--track-stream-ordered-races", racecheck)

    def test_the_graders_own_kernels_go_unchecked_but_by_initcheck(self):
        with tempfile.TemporaryDirectory() as tmp:
            # A compute-sanitizer whose --help lists the option of 2023.3 and later.
            cs = helped(Path(tmp) / "compute-sanitizer", "  --kernel-name-exclude <filter>   Kernels not to check.")
            exclude = f"--kernel-name-exclude kns={sanitizer.GRADER_KERNEL_MARK}"
            for tool in ("memcheck", "racecheck", "synccheck"):
                for check in (True, False):
                    self.assertIn(exclude, " ".join(sanitizer.command(cs, tool, check=check)), tool)
                # The student's code names the mark: every kernel is checked.
                self.assertNotIn("--kernel-name-exclude", sanitizer.command(cs, tool, check=True, grader_kernels=True))
            # initcheck would take a buffer an unchecked kernel wrote for one never written.
            self.assertNotIn("--kernel-name-exclude", sanitizer.command(cs, "initcheck", check=True))

    def test_an_older_sanitizer_gets_its_own_option_and_one_without_either_checks_every_kernel(self):
        with tempfile.TemporaryDirectory() as tmp:
            old = helped(Path(tmp) / "old", "  --kernel-regex-exclude <filter>")
            self.assertIn(f"--kernel-regex-exclude kns={sanitizer.GRADER_KERNEL_MARK}",
                          " ".join(sanitizer.command(old, "memcheck", check=True)))
            # Both listed: the newer name.
            both = helped(Path(tmp) / "both", "  --kernel-name-exclude <f>\n  --kernel-regex-exclude <f> (deprecated)")
            self.assertEqual(sanitizer.kernel_exclude_option(both), "--kernel-name-exclude")
            for neither in (helped(Path(tmp) / "neither", "  --tool <name>"), str(Path(tmp) / "missing")):
                self.assertIsNone(sanitizer.kernel_exclude_option(neither))
                self.assertFalse(any("exclude" in word for word in sanitizer.command(neither, "memcheck", check=True)))


def helped(path: Path, help_text: str) -> str:
    """A stand-in compute-sanitizer that prints help_text for --help (with the shell's builtins
    alone: a test may leave nothing on PATH)."""
    assert "'" not in help_text
    path.write_text("#!/bin/sh\n" + "".join(f"printf '%s\\n' '{line}'\n" for line in help_text.splitlines()))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


class GraderKernelMarkTest(unittest.TestCase):
    """Only the grader's kernels carry the mark the tools leave unchecked: no lesson, exercise or
    solution names it, so every kernel a student calls or writes is checked."""

    def test_no_kernel_a_student_writes_or_calls_carries_the_mark(self):
        root = Path(__file__).resolve().parents[2]
        for folder in ("exercises", "solutions", "lessons"):
            for path in (root / folder).rglob("*"):
                if path.is_file() and path.suffix in (".cu", ".cuh", ".hpp", ".h", ".cpp"):
                    self.assertNotIn(sanitizer.GRADER_KERNEL_MARK, path.read_text(errors="replace"), str(path))

    def test_the_grader_checks_its_own_kernels_where_a_students_file_names_the_mark(self):
        lesson = load_manifest(Path(__file__).resolve().parents[2] / "lessons" / "manifest.json")[0]
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "tree"
            (tree / lesson.slug).mkdir(parents=True)
            code = cli.CodeState(Path(tmp), tree)
            self.assertFalse(code.names_grader_kernels(lesson))  # nothing handed in
            (tree / lesson.slug / lesson.sources[0]).write_text("__global__ void k(float* x) { x[0] = 1; }\n")
            self.assertFalse(code.names_grader_kernels(lesson))
            (tree / lesson.slug / lesson.sources[0]).write_text(
                f"__global__ void {sanitizer.GRADER_KERNEL_MARK}k(float* x) {{ x[0] = 1; }}\n")
            self.assertTrue(code.names_grader_kernels(lesson))


def executable(path: Path) -> str:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


class FindSanitizerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        (self.dir / "bin").mkdir()
        (self.dir / "empty").mkdir()

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_recorded_one_first_then_the_path(self):
        recorded = executable(self.dir / "compute-sanitizer")
        on_path = executable(self.dir / "bin" / "compute-sanitizer")
        with mock.patch.dict(os.environ, {"PATH": str(self.dir / "bin")}):
            self.assertEqual(sanitizer.find_sanitizer({"compute_sanitizer": recorded}), (recorded, ""))
            self.assertEqual(sanitizer.find_sanitizer({"compute_sanitizer": ""}), (on_path, ""))
            self.assertEqual(sanitizer.find_sanitizer({"compute_sanitizer": "/gone/compute-sanitizer"}),
                             (on_path, ""))

    def test_none_says_where_it_looked(self):
        with mock.patch.dict(os.environ, {"PATH": str(self.dir / "empty")}):
            path, why = sanitizer.find_sanitizer({"compute_sanitizer": ""})
            self.assertIsNone(path)
            self.assertEqual(why, "the build found none beside nvcc, and there is none on PATH")
            path, why = sanitizer.find_sanitizer({"compute_sanitizer": "/gone/compute-sanitizer"})
            self.assertIn("the build recorded /gone/compute-sanitizer, which is not there", why)


# ---- Verdicts ----

LESSON = {"lessons": [{
    "slug": "04_reduction", "title": "Reduction", "sources": ["reduction.cu"], "timeout_s": 30,
    "sanitizers": ["memcheck"],
    "tasks": [
        {"id": 1, "title": "block", "points": {"correctness": 4}, "sanitizers": ["memcheck", "racecheck"]},
        {"id": 2, "title": "sum", "points": {"correctness": 4, "performance": 3},
         "performance": {"metric": "fraction_of_copy_bandwidth", "threshold": 0.5}},
        {"id": 3, "title": "norm", "points": {"correctness": 3}},
    ]}]}


def the_lesson():
    return parse_manifest(LESSON)[0]


def passing(*task_ids, **fields):
    """A run of the tasks' tests that ran to its end, every test passed."""
    result = PhaseResult(run_completed=True, **fields)
    for task_id in task_ids:
        result.records.append({"event": "end", "test": f"test of task {task_id}", "tags": [f"task_{task_id}"],
                               "outcome": "passed", "messages": [], "metrics": {}})
    return result


def timed_pass(call) -> PhaseResult:
    """A timed run of the call's tasks in which each passed, the first at 0.9 of the copy bandwidth."""
    result = passing(*call["tasks"], elapsed_s=3.0)
    result.records[0]["metrics"] = {"fraction_of_copy_bandwidth": 0.9}
    return result


def all_clean(call) -> PhaseResult:
    """Every run passes: the plain tests (correctness_of), the checks (5 s) and the timing (timed_pass)."""
    if call["perf"]:
        return timed_pass(call)
    return correctness_of(call) if not call["tool"] else passing(*call["tasks"], elapsed_s=5.0)


def sanitized(result: PhaseResult, text: str) -> PhaseResult:
    parse_sanitizer_output(text, result)
    return result


CORRECT = scoring.ComponentResult("correctness", scoring.PASSED, 4, 4, "correct")
REPRODUCE = "./grade --sanitize --seed 7 04.2"


class VerdictTest(unittest.TestCase):
    def setUp(self):
        self.task = the_lesson().tasks[1]

    def outcome(self, tool, result, limit=140.0):
        return scoring.sanitizer_outcome(self.task, scoring.SanitizerRun(tool, [self.task.id], result, limit))

    def test_a_finding_fails_the_task_quoting_the_first_report(self):
        result = sanitized(passing(2, returncode=sanitizer.ERROR_EXIT_CODE, elapsed_s=9.5), MEMCHECK_STREAM_ORDERED)
        outcome = self.outcome("memcheck", result)
        self.assertEqual(outcome.outcome, scoring.CHECK_FINDING)
        r = scoring.confirm_correctness(self.task, CORRECT, [outcome], REPRODUCE)
        self.assertEqual((r.status, r.score, r.max_score), (scoring.FAILED, 0, 4))
        self.assertEqual(r.summary,
                         "memcheck: Invalid __global__ read of size 4 bytes in smooth_kernel (kernels.cu:27)")
        self.assertIn("compute-sanitizer --tool memcheck", r.details)
        self.assertIn("64 error(s)", r.details)
        self.assertIn("  Invalid __global__ read of size 4 bytes\n    at <unnamed>::smooth_kernel(", r.details)
        self.assertIn("This is what the sanitizer saw", r.details)
        self.assertIn(f"Reproduce: {REPRODUCE}", r.details)
        self.assertNotIn("Hint [", r.details)  # the report is the evidence; no cause is claimed
        check = r.extra_data["sanitizer_check"]
        self.assertEqual(check["status"], "failed")
        self.assertEqual(check["first_report"]["kernel"], "smooth_kernel")
        self.assertEqual(check["runs"], [{"tool": "memcheck", "tasks": [2], "outcome": "finding", "wall_s": 9.5,
                                          "limit_s": 140.0}])

    def test_a_finding_is_one_even_when_the_run_was_stopped_before_its_summary(self):
        stopped = sanitized(PhaseResult(timed_out=True), MEMCHECK_OUT_OF_BOUNDS.split("===============")[0])
        self.assertEqual(stopped.sanitizer_errors, 0)
        self.assertEqual(self.outcome("memcheck", stopped).outcome, scoring.CHECK_FINDING)
        by_status = PhaseResult(returncode=sanitizer.ERROR_EXIT_CODE)
        outcome = self.outcome("memcheck", by_status)
        self.assertEqual(outcome.outcome, scoring.CHECK_FINDING)
        r = scoring.confirm_correctness(self.task, CORRECT, [outcome], REPRODUCE)
        self.assertEqual(r.summary, "memcheck found 1 error(s)")
        self.assertIn("could not be read here (exit status 86)", r.details)

    def test_clean_tools_confirm_the_pass(self):
        outcomes = [self.outcome("memcheck", sanitized(passing(2), CLEAN)),
                    self.outcome("racecheck", sanitized(passing(2), RACECHECK_WARNING_ONLY))]
        self.assertEqual([o.outcome for o in outcomes], [scoring.CHECK_CLEAN] * 2)
        r = scoring.confirm_correctness(self.task, CORRECT, outcomes, REPRODUCE)
        self.assertEqual((r.status, r.score), (scoring.PASSED, 4))
        self.assertEqual(r.summary, "correct, confirmed by memcheck and racecheck")
        self.assertEqual(r.details, "")
        self.assertEqual(r.extra_data["sanitizer_check"]["status"], "confirmed")

    def test_a_check_out_of_time_leaves_the_pass_standing_and_says_so(self):
        timed_out = self.outcome("memcheck", PhaseResult(timed_out=True, timeout_s=140.0), limit=140.0)
        self.assertEqual(timed_out.outcome, scoring.CHECK_TIMED_OUT)
        r = scoring.confirm_correctness(self.task, CORRECT, [timed_out], REPRODUCE)
        self.assertEqual((r.status, r.score), (scoring.PASSED, 4))
        self.assertEqual(r.summary, "correct; not confirmed: memcheck did not finish within 140 s")
        self.assertIn("stopped at its time limit of 140 s", r.details)
        self.assertIn("The pass stands", r.details)
        self.assertIn(REPRODUCE, r.details)
        self.assertEqual(r.extra_data["sanitizer_check"]["status"], "not confirmed")

    def test_a_run_that_went_wrong_without_a_finding_is_not_confirmed_but_not_failed(self):
        failed_test = passing(returncode=42)
        failed_test.records.append({"event": "end", "test": "t", "tags": ["task_2"], "outcome": "failed",
                                    "messages": ["3 of 100 elements are wrong"], "metrics": {}})
        crashed = PhaseResult(unfinished_test="test of task 2", returncode=-11)
        ended_early = PhaseResult(authenticated=True, returncode=0)  # e.g. the sanitizer could not start it
        no_key = PhaseResult(authenticated=True, forged_lines=3, key_problem="the pipe was empty", run_completed=True)
        skipped = passing()
        skipped.records.append({"event": "end", "test": "t", "tags": ["task_2"], "outcome": "skipped",
                                "messages": [], "metrics": {}})
        for result, short in [(failed_test, "a test failed under memcheck"),
                              (crashed, "memcheck did not finish its run (killed by SIGSEGV)"),
                              (ended_early, "memcheck did not finish its run (exit status 0)"),
                              (no_key, "the grader program found no key under memcheck"),
                              (skipped, "no test of the task passed under memcheck"),
                              (passing(1), "no test of the task passed under memcheck")]:  # another task's only
            outcome = self.outcome("memcheck", result)
            self.assertEqual((outcome.outcome, outcome.short), (scoring.CHECK_NOT_FINISHED, short))
            r = scoring.confirm_correctness(self.task, CORRECT, [self.outcome("racecheck", passing(2)), outcome],
                                            REPRODUCE)
            self.assertEqual((r.status, r.score), (scoring.PASSED, 4))
            self.assertEqual(r.summary, f"correct, confirmed by racecheck; not confirmed: {short}")
            self.assertEqual(r.extra_data["sanitizer_check"]["status"], "partly confirmed")
        self.assertIn("3 of 100 elements are wrong", self.outcome("memcheck", failed_test).facts)

    def test_a_forged_report_under_the_sanitizer_is_tampering(self):
        forged = passing(2, authenticated=True, forged_lines=1, first_forged='{"event": "end"}')
        outcome = self.outcome("memcheck", forged)
        self.assertEqual(outcome.outcome, scoring.CHECK_TAMPERED)
        r = scoring.confirm_correctness(self.task, CORRECT, [outcome], REPRODUCE)
        self.assertEqual((r.status, r.score), (scoring.TAMPERED, 0))
        self.assertTrue(r.summary.startswith("under memcheck: the report file holds 1 line"))


# ---- The driver's flow ----

class Runs:
    """Stands in for runner.run_phase: records each call and answers with what `behave` says."""

    def __init__(self, behave):
        self.behave, self.calls = behave, []

    def __call__(self, program, spec, *, seed, timeout_s, env, sanitizer=None, sanitizer_tool=None, test_limit_s=None):
        tasks = [int(n) for n in re.findall(r"\[task_(\d+)\]", spec)]
        call = {"spec": spec, "tasks": tasks, "tool": sanitizer_tool, "prefix": list(sanitizer or []),
                "timeout_s": timeout_s, "env": dict(env), "perf": "~[perf]" not in spec, "test_limit_s": test_limit_s}
        self.calls.append(call)
        result = self.behave(call) or passing(*tasks)
        result.timeout_s = result.timeout_s or timeout_s  # a test's own limit, where behave gives one
        if sanitizer and result.sanitizer_tool is None:
            result.sanitizer_tool = sanitizer_tool
        return result

    def checks(self, side_by_side=0):
        """The check's processes: (tool, tasks). The first `side_by_side` ran at once (one per
        tool), in any order: they come sorted."""
        made = [(c["tool"], c["tasks"]) for c in self.calls if c["tool"] and not c["perf"]]
        return sorted(made[:side_by_side]) + made[side_by_side:]


def correctness_of(call, failing=()):
    """The plain correctness runs: 2 s each, those in `failing` with a wrong element."""
    result = passing(elapsed_s=2.0)
    for task_id in call["tasks"]:
        outcome = "failed" if task_id in failing else "passed"
        result.records.append({"event": "end", "test": "t", "tags": [f"task_{task_id}"], "outcome": outcome,
                               "messages": ["1 of 10 elements are wrong"] if task_id in failing else [],
                               "metrics": {}})
    return result


class GradingHarness:
    """A cli.Grader grading lesson 04 with every program run replaced by `behave(call)` (Runs),
    a fake compute-sanitizer, and a lock folder of its own. Mixed into the driver-flow tests here
    and in test_races.py."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        (self.dir / "empty").mkdir()
        self.sanitizer = executable(self.dir / "compute-sanitizer")
        self.env = mock.patch.dict(os.environ, {gpu_lock.LOCK_DIR_ENV: self.tmp.name,
                                                "PATH": str(self.dir / "empty")})
        self.env.start()
        # One check process per tool, however long the tasks took (the split has a test of its own).
        self.split = mock.patch.object(cli, "SPLIT_CHECK_S", float("inf"))
        self.split.start()

    def tearDown(self):
        self.split.stop()
        self.env.stop()
        self.tmp.cleanup()

    def grade_with(self, behave, index=None, code=None, **options):
        """The grader and the lesson's result; the printed output in self.output, the runs in self.runs.
        `code`: what cli.CodeState.of says of each task's code (none: unknown)."""
        args = Namespace(**{"sanitize": False, "no_timing": False, "timeout": None, "no_sanitizer_check": False,
                            "tree": "exercises", **options})
        grader = cli.Grader(args, {"compute_sanitizer": self.sanitizer} if index is None else index, None,
                            {"uuid": "GPU-test", "copy_bandwidth_gbps": 4000.0}, seed=7, tree="t", code=code)
        self.runs = Runs(behave)
        with mock.patch.object(cli, "run_phase", self.runs), contextlib.redirect_stdout(io.StringIO()) as out:
            result = grader.grade_lesson(the_lesson(), "grade_04_reduction__exercises")
        self.output = out.getvalue()
        return grader, result


class DriverFlowTest(GradingHarness, unittest.TestCase):
    def grade(self, behave, index=None, **options):
        grader, result = self.grade_with(behave, index, **options)
        self.run = scoring.GradeRun("exercises", 7, {}, [result], notes=grader.notes)
        return result

    @staticmethod
    def perf(call):
        return passing(*call["tasks"], elapsed_s=3.0) if call["perf"] else None

    def verdicts(self, result):
        return {t.task.id: t.correctness for t in result.tasks}

    def test_only_passes_are_checked_one_process_per_tool_for_the_tasks_that_name_it(self):
        def behave(call):
            if call["perf"]:
                return timed_pass(call)
            return correctness_of(call, failing={2}) if not call["tool"] else passing(*call["tasks"], elapsed_s=5.0)
        result = self.grade(behave)
        self.assertEqual(self.runs.checks(side_by_side=2), [("memcheck", [1, 3]), ("racecheck", [1])])
        memcheck = next(c for c in self.runs.calls if c["tool"] == "memcheck")
        self.assertEqual(memcheck["spec"], "[task_1]~[perf],[task_3]~[perf]")
        self.assertEqual(memcheck["prefix"][:3], [self.sanitizer, "--tool", "memcheck"])
        self.assertIn("--track-stream-ordered-races all", " ".join(memcheck["prefix"]))
        self.assertIn("--report-api-errors no", " ".join(memcheck["prefix"]))
        self.assertEqual(memcheck["env"].get("WORKBOOK_SANITIZE"), "memcheck")  # small sizes, no guards
        racecheck = next(c for c in self.runs.calls if c["tool"] == "racecheck")
        self.assertEqual(racecheck["env"].get("WORKBOOK_SANITIZE"), "racecheck")  # racecheck's fewer shapes
        self.assertEqual(memcheck["timeout_s"], 60 + 20 * (2.0 + 2.0))  # its own limit, from the plain runs
        plain = [c for c in self.runs.calls if not c["tool"] and not c["perf"]]
        # The lesson's tasks in one run, each with its own time limit; task 2, which failed there, alone.
        self.assertEqual([(c["tasks"], c["test_limit_s"]) for c in plain], [([1, 2, 3], 30), ([2], None)])
        self.assertEqual(plain[0]["timeout_s"], 3 * 30)
        self.assertTrue(all("WORKBOOK_SANITIZE" not in c["env"] for c in plain))
        verdicts = self.verdicts(result)
        self.assertEqual(verdicts[1].summary, "correct, confirmed by memcheck and racecheck")
        self.assertEqual(verdicts[3].summary, "correct, confirmed by memcheck")
        self.assertEqual((verdicts[2].status, verdicts[2].summary), (scoring.FAILED, "1 of 10 elements are wrong"))
        self.assertNotIn("sanitizer_check", verdicts[2].extra_data)
        # The check comes after every task's correctness and before any timing.
        kinds = ["perf" if c["perf"] else ("check" if c["tool"] else "plain") for c in self.runs.calls]
        self.assertEqual(kinds, ["plain", "plain", "check", "check"])  # task 2 failed: nothing timed
        self.assertIn("04_reduction passes under compute-sanitizer: memcheck clean (5 s); racecheck clean (5 s)",
                      self.output)

    def grade_with_task_2_timed(self, behave):
        """The lesson, its task 2's correctness tests comparing timings (correctness_timed); each
        run's lock mode in call["held"], the lock's log in self.locks."""
        def recorded(call):
            call["held"] = next(iter(gpu_lock._held.values()), None)
            return behave(call)
        lesson = the_lesson()
        lesson.tasks[1].correctness_timed = True
        log = self.dir / "locks.log"
        with mock.patch.object(sys.modules[__name__], "the_lesson", return_value=lesson), \
                mock.patch.dict(os.environ, {gpu_lock.LOCK_LOG_ENV: str(log)}):
            result = self.grade(recorded)
        self.locks = [line.split()[:2] for line in log.read_text().splitlines()]
        return result

    def test_a_task_whose_tests_compare_timings_runs_them_in_the_hold_alone_with_its_timing(self):
        behave = all_clean
        result = self.grade_with_task_2_timed(behave)
        # Tasks 1 and 3, then every task's check (task 2's ahead of its plain tests), beside other
        # gradings; task 2's plain tests and its timing in one hold of the GPU alone, after them.
        runs = [(c["tool"] or ("perf" if c["perf"] else "plain"), c["tasks"], c["held"]) for c in self.runs.calls]
        self.assertEqual(runs[:1] + sorted(runs[1:3]) + runs[3:],  # the check's tools side by side: any order
                         [("plain", [1, 3], "SH"), ("memcheck", [1, 3, 2], "SH"), ("racecheck", [1], "SH"),
                          ("plain", [2], "EX"), ("perf", [2], "EX")])
        self.assertEqual(self.locks, [["acquire", "SH"], ["release", "SH"]] * 2 + [["acquire", "EX"], ["release", "EX"]])
        # Task 2's check, run before its plain tests had any seconds, has the limit of the others'.
        memcheck = next(c for c in self.runs.calls if c["tool"] == "memcheck")
        self.assertEqual(memcheck["timeout_s"], 60 + 20 * (2.0 + 2.0))
        verdicts = self.verdicts(result)
        self.assertEqual(verdicts[2].summary, "correct, confirmed by memcheck")
        self.assertEqual(result.tasks[1].performance.status, scoring.PASSED)

    def test_only_what_times_nothing_gets_one_work_queue_a_context(self):
        self.grade_with_task_2_timed(all_clean)
        queues = [(c["tool"] or ("perf" if c["perf"] else "plain"), c["tasks"],
                   c["env"].get("CUDA_DEVICE_MAX_CONNECTIONS")) for c in self.runs.calls]
        self.assertEqual(queues[:1] + sorted(queues[1:3]) + queues[3:],
                         [("plain", [1, 3], "1"), ("memcheck", [1, 3, 2], "1"), ("racecheck", [1], "1"),
                          ("plain", [2], None), ("perf", [2], None)])  # task 2's plain tests compare timings
        # A lesson whose tests look at its streams side by side keeps CUDA's queues everywhere.
        self.runs.calls.clear()
        with mock.patch.object(sys.modules[__name__], "the_lesson",
                               return_value=dataclasses.replace(the_lesson(), streams_side_by_side=True)):
            self.grade(all_clean)
        self.assertTrue(self.runs.calls)
        self.assertEqual({c["env"].get("CUDA_DEVICE_MAX_CONNECTIONS") for c in self.runs.calls}, {None})
        # The shell's setting reaches no grader program: the driver's choice, on every machine.
        with mock.patch.dict(os.environ, {"CUDA_DEVICE_MAX_CONNECTIONS": "32"}):
            self.assertNotIn("CUDA_DEVICE_MAX_CONNECTIONS", runner.program_environment({}))
            self.assertEqual(runner.program_environment(runner.UNTIMED_SETTINGS)["CUDA_DEVICE_MAX_CONNECTIONS"], "1")

    def test_a_timing_task_s_check_fails_its_pass_and_not_its_failure(self):
        def behave(call, plain_fails):
            if call["perf"]:
                return passing(*call["tasks"], elapsed_s=3.0)
            if not call["tool"]:
                return correctness_of(call, failing={2} if plain_fails else ())
            if call["tool"] == "memcheck" and 2 in call["tasks"]:
                return sanitized(passing(*call["tasks"], returncode=86, elapsed_s=2.0), MEMCHECK_STREAM_ORDERED)
            return passing(*call["tasks"], elapsed_s=2.0)
        passes = self.grade_with_task_2_timed(lambda call: behave(call, False))
        # The finding in the process of tasks 1, 3 and 2: each of them again alone, before the hold.
        self.assertEqual(sorted(self.runs.checks()[2:5]), [("memcheck", [1]), ("memcheck", [2]), ("memcheck", [3])])
        self.assertEqual(self.verdicts(passes)[2].status, scoring.FAILED)
        self.assertIn("memcheck", self.verdicts(passes)[2].summary)
        self.assertEqual(passes.tasks[1].performance.status, scoring.NOT_RUN)  # not timed
        self.assertEqual(self.verdicts(passes)[1].summary, "correct, confirmed by memcheck and racecheck")
        fails = self.grade_with_task_2_timed(lambda call: behave(call, True))
        self.assertEqual((self.verdicts(fails)[2].status, self.verdicts(fails)[2].summary),
                         (scoring.FAILED, "1 of 10 elements are wrong"))  # its own tests' verdict, not the check's
        self.assertNotIn("sanitizer_check", self.verdicts(fails)[2].extra_data)

    def test_a_long_racecheck_runs_one_process_per_task_side_by_side(self):
        def behave(call):
            if call["perf"]:
                return timed_pass(call)
            if not call["tool"]:
                return correctness_of(call)
            if call["tool"] == "racecheck" and call["tasks"] == [3]:
                return sanitized(passing(3, returncode=86, elapsed_s=2.0), RACECHECK)
            return passing(*call["tasks"], elapsed_s=5.0)
        lesson = the_lesson()
        lesson.tasks[2].sanitizers = ["memcheck", "racecheck"]
        with mock.patch.object(sys.modules[__name__], "the_lesson", return_value=lesson), \
                mock.patch.object(cli, "SPLIT_CHECK_S", 3.0), mock.patch.object(os, "cpu_count", return_value=3):
            result = self.grade(behave)  # tasks 1 and 3 took 2 s each
        # racecheck's two tasks (4 s together) one process each; memcheck, faster, one for all three.
        self.assertEqual(self.runs.checks(side_by_side=3),
                         [("memcheck", [1, 2, 3]), ("racecheck", [1]), ("racecheck", [3])])
        self.assertEqual([c["timeout_s"] for c in self.runs.calls if c["tool"] == "racecheck"], [60 + 20 * 2.0] * 2)
        verdicts = self.verdicts(result)
        self.assertEqual(verdicts[1].summary, "correct, confirmed by memcheck and racecheck")
        self.assertEqual(verdicts[3].status, scoring.FAILED)  # its own process's finding: not run again
        self.assertIn("; racecheck task 1 clean (5 s); racecheck task 3 ", self.output)
        # Fewer cores than processes: racecheck stays one process.
        with mock.patch.object(sys.modules[__name__], "the_lesson", return_value=lesson), \
                mock.patch.object(cli, "SPLIT_CHECK_S", 3.0), mock.patch.object(os, "cpu_count", return_value=2):
            self.grade(behave)
        self.assertEqual(self.runs.checks(side_by_side=2), [("memcheck", [1, 2, 3]), ("racecheck", [1, 3])])
        # ./grade-class's --one-check-per-tool: one process per tool, however long and however many cores.
        with mock.patch.object(sys.modules[__name__], "the_lesson", return_value=lesson), \
                mock.patch.object(cli, "SPLIT_CHECK_S", 3.0), mock.patch.object(os, "cpu_count", return_value=3):
            self.grade(behave, one_check_per_tool=True)
        self.assertEqual(self.runs.checks(side_by_side=2), [("memcheck", [1, 2, 3]), ("racecheck", [1, 3])])

    def test_the_tools_run_side_by_side_and_a_finding_is_the_first_tools(self):
        both_running = threading.Barrier(2, timeout=10)  # breaks unless memcheck and racecheck overlap

        def behave(call):
            if call["perf"]:
                return passing(*call["tasks"], elapsed_s=3.0)
            if not call["tool"]:
                return correctness_of(call)
            if call["tasks"] == [1, 2, 3] or call["tasks"] == [1] and call["tool"] == "racecheck":
                both_running.wait()
            if call["tool"] == "memcheck" and 1 in call["tasks"]:
                return sanitized(passing(*call["tasks"], returncode=86, elapsed_s=6.0), MEMCHECK_STREAM_ORDERED)
            if call["tool"] == "racecheck":
                return sanitized(passing(*call["tasks"], returncode=86, elapsed_s=2.0), RACECHECK)
            return passing(*call["tasks"], elapsed_s=4.0)
        result = self.grade(behave)
        verdicts = self.verdicts(result)
        # Task 1: memcheck, first in the manifest, decides; racecheck's finding, made at the same
        # time, does not count, and task 1 is not run alone under it.
        self.assertTrue(verdicts[1].summary.startswith("memcheck: Invalid __global__ read"), verdicts[1].summary)
        self.assertNotIn(("racecheck", [1]), self.runs.checks(side_by_side=2)[2:])
        self.assertEqual(result.wall_s["sanitizer_check"], 6.0 + 6.0 + 4.0 + 4.0)  # the slowest, then alone

    def test_a_finding_fails_its_task_only_and_its_performance_is_not_timed(self):
        def behave(call):
            if call["perf"]:
                return passing(*call["tasks"], elapsed_s=3.0)
            if not call["tool"]:
                return correctness_of(call)
            if call["tool"] == "memcheck" and 2 in call["tasks"]:  # task 2's tests read freed memory
                return sanitized(passing(*call["tasks"], returncode=86, elapsed_s=6.0), MEMCHECK_STREAM_ORDERED)
            return passing(*call["tasks"], elapsed_s=4.0)
        result = self.grade(behave)
        # Found in the process of all three, so each task was run alone before any was blamed.
        self.assertEqual(self.runs.checks(side_by_side=2), [("memcheck", [1, 2, 3]), ("racecheck", [1]),
                                                            ("memcheck", [1]), ("memcheck", [2]), ("memcheck", [3])])
        verdicts = self.verdicts(result)
        self.assertEqual((verdicts[2].status, verdicts[2].score), (scoring.FAILED, 0))
        self.assertEqual(verdicts[2].summary,
                         "memcheck: Invalid __global__ read of size 4 bytes in smooth_kernel (kernels.cu:27)")
        self.assertIn("Reproduce: ./grade --sanitize --seed 7 04.2", verdicts[2].details)
        self.assertEqual(verdicts[1].summary, "correct, confirmed by memcheck and racecheck")
        self.assertEqual(verdicts[3].summary, "correct, confirmed by memcheck")
        self.assertEqual(result.tasks[1].performance.status, scoring.NOT_RUN)
        self.assertFalse([c for c in self.runs.calls if c["perf"]])
        self.assertIn("memcheck found errors, task by task: task 1 clean, task 2 FOUND ERRORS, task 3 clean",
                      self.output)
        self.assertIn("04_reduction task 2: correctness FAILED (memcheck: Invalid __global__ read", self.output)
        self.assertEqual(result.score, 4 + 3)
        # The scoreboard, results.json and junit.xml carry the verdict.
        board = format_scoreboard(self.run)
        self.assertIn("04_reduction · Task 2 · correctness: FAILED", board)
        self.assertIn("at <unnamed>::smooth_kernel(", board)
        test = next(t for t in gradescope_results(self.run)["tests"] if t["number"] == "4.2")
        self.assertEqual(test["extra_data"]["sanitizer_check"]["first_report"]["kind"],
                         "Invalid __global__ read of size 4 bytes")
        self.assertIn("memcheck: Invalid __global__ read", junit_xml(self.run))

    def test_a_check_out_of_time_fails_nothing_and_is_not_run_again(self):
        def behave(call):
            if call["perf"]:
                return timed_pass(call)
            if not call["tool"]:
                return correctness_of(call)
            if call["tool"] == "memcheck":
                return PhaseResult(timed_out=True, returncode=-9, elapsed_s=call["timeout_s"])
            return None
        result = self.grade(behave)
        self.assertEqual(self.runs.checks(side_by_side=2), [("memcheck", [1, 2, 3]), ("racecheck", [1])])
        verdicts = self.verdicts(result)
        limit = 60 + 20 * 6.0
        self.assertEqual([v.status for v in verdicts.values()], [scoring.PASSED] * 3)
        self.assertEqual(verdicts[2].summary, f"correct; not confirmed: memcheck did not finish within {limit:.0f} s")
        self.assertEqual(verdicts[1].summary, "correct, confirmed by racecheck; not confirmed: memcheck did not "
                                              f"finish within {limit:.0f} s")
        self.assertEqual(result.tasks[1].performance.status, scoring.PASSED)  # timed as usual
        self.assertIn(f"memcheck did not finish within {limit:.0f} s", self.output)
        board = format_scoreboard(self.run)
        self.assertIn("04_reduction · Task 2 · correctness: passed, not confirmed under compute-sanitizer", board)
        self.assertEqual(self.run.all_passed, True)
        self.assertIn("correct; not confirmed: memcheck did not finish", junit_xml(self.run))

    def test_a_crash_under_the_sanitizer_is_run_again_task_by_task(self):
        def behave(call):
            if call["perf"]:
                return passing(*call["tasks"], elapsed_s=3.0)
            if not call["tool"]:
                return correctness_of(call, failing={1})
            if call["tasks"] == [2, 3]:
                return PhaseResult(unfinished_test="test of task 2", returncode=-6, elapsed_s=5.0)
            return None
        result = self.grade(behave, no_timing=True)
        self.assertEqual(self.runs.checks(), [("memcheck", [2, 3]), ("memcheck", [2]), ("memcheck", [3])])
        self.assertEqual([v.summary for v in self.verdicts(result).values()][1:],
                         ["correct, confirmed by memcheck"] * 2)

    def test_without_compute_sanitizer_one_line_says_so_and_nothing_fails(self):
        result = self.grade(lambda call: correctness_of(call) if not call["perf"] else None,
                            index={"compute_sanitizer": ""}, no_timing=True)
        self.assertEqual(self.runs.checks(), [])
        self.assertEqual(self.run.notes, ["Passes not checked under compute-sanitizer: the build found none beside "
                                          "nvcc, and there is none on PATH."])
        self.assertEqual([v.summary for v in self.verdicts(result).values()], ["correct"] * 3)
        board = format_scoreboard(self.run).splitlines()
        self.assertEqual(board[2], self.run.notes[0])  # under the header and the GPU's line
        self.assertEqual(sum("compute-sanitizer" in line for line in board), 1)
        self.assertIn(self.run.notes[0], gradescope_results(self.run)["output"])

    def test_asked_off_it_does_not_run(self):
        result = self.grade(lambda call: correctness_of(call) if not call["perf"] else None,
                            no_sanitizer_check=True, no_timing=True)
        self.assertEqual(self.runs.checks(), [])
        self.assertEqual(self.run.notes, ["Passes not checked under compute-sanitizer (--no-sanitizer-check)."])
        self.assertEqual([v.summary for v in self.verdicts(result).values()], ["correct"] * 3)

    def test_under_sanitize_each_task_runs_its_own_tools_and_there_is_no_check_after(self):
        self.grade(lambda call: passing(*call["tasks"]), sanitize=True)
        self.assertEqual([(c["tool"], c["tasks"]) for c in self.runs.calls],
                         [("memcheck", [1]), ("racecheck", [1]), ("memcheck", [2]), ("memcheck", [3])])
        memcheck = self.runs.calls[0]["prefix"]
        self.assertIn("--track-stream-ordered-races all", " ".join(memcheck))  # it reproduces what the check saw
        self.assertEqual(self.run.notes, [])

    def test_each_phase_s_wall_time_is_recorded(self):
        behave = all_clean
        result = self.grade(behave)
        wall = result.wall_s
        # The three tasks' tests in one 2 s process; the tools' two 5 s processes side by side.
        self.assertEqual((wall["correctness"], wall["sanitizer_check"], wall["performance"], wall["reference"]),
                         (2.0, 5.0, 3.0, 0.0))
        self.assertGreaterEqual(wall["total"], 0.0)
        results = json.loads(json.dumps(gradescope_results(self.run)))
        self.assertEqual(results["extra_data"]["wall_s"]["04_reduction"]["sanitizer_check"], 5.0)
        runs = next(t for t in results["tests"] if t["number"] == "4.1")["extra_data"]["sanitizer_check"]["runs"]
        self.assertEqual([(r["tool"], r["tasks"], r["wall_s"]) for r in runs],
                         [("memcheck", [1, 2, 3], 5.0), ("racecheck", [1], 5.0)])


# A grader program and a compute-sanitizer that stand in for the real ones, run by the real runner:
# the report's key must get through the sanitizer to the program, the spec must select the tasks,
# and the sanitizer's output must reach the verdict.
STAND_IN_PROGRAM = SIGNING_PROGRAM + """
import re
spec = sys.argv[1]
tasks = re.findall(r'\\[task_(\\d+)\\]', spec)
for task in tasks:
    emit(event='start', test='test of task ' + task, tags=['task_' + task])
    emit(event='end', test='test of task ' + task, tags=['task_' + task], outcome='passed',
         metrics={'sanitize_mode': float(os.environ.get('WORKBOOK_SANITIZE', '0')[:1] not in ('', '0'))})
emit(event='run_end', test_cases=len(tasks))
"""
STAND_IN_SANITIZER = """#!/usr/bin/env python3
import subprocess, sys
args = sys.argv[1:]
options = []
while args and args[0].startswith('--'):
    options.append(args[0] + ' ' + args[1])
    args = args[2:]
print('========= COMPUTE-SANITIZER', flush=True)
status = subprocess.call(args, close_fds=False)
if '--tool memcheck' in options and '[task_2]' in args[1]:
    print(%r, flush=True)
    sys.exit(86)
print('========= ERROR SUMMARY: 0 errors', flush=True)
sys.exit(status)
""" % MEMCHECK_STREAM_ORDERED


class StandInProcessesTest(unittest.TestCase):
    def test_the_check_through_the_real_runner(self):
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.dict(os.environ, {gpu_lock.LOCK_DIR_ENV: tmp, "PATH": os.environ.get("PATH", "")}):
            program = Path(tmp) / "grade_04_reduction__exercises"
            program.write_text(STAND_IN_PROGRAM)
            program.chmod(program.stat().st_mode | stat.S_IXUSR)
            tool = Path(tmp) / "compute-sanitizer"
            tool.write_text(STAND_IN_SANITIZER)
            tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
            args = Namespace(sanitize=False, no_timing=True, timeout=None, no_sanitizer_check=False, tree="exercises")
            grader = cli.Grader(args, {"compute_sanitizer": str(tool)}, None, {"uuid": None}, seed=3, tree="t")
            with contextlib.redirect_stdout(io.StringIO()):
                result = grader.grade_lesson(the_lesson(), str(program))
        verdicts = {t.task.id: t.correctness for t in result.tasks}
        self.assertEqual(verdicts[1].summary, "correct, confirmed by memcheck and racecheck")
        self.assertEqual(verdicts[1].metrics, {"sanitize_mode": 0.0})  # the graded run's, at full sizes
        self.assertEqual(verdicts[3].summary, "correct, confirmed by memcheck")
        self.assertEqual((verdicts[2].status, verdicts[2].summary),
                         (scoring.FAILED, "memcheck: Invalid __global__ read of size 4 bytes in smooth_kernel "
                                          "(kernels.cu:27)"))
        runs = verdicts[2].extra_data["sanitizer_check"]["runs"]
        self.assertEqual([(r["tool"], r["tasks"], r["outcome"]) for r in runs], [("memcheck", [2], "finding")])
        self.assertGreater(result.wall_s["sanitizer_check"], 0.0)



class GraderKernelsInTheCheckTest(GradingHarness, unittest.TestCase):
    """The check's processes leave the grader's kernels unchecked only where nothing of the
    student's carries their mark: not in the lesson's sources, not in its compiled library."""

    def check_prefixes(self, source: str, library: bytes = b"") -> list:
        lesson = the_lesson()
        tree = self.dir / "tree"
        (tree / lesson.slug).mkdir(parents=True, exist_ok=True)
        (tree / lesson.slug / lesson.sources[0]).write_text(source)
        # The grader program the harness grades, grade_04_reduction__exercises, is named relative to
        # the working folder: its library goes there.
        (self.dir / "libimpl_04_reduction__exercises.a").write_bytes(b"!<arch>\n" + library)
        self.sanitizer = helped(self.dir / "cs", "  --kernel-name-exclude <filter>")
        here = os.getcwd()
        os.chdir(self.dir)
        try:
            self.grade_with(lambda call: None if call["tool"] else correctness_of(call),
                            code=cli.CodeState(self.dir, tree))
        finally:
            os.chdir(here)
        return [c["prefix"] for c in self.runs.calls if c["tool"]]

    def test_nothing_of_the_students_has_the_mark_the_graders_kernels_go_unchecked(self):
        prefixes = self.check_prefixes("__global__ void k(float* x) { x[0] = 1; }\n", b"_Z1kPf\0")
        self.assertEqual(len(prefixes), 2)  # memcheck, racecheck
        for prefix in prefixes:
            self.assertIn(f"--kernel-name-exclude kns={sanitizer.GRADER_KERNEL_MARK}", " ".join(prefix))

    def test_a_mark_in_the_sources_or_the_compiled_code_gets_every_kernel_checked(self):
        mark = sanitizer.GRADER_KERNEL_MARK
        for source, library in ((f"__global__ void {mark}k(float* x) {{ x[0] = 1; }}\n", b""),
                                # a name pasted by a macro: only the compiled code shows it
                                ("#define N(a, b) a##b\n__global__ void N(grader_ow, n_k)(float* x) {}\n",
                                 f"_Z{len(mark) + 1}{mark}kPf\0".encode())):
            with self.subTest(source=source):
                prefixes = self.check_prefixes(source, library)
                self.assertEqual(len(prefixes), 2)
                self.assertTrue(all("--kernel-name-exclude" not in prefix for prefix in prefixes), prefixes)

    def test_the_compiled_library_is_the_one_beside_the_program(self):
        self.assertFalse(cli.compiled_code_names_mark(str(self.dir / "grade_01_vector_add__alice")))  # none there
        (self.dir / "libimpl_01_vector_add__alice.a").write_bytes(sanitizer.GRADER_KERNEL_MARK.encode())
        self.assertTrue(cli.compiled_code_names_mark(str(self.dir / "grade_01_vector_add__alice")))
        self.assertFalse(cli.compiled_code_names_mark(str(self.dir / "grade_01_vector_add__bob")))
        self.assertFalse(cli.compiled_code_names_mark(str(self.dir / "something_else")))


if __name__ == "__main__":
    unittest.main()


class Untouched:
    """cli.CodeState's answer for a tree whose every task is still the skeleton."""

    @staticmethod
    def of(lesson, task):
        return skeleton.UNTOUCHED, f"function {task.id} in exercises/{lesson.slug}/reduction.cu"


class TogetherTest(GradingHarness, unittest.TestCase):
    """A lesson's correctness tests in one process (cli.Grader._correctness_together): a task's
    verdict comes from that run only where it is the one the task gets alone; every other task
    runs alone, as it did before."""

    def plain(self):
        return [c["tasks"] for c in self.runs.calls if not c["tool"] and not c["perf"]]

    def verdicts(self, result):
        return {t.task.id: (t.correctness.status, t.correctness.summary) for t in result.tasks}

    def alone_or(self, together):
        """`together` answers the run of the three tasks; a task alone passes in 1 s."""
        def behave(call):
            if call["tool"] or call["perf"]:
                return None
            return together(call) if len(call["tasks"]) > 1 else passing(*call["tasks"], elapsed_s=1.0)
        return behave

    def test_a_run_that_crashed_decides_nothing_every_task_runs_alone(self):
        def crashed(call):
            result = passing(1, elapsed_s=2.0)  # task 1's tests passed before the crash
            result.run_completed, result.returncode, result.unfinished_test = False, -11, "test of task 2"
            return result
        _, result = self.grade_with(self.alone_or(crashed), no_sanitizer_check=True, no_timing=True)
        self.assertEqual(self.plain(), [[1, 2, 3], [1], [2], [3]])
        self.assertEqual({k: v[0] for k, v in self.verdicts(result).items()}, {1: "passed", 2: "passed", 3: "passed"})

    def test_lines_the_grader_did_not_write_decide_nothing(self):
        def forged(call):
            result = passing(1, 2, 3, elapsed_s=2.0)
            result.forged_lines, result.first_forged = 1, '{"event": "end", "outcome": "passed"}'
            return result
        self.grade_with(self.alone_or(forged), no_sanitizer_check=True, no_timing=True)
        self.assertEqual(self.plain(), [[1, 2, 3], [1], [2], [3]])

    def hung(self, call, earlier_s=1.0):
        """Task 1's test passed; task 2's first test took past the 30 s limit, waiting for a launch."""
        result = passing(1, elapsed_s=33.0, timed_out=True, test_over_limit=True, timeout_s=30.0)
        result.records[0]["tags"] = ["task_1"]
        result.records.insert(0, {"event": "end", "test": "earlier test of task 2", "tags": ["task_2"],
                                  "outcome": "passed", "messages": [], "metrics": {}})
        result.record_seconds = [earlier_s, 0.5]
        result.unfinished_test, result.unfinished_tags = "test of task 2", ["task_2"]
        result.wait_durations_s, result.wait_tests = [0.01, 2.5], ["earlier test of task 2", "test of task 1"]
        result.open_wait, result.open_wait_test = ("launch of the kernel", 2.0), "test of task 2"
        return result

    def test_a_hung_test_times_its_task_out_there_the_others_run_alone(self):
        _, result = self.grade_with(self.alone_or(self.hung), no_sanitizer_check=True, no_timing=True)
        self.assertEqual(self.plain(), [[1, 2, 3], [1], [3]])  # tasks 1 and 3: did all their tests run?
        task2 = next(t for t in result.tasks if t.task.id == 2).correctness
        self.assertEqual((task2.status, task2.summary), (scoring.TIMED_OUT, 'timed out after 30 s in "test of task 2"'))
        # Its own tests' waits only (task 1's 2.5 s wait is not its): stuck, not slow.
        self.assertIn("the 1 waits before it took at most 0.01 s each", task2.details)
        self.assertIn("Hint [timeout-stuck]", task2.details)

    def test_a_hung_test_is_not_given_another_tests_open_wait(self):
        def hung(call):
            result = self.hung(call)
            result.open_wait_test = "test of task 1"  # left open by a call of task 1's that threw
            return result
        _, result = self.grade_with(self.alone_or(hung), no_sanitizer_check=True, no_timing=True)
        task2 = next(t for t in result.tasks if t.task.id == 2).correctness
        self.assertEqual(task2.status, scoring.TIMED_OUT)
        self.assertNotIn("waiting for the GPU", task2.details)
        self.assertNotIn("Hint [timeout-stuck]", task2.details)

    def test_a_hung_task_whose_other_tests_took_long_runs_alone(self):
        _, result = self.grade_with(self.alone_or(lambda call: self.hung(call, earlier_s=16.0)),
                                    no_sanitizer_check=True, no_timing=True)
        self.assertEqual(self.plain(), [[1, 2, 3], [1], [2], [3]])

    def test_a_task_whose_tests_took_over_half_its_limit_runs_alone(self):
        def slow_task_2(call):
            result = passing(1, 2, 3, elapsed_s=17.0)
            result.record_seconds = [0.5, 16.0, 0.5]  # the limit is 30 s
            result.in_tests_s = 17.0
            return result
        self.grade_with(self.alone_or(slow_task_2), no_sanitizer_check=True, no_timing=True)
        self.assertEqual(self.plain(), [[1, 2, 3], [2]])

    def test_an_untouched_skeleton_is_taken_from_the_run_a_failure_is_not(self):
        def mixed(call):
            result = passing(1, elapsed_s=2.0)
            for task_id, outcome in ((2, "wrote_nothing"), (3, "failed")):
                result.records.append({"event": "end", "test": f"test of task {task_id}", "tags": [f"task_{task_id}"],
                                       "outcome": outcome, "messages": ["the call wrote nothing"], "metrics": {}})
            return result

        def behave(call):
            if call["tool"] or call["perf"]:
                return None
            if len(call["tasks"]) > 1:
                return mixed(call)
            return correctness_of(call, failing={3})
        _, result = self.grade_with(behave, code=Untouched(), no_sanitizer_check=True, no_timing=True)
        self.assertEqual(self.plain(), [[1, 2, 3], [3]])  # task 3 failed there: alone, its verdict its own
        verdicts = self.verdicts(result)
        self.assertEqual(verdicts[2], (scoring.NOT_IMPLEMENTED, "not implemented yet"))
        self.assertEqual(verdicts[3], (scoring.FAILED, "1 of 10 elements are wrong"))

    def test_each_task_passed_there_keeps_its_own_metrics_and_seconds(self):
        def together(call):
            result = passing(1, 2, 3, elapsed_s=4.0, in_tests_s=3.0)
            result.record_seconds = [1.0, 1.5, 0.5]
            result.records[1]["metrics"] = {"worst_error": 2.0}
            return result
        _, result = self.grade_with(self.alone_or(together))
        self.assertEqual(self.plain(), [[1, 2, 3]])
        task2 = next(t for t in result.tasks if t.task.id == 2).correctness
        self.assertEqual(task2.metrics, {"worst_error": 2.0})
        self.assertEqual(next(t for t in result.tasks if t.task.id == 1).correctness.metrics, {})
        # The check's limit: 60 s + 20 times what the task would take alone: its tests, the start,
        # and for tasks 2 and 3 the run's first test, task 1's, where the CUDA context was made.
        memcheck = next(c for c in self.runs.calls if c["tool"] == "memcheck")
        self.assertEqual(memcheck["timeout_s"], 60 + 20 * ((1.0 + 1.0) + (1.5 + 1.0 + 1.0) + (0.5 + 1.0 + 1.0)))
        self.assertEqual(result.wall_s["correctness"], 4.0)

    def test_under_the_sanitizer_each_task_runs_alone(self):
        self.grade_with(self.alone_or(lambda call: passing(*call["tasks"])), sanitize=True)
        self.assertEqual(sorted(c["tasks"] for c in self.runs.calls if not c["perf"]), [[1], [1], [2], [3]])
