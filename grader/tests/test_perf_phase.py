"""Around a performance phase: the other processes nvidia-smi saw on the GPU are named beside
the figures (a fake nvidia-smi first on PATH), and a figure just below its threshold is
measured again, the better measurement counting."""
import contextlib
import io
import json
import os
import re
import stat
import tempfile
import unittest
from argparse import Namespace
from pathlib import Path
from unittest import mock

from helpers import lesson, phase
from driver.manifest import parse_manifest
from functools import partial

from driver import cli, counters, gpu_lock, gpu_processes, scoring
from driver.reports import format_scoreboard, gradescope_results
from driver.scoring import judge_performance, measure_again, note_other_processes

FAKE_NVIDIA_SMI = """#!/bin/sh
echo "$@" >> "$FAKE_SMI_DIR/calls"
cat "$FAKE_SMI_DIR/output"
exit $(cat "$FAKE_SMI_DIR/status")
"""


class FakeNvidiaSmi:
    """nvidia-smi first on PATH, printing what the test wants and recording its arguments."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        script = self.dir / "nvidia-smi"
        script.write_text(FAKE_NVIDIA_SMI)
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        self.say("", status=0)
        self.env = mock.patch.dict(os.environ, {"PATH": f"{self.dir}{os.pathsep}{os.environ.get('PATH', '')}",
                                                "FAKE_SMI_DIR": str(self.dir)})

    def say(self, output: str, status: int = 0):
        (self.dir / "output").write_text(output)
        (self.dir / "status").write_text(str(status))

    @property
    def calls(self):
        path = self.dir / "calls"
        return path.read_text().splitlines() if path.exists() else []

    def __enter__(self):
        self.env.start()
        return self

    def __exit__(self, *exc):
        self.env.stop()
        self.tmp.cleanup()


NCU_LOG = "\n".join([
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"',
    f'"0","1","grade","h","vector_add(const float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","S",'
    f'"{counters.GLOBAL_LOAD_SECTORS}","sector","131,072"',
    f'"0","1","grade","h","vector_add(const float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","S",'
    f'"{counters.GLOBAL_LOAD_REQUESTS}","request","4,096"',
    f'"0","1","grade","h","vector_add(const float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","S",'
    f'"{counters.DRAM_READ_BYTES}","byte","134,217,728"',
    f'"0","1","grade","h","vector_add(const float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","S",'
    f'"{counters.DRAM_WRITE_BYTES}","byte","67,108,864"'])


class OtherProcessesTest(unittest.TestCase):
    def test_nvidia_smi_is_asked_about_this_gpu_and_read(self):
        with FakeNvidiaSmi() as smi:
            smi.say("4321, /usr/bin/python3, 1200\n99, sweep_02_multiply_add__exercises, 800\n")
            self.assertEqual(gpu_processes.compute_apps("GPU-1234"),
                             [(4321, "/usr/bin/python3"), (99, "sweep_02_multiply_add__exercises")])
            self.assertIn("--id=GPU-1234", smi.calls[0])
            self.assertIn("--query-compute-apps=pid,process_name,used_memory", smi.calls[0])

    def test_no_processes_is_an_empty_list(self):
        with FakeNvidiaSmi() as smi:
            smi.say("")
            self.assertEqual(gpu_processes.compute_apps("GPU-1234"), [])

    def test_a_failing_or_missing_nvidia_smi_is_unknown(self):
        with FakeNvidiaSmi() as smi:
            smi.say("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", status=9)
            self.assertIsNone(gpu_processes.compute_apps("GPU-1234"))
        with tempfile.TemporaryDirectory() as empty, mock.patch.dict(os.environ, {"PATH": empty}):
            self.assertIsNone(gpu_processes.compute_apps("GPU-1234"))
        self.assertIsNone(gpu_processes.compute_apps(None))  # no UUID: which GPU is not known

    def test_ours_are_left_out_and_each_process_counts_once(self):
        before = [(os.getpid(), "python3"), (4321, "python3")]
        after = [(4321, "python3"), (555, "grade_01_vector_add__exercises"), (99, "sweep")]
        self.assertEqual(gpu_processes.others([before, None, after], [os.getpid(), 555]),
                         [(4321, "python3"), (99, "sweep")])

    def test_the_note_goes_beside_the_figures_and_into_results_json(self):
        result = scoring.ComponentResult("performance", scoring.PASSED, 2, 2,
                                         "72% of the measured copy bandwidth (3051 GB/s)")
        note_other_processes(result, [(4321, "/usr/bin/python3"), (99, "sweep_02_multiply_add__exercises")])
        self.assertEqual(result.summary, "72% of the measured copy bandwidth (3051 GB/s) · 2 other processes were "
                                         "using the GPU (pid 4321 python3, pid 99 sweep_02_mult...): timings may "
                                         "be low")
        self.assertEqual(result.metrics["other_gpu_processes"], 2)
        l = lesson()
        run = scoring.GradeRun("exercises", 1, {}, [scoring.LessonResult(l, [scoring.TaskResult(
            l.tasks[0], scoring.ComponentResult("correctness", scoring.PASSED, 3, 3, "correct"), result)])])
        self.assertIn("2 other processes were using the GPU", format_scoreboard(run))
        extra = gradescope_results(run)["tests"][1]["extra_data"]
        self.assertEqual(extra["other_gpu_processes"], [{"pid": 4321, "name": "/usr/bin/python3"},
                                                        {"pid": 99, "name": "sweep_02_multiply_add__exercises"}])

    def test_nothing_is_said_when_nothing_else_ran(self):
        result = scoring.ComponentResult("performance", scoring.PASSED, 2, 2, "72%")
        note_other_processes(result, [])
        self.assertEqual(result.summary, "72%")
        self.assertNotIn("other_gpu_processes", result.metrics)


def perf(value, profiled=True):
    """A timed phase's result; `profiled`: its test opened a profiled range (counters.PROFILED_BYTES)."""
    metrics = {"fraction_of_copy_bandwidth": value, "gbps": value * 4000}
    if profiled:
        metrics[counters.PROFILED_BYTES] = 3 * 4 * (1 << 24)
    return phase(("passed", [], metrics))


class RecheckTest(unittest.TestCase):
    """Lesson 01 task 1 of helpers.MANIFEST: threshold 60%."""

    def setUp(self):
        self.task = lesson().tasks[0]
        self.correct = scoring.ComponentResult("correctness", scoring.PASSED, 3, 3, "correct")

    def test_every_figure_below_the_threshold_is_measured_again(self):
        self.assertTrue(measure_again(self.task, perf(0.07)))     # far below: a glitch must not fail it either
        self.assertTrue(measure_again(self.task, perf(0.50)))
        self.assertTrue(measure_again(self.task, perf(0.59)))
        self.assertFalse(measure_again(self.task, perf(0.60)))   # reached
        self.assertFalse(measure_again(self.task, perf(0.70)))
        self.assertFalse(measure_again(self.task, phase(("failed", ["wrong"], {"fraction_of_copy_bandwidth": 0.59}))))

    def test_the_better_of_two_measurements_counts_and_both_are_given(self):
        r = judge_performance(self.task, self.correct, perf(0.58), "01_vector_add", perf(1.0),
                              again=(perf(0.61), perf(1.0)))
        self.assertEqual((r.status, r.score), (scoring.PASSED, 2))
        self.assertIn("61%", r.summary)
        self.assertIn("Measured twice", r.details)
        self.assertIn("58.0% then 61.0%", r.details)
        self.assertEqual(r.metrics["measurements"], 2)

    def test_two_measurements_below_stay_below(self):
        r = judge_performance(self.task, self.correct, perf(0.59), "01_vector_add", again=(perf(0.58), None))
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))
        self.assertIn("59%", r.summary)
        self.assertIn("59.0% then 58.0%", r.details)

    def test_a_second_run_that_gives_no_figure_leaves_the_first(self):
        r = judge_performance(self.task, self.correct, perf(0.59), "01_vector_add",
                              again=(phase(returncode=-9, timed_out=True, timeout_s=30), None))
        self.assertEqual(r.status, scoring.FAILED)
        self.assertIn("59%", r.summary)
        self.assertIn("the first counts", r.details)


class CopyBandwidthInTheHoldTest(unittest.TestCase):
    """The copy bandwidth is measured as a grading's hold of the GPU alone begins, never before:
    a grading that times nothing never waits for the GPU alone (issue 25: every ./grade measured
    it first, each time draining every other grading's correctness phases)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.env = mock.patch.dict(os.environ, {gpu_lock.LOCK_DIR_ENV: self.tmp.name})
        self.env.start()
        self.program = Path(self.tmp.name) / "workbook_device_info"
        self.program.write_text("")
        self.events = []  # (what, the lock held, the bandwidth in the environment)

    def tearDown(self):
        self.env.stop()
        self.tmp.cleanup()

    def grade(self, no_timing=False, measured=0, timing_cache=None, on_the_gpu=()):
        grader = cli.Grader(Namespace(sanitize=False, no_timing=no_timing, timeout=None, no_sanitizer_check=True,
                                      no_counters=True, timing_cache=timing_cache, counters_when_short=False),
                            {"device_info": str(self.program)}, {"01_vector_add": "reference"},
                            {"uuid": "GPU-test"}, seed=1, tree="alice_1a2b3c4d")

        def run_phase(program, spec, **kwargs):
            self.events.append((f"{program} {spec}", grader.gpu.held, kwargs["env"].get(cli.BANDWIDTH_ENV)))
            return phase(("passed", [], {})) if "~[perf]" in spec else perf(0.9)

        def device_info(command, **kwargs):
            self.events.append((" ".join(command[1:]), grader.gpu.held, None))
            if measured == "hangs":
                raise cli.subprocess.TimeoutExpired(command, 120)
            if measured:
                return cli.subprocess.CompletedProcess(command, 0, json.dumps({"copy_bandwidth_gbps": measured}).encode(), b"")
            return cli.subprocess.CompletedProcess(command, 1, b"", b"no copy here")

        with mock.patch.object(cli, "run_phase", run_phase), mock.patch.object(cli.subprocess, "run", device_info), \
                mock.patch.object(gpu_processes, "compute_apps", return_value=list(on_the_gpu)), \
                contextlib.redirect_stdout(io.StringIO()) as out:
            result = grader.grade_lessons([(lesson(), "student", None), (lesson(), "student", None)])
        return grader, result, out.getvalue()

    def test_measured_once_alone_before_the_first_timed_test(self):
        grader, _, output = self.grade(measured=3001.5)
        measures = [i for i, e in enumerate(self.events) if e[0] == "--measure-copy"]
        self.assertEqual(len(measures), 1)  # once for both lessons
        self.assertEqual(self.events[measures[0]][1], "EX")
        correctness = [e for e in self.events[:measures[0]]]
        self.assertTrue(correctness and all(held == "SH" and env == "" for _, held, env in correctness))
        timed = self.events[measures[0] + 1:]
        self.assertTrue(timed and all(held == "EX" and env == "3001.5" for _, held, env in timed))
        self.assertEqual(grader.device["copy_bandwidth_gbps"], 3001.5)  # for the scoreboard's header
        self.assertIn("copy bandwidth 3002 GB/s (measured alone on the GPU)", output)

    def test_with_a_timing_cache_the_next_grading_reuses_it_unless_something_else_was_seen(self):
        cache = str(Path(self.tmp.name) / "timing_cache.json")
        self.grade(measured=3001.5, timing_cache=cache, on_the_gpu=[(99, "python3 train.py")])
        _, _, output = self.grade(measured=2000.0, timing_cache=cache)  # the disturbed figure was not kept
        self.assertIn("copy bandwidth 2000 GB/s (measured alone on the GPU)", output)
        _, _, output = self.grade(measured=1000.0, timing_cache=cache)
        self.assertIn("copy bandwidth 2000 GB/s (kept in the timing cache)", output)
        self.assertEqual([e[0] for e in self.events].count("--measure-copy"), 2)

    def test_a_grading_that_times_nothing_never_measures_nor_holds_the_gpu_alone(self):
        grader, _, _ = self.grade(no_timing=True, measured=3001.5)
        self.assertNotIn("--measure-copy", [e[0] for e in self.events])
        self.assertEqual({held for _, held, _ in self.events}, {"SH"})
        self.assertNotIn("copy_bandwidth_gbps", grader.device)

    def test_a_measurement_that_never_ends_is_said_and_the_grading_goes_on(self):
        grader, result, output = self.grade(measured="hangs")
        self.assertIn("The copy bandwidth could not be measured (workbook_device_info --measure-copy:", output)
        self.assertEqual(result[0].tasks[0].performance.status, scoring.PASSED)
        self.assertIsNone(grader.gpu.held)

    def test_a_failed_measurement_is_said_and_each_timed_test_measures_its_own(self):
        grader, result, output = self.grade(measured=0)
        self.assertEqual([e[0] for e in self.events].count("--measure-copy"), 1)  # not retried at every task
        self.assertIn("The copy bandwidth could not be measured (no copy here)", output)
        self.assertIn("The copy bandwidth could not be measured (no copy here); each timed test measured its own.",
                      grader.notes)
        self.assertTrue(all(env == "" for what, _, env in self.events if what.endswith("[task_1][perf]")))
        self.assertEqual(result[0].tasks[0].performance.status, scoring.PASSED)


class GraderPerformanceTest(unittest.TestCase):
    """Grader.grade_lesson with stand-in phases: how often the performance phase runs, under
    which lock, and what the scoreboard says about other processes."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.env = mock.patch.dict(os.environ, {gpu_lock.LOCK_DIR_ENV: self.tmp.name})
        self.env.start()
        self.runs = []
        self.envs = []  # each run's environment, beside self.runs
        self.on_the_gpu = "nvidia-smi"  # else what gpu_processes.compute_apps gives around the timed phases

    def tearDown(self):
        self.env.stop()
        self.tmp.cleanup()

    def grade(self, *values, the_lesson=None, ncu=(None, "no ncu in this test"), no_counters=False, profiled=True,
              timing_cache=None, reference="reference", reference_value=1.0, counters_when_short=False,
              lessons=None, no_timing=False):
        """Grades helpers' lesson 01 with the student's performance phase giving `values` in turn;
        `ncu` is what counters.find_ncu finds, and a run under it writes NCU_LOG. `timing_cache`:
        ./grade --timing-cache; the reference's timed phase gives `reference_value`."""
        values = list(values)
        the_lesson = the_lesson or lesson()
        with mock.patch.object(counters, "find_ncu", return_value=ncu):
            grader = cli.Grader(Namespace(sanitize=False, no_timing=no_timing, timeout=None, no_sanitizer_check=True,
                                          no_counters=no_counters, timing_cache=timing_cache,
                                          counters_when_short=counters_when_short),
                                {}, {"01_vector_add": reference},
                                {"uuid": "GPU-test", "copy_bandwidth_gbps": 4000.0}, seed=1, tree="alice_1a2b3c4d")

        def run_phase(program, spec, **kwargs):
            wrapper = kwargs.get("wrapper")
            self.runs.append((wrapper[0] if wrapper else program, spec, grader.gpu.held))
            self.envs.append(kwargs.get("env", {}))
            if wrapper:
                self.profiled_env = kwargs["env"]
                Path(wrapper[wrapper.index("--log-file") + 1]).write_text(NCU_LOG)
                return phase(("passed", [], {}))
            if "~[perf]" in spec:  # every task the spec names passes (the lesson's tasks in one run)
                correct = phase(run_completed=True)
                correct.records = [{"event": "end", "test": f"test of {tag}", "tags": [tag], "outcome": "passed",
                                    "messages": [], "metrics": {}} for tag in re.findall(r"\[(task_\d+)\]", spec)]
                correct.in_tests_s = 0.25
                return correct
            result = perf(reference_value) if program == reference else perf(values.pop(0), profiled)
            result.pid = 555 if program == "student" else 556
            result.in_tests_s = 0.5 if program == "student" else 0.75
            result.run_completed = True
            return result

        if isinstance(self.on_the_gpu, tuple):  # what nvidia-smi answers at each question, in turn
            self.asked = []
            answers = list(self.on_the_gpu)
            listed = mock.patch.object(gpu_processes, "compute_apps",
                                       side_effect=lambda uuid: self.asked.append(uuid) or answers.pop(0))
        else:
            listed = (contextlib.nullcontext() if self.on_the_gpu == "nvidia-smi"
                      else mock.patch.object(gpu_processes, "compute_apps", return_value=self.on_the_gpu))
        with mock.patch.object(cli, "run_phase", run_phase), contextlib.redirect_stdout(io.StringIO()) as out, listed:
            if lessons:  # as ./grade grades several lessons (cli.main)
                self.lesson_results = grader.grade_lessons([(each, "student", None) for each in lessons])
                result = self.lesson_results[0]
            else:
                result = grader.grade_lesson(the_lesson, "student")
        self.lesson_result = result
        self.output = out.getvalue()
        self.notes = grader.notes
        return result.tasks[0].performance

    def timed(self):
        return [(program, held) for program, spec, held in self.runs if spec == "[task_1][perf]"]

    def test_correctness_is_shared_timing_exclusive_with_the_reference_right_before(self):
        self.grade(0.70)
        # The lesson's two tasks' correctness tests in one run, beside other gradings.
        self.assertEqual([(spec, held) for _, spec, held in self.runs if "~[perf]" in spec],
                         [("[task_1]~[perf],[task_2]~[perf]", "SH")])
        self.assertEqual(self.timed(), [("reference", "EX"), ("student", "EX")])

    def test_the_lesson_says_how_much_of_its_phases_was_inside_the_tests(self):
        self.on_the_gpu = []
        spent_before = gpu_lock.lock_seconds()["exclusive"]["held"]
        self.grade(0.70)
        detail = self.lesson_result.wall_detail_s
        correctness_runs = sum(1 for _, spec, _ in self.runs if "~[perf]" in spec)
        self.assertEqual(detail["correctness_in_tests"], 0.25 * correctness_runs)
        self.assertEqual((detail["performance_in_tests"], detail["reference_in_tests"]), (0.5, 0.75))
        # The timed phase held the GPU alone, and this process counted it.
        self.assertGreater(gpu_lock.lock_seconds()["exclusive"]["held"], spent_before)

    def test_every_lesson_is_checked_before_the_gpu_is_held_alone_once_for_all_timed_phases(self):
        """One hold alone per grading, not one per task: other gradings wait for it once, and it
        for their correctness phases once (grader/README.md, "One GPU, many gradings")."""
        second = lesson()
        second.slug = "02_multiply_add"
        log = Path(self.tmp.name) / "locks.log"
        with mock.patch.dict(os.environ, {gpu_lock.LOCK_LOG_ENV: str(log)}):
            self.grade(0.70, 0.70, lessons=[lesson(), second])
        specs = [spec for _, spec, _ in self.runs]
        self.assertLess(max(i for i, spec in enumerate(specs) if "~[perf]" in spec),
                        min(i for i, spec in enumerate(specs) if spec == "[task_1][perf]"))
        # (the stand-in reference is lesson 01's alone)
        self.assertEqual(self.timed(), [("reference", "EX"), ("student", "EX"), ("student", "EX")])
        held = [line.split()[:2] for line in log.read_text().splitlines()]
        self.assertEqual([mode for event, mode in held if event == "acquire"].count("EX"), 1, held)
        self.assertEqual([len(r.tasks) for r in self.lesson_results], [2, 2])
        self.assertTrue(all(r.tasks[0].performance.status == "passed" for r in self.lesson_results))

    def test_nothing_to_time_takes_the_gpu_alone_never(self):
        log = Path(self.tmp.name) / "locks.log"
        with mock.patch.dict(os.environ, {gpu_lock.LOCK_LOG_ENV: str(log)}):
            self.grade(lessons=[lesson()], no_timing=True)
        self.assertNotIn("EX", log.read_text())
        self.assertEqual(self.timed(), [])

    def test_nvidia_smi_is_asked_as_the_hold_begins_and_after_each_task_and_each_task_names_what_it_saw(self):
        """Within one hold, a task's "before" is what was seen as the task before it ended."""
        second = lesson()
        second.slug = "02_multiply_add"
        trainer = [(777, "python3 train.py")]
        self.on_the_gpu = ([], [], trainer)  # as the hold begins, after lesson 01's task 1, after 02's
        self.grade(0.70, 0.70, lessons=[lesson(), second])
        self.assertEqual(self.asked, ["GPU-test"] * 3)
        first, later = (r.tasks[0].performance.summary for r in self.lesson_results)
        self.assertNotIn("other process", first)
        self.assertIn("1 other process was using the GPU (pid 777", later)
        self.on_the_gpu = (trainer, [], [])  # seen as the hold began: the first task only
        self.grade(0.70, 0.70, lessons=[lesson(), second])
        first, later = (r.tasks[0].performance.summary for r in self.lesson_results)
        self.assertIn("pid 777", first)
        self.assertNotIn("other process", later)

    def test_an_error_inside_the_hold_lets_the_gpu_go(self):
        grader = cli.Grader(Namespace(sanitize=False, no_timing=False, timeout=None, no_sanitizer_check=True,
                                      no_counters=True, timing_cache=None, counters_when_short=False),
                            {}, None, {"uuid": "GPU-test"}, seed=1)
        with mock.patch.object(gpu_processes, "compute_apps", return_value=[]):
            with self.assertRaises(KeyboardInterrupt):
                with grader.alone():
                    self.assertEqual(grader.gpu.held, "EX")
                    raise KeyboardInterrupt
            self.assertIsNone(grader.gpu.held)
            with grader.alone() as hold:  # a new hold, not the broken one's
                self.assertEqual((grader.gpu.held, hold.seen), ("EX", []))

    def test_correctness_that_compares_timings_is_checked_in_the_hold_alone(self):
        timed_lesson = lesson()
        timed_lesson.tasks[0].correctness_timed = True
        log = Path(self.tmp.name) / "locks.log"
        with mock.patch.dict(os.environ, {"WORKBOOK_LOCK_LOG": str(log)}):
            self.grade(0.70, the_lesson=timed_lesson)
        # Task 2's correctness beside other gradings; then, in one hold of the GPU alone, task 1's
        # correctness and its timing: the other gradings wait for this one once, not twice.
        self.assertEqual([(spec, held) for _, spec, held in self.runs],
                         [("[task_2]~[perf]", "SH"), ("[task_1]~[perf]", "EX"), ("[task_1][perf]", "EX"),
                          ("[task_1][perf]", "EX")])
        self.assertEqual([line.split()[:2] for line in log.read_text().splitlines()],
                         [["acquire", "SH"], ["release", "SH"], ["acquire", "EX"], ["release", "EX"]])

    def test_with_a_timing_cache_the_reference_is_timed_once_and_its_figure_reused(self):
        self.on_the_gpu = []  # nothing else on the GPU
        cache = str(Path(self.tmp.name) / "class" / "timing_cache.json")
        reference = Path(self.tmp.name) / "grade_01_vector_add__solutions"
        reference.write_text("a program")
        first = self.grade(0.80, timing_cache=cache, reference=str(reference), reference_value=1.0)
        self.assertEqual(self.timed(), [(str(reference), "EX"), ("student", "EX")])
        self.assertIn("80% of the reference", first.summary)
        for value in (0.60, 0.90):  # the next gradings: the student alone is timed
            self.runs = []
            later = self.grade(value, timing_cache=cache, reference=str(reference), reference_value=0.5)
            self.assertEqual(self.timed(), [("student", "EX")])
            self.assertIn(f"{value:.0%} of the reference", later.summary)  # against the kept 1.0, not 0.5
        os.utime(reference, ns=(1, 1))  # a rebuilt reference is timed again
        self.runs = []
        self.assertIn("160% of the reference", self.grade(0.80, timing_cache=cache, reference=str(reference),
                                                          reference_value=0.5).summary)
        self.assertEqual(self.timed(), [(str(reference), "EX"), ("student", "EX")])

    def test_a_second_measurement_in_the_same_hold_times_the_reference_again(self):
        self.on_the_gpu = []
        cache = str(Path(self.tmp.name) / "class" / "timing_cache.json")
        reference = Path(self.tmp.name) / "grade_01_vector_add__solutions"
        reference.write_text("a program")
        self.grade(0.40, 0.45, timing_cache=cache, reference=str(reference))  # below the threshold: twice
        self.assertEqual(self.timed(), [(str(reference), "EX"), ("student", "EX")] * 2)
        entry = next(iter(json.loads(Path(cache).read_text())["entries"].values()))
        self.assertEqual(entry["measurements"], 2)

    def test_a_failed_or_disturbed_timing_of_the_reference_is_not_kept(self):
        cache = str(Path(self.tmp.name) / "timing_cache.json")
        reference = Path(self.tmp.name) / "grade_01_vector_add__solutions"
        reference.write_text("a program")
        kept = lambda: json.loads(Path(cache).read_text())["entries"] if Path(cache).exists() else {}  # noqa: E731
        self.on_the_gpu = []
        with mock.patch.object(cli, "reference_usable", return_value=False):
            self.grade(0.80, timing_cache=cache, reference=str(reference))
        self.assertEqual(kept(), {})
        self.on_the_gpu = [(4321, "someone_else")]  # another process on the GPU while it was timed
        self.grade(0.80, timing_cache=cache, reference=str(reference))
        self.assertEqual(kept(), {})
        self.on_the_gpu = None  # nvidia-smi could not say
        self.grade(0.80, timing_cache=cache, reference=str(reference))
        self.assertEqual(kept(), {})
        self.on_the_gpu = []
        self.grade(0.80, timing_cache=cache, reference=str(reference))
        self.assertEqual(len(kept()), 1)  # the same call keeps it when all is well

    def yardsticks_given(self):
        """What each timed run of task 1 was given as its yardsticks (WORKBOOK_YARDSTICKS), in order."""
        return [(run[0], env.get(cli.YARDSTICKS_ENV)) for run, env in zip(self.runs, self.envs)
                if run[1] == "[task_1][perf]"]

    def test_the_student_is_given_the_references_figures_as_yardsticks_and_the_reference_none(self):
        self.grade(0.80, reference_value=0.5)
        given = self.yardsticks_given()
        self.assertEqual([program for program, _ in given], ["reference", "student"])
        self.assertIsNone(given[0][1])  # the reference times its own
        self.assertEqual(dict(item.split("=") for item in given[1][1].split(",")),
                         {"fraction_of_copy_bandwidth": "0.5", "gbps": "2000.0", counters.PROFILED_BYTES: "201326592.0"})

    def test_a_kept_reference_figure_is_given_and_an_unusable_reference_gives_nothing(self):
        self.on_the_gpu = []
        cache = str(Path(self.tmp.name) / "timing_cache.json")
        reference = Path(self.tmp.name) / "grade_01_vector_add__solutions"
        reference.write_text("a program")
        self.grade(0.80, timing_cache=cache, reference=str(reference), reference_value=0.5)
        self.runs, self.envs = [], []
        self.grade(0.80, timing_cache=cache, reference=str(reference), reference_value=0.9)  # kept: not run
        self.assertEqual([program for program, _ in self.yardsticks_given()], ["student"])
        self.assertIn("gbps=2000.0", self.yardsticks_given()[0][1])  # the kept figures, not 0.9's
        self.runs, self.envs = [], []
        with mock.patch.object(cli, "reference_usable", return_value=False):
            self.grade(0.80, reference_value=0.5)
        self.assertEqual(self.yardsticks_given(), [("reference", None), ("student", None)])

    def test_the_second_measurement_times_the_reference_again_whatever_the_cache_holds(self):
        """A figure below its threshold is judged again against yardsticks timed right before it,
        and the new figures are kept (the cache's drift follows them)."""
        self.on_the_gpu = []
        cache = str(Path(self.tmp.name) / "timing_cache.json")
        reference = Path(self.tmp.name) / "grade_01_vector_add__solutions"
        reference.write_text("a program")
        self.grade(0.80, timing_cache=cache, reference=str(reference), reference_value=1.0)  # kept: 1.0
        self.runs, self.envs = [], []
        self.grade(0.40, 0.45, timing_cache=cache, reference=str(reference), reference_value=0.5)
        self.assertEqual(self.timed(), [("student", "EX"), (str(reference), "EX"), ("student", "EX")])
        first, second = [env for program, env in self.yardsticks_given() if program == "student"]
        self.assertIn("gbps=4000.0", first)   # the kept figures
        self.assertIn("gbps=2000.0", second)  # timed again just before
        entry = next(iter(json.loads(Path(cache).read_text())["entries"].values()))
        self.assertEqual((entry["measurements"], entry["metrics"]["gbps"]), (2, 2000.0))

    def test_the_counters_run_is_given_the_yardsticks_the_timed_run_took(self):
        self.grade(0.40, 0.45, ncu=("/cuda/bin/ncu", ""), reference_value=0.5)
        # The better timed run's figures (the stand-in's own gbps), among them, in a real grader
        # program, the yardsticks it took (grader::yardstick records each).
        self.assertIn("gbps=1800.0", self.profiled_env.get(cli.YARDSTICKS_ENV, ""))

    def test_yardsticks_are_finite_positive_numbers_under_plain_names(self):
        self.assertEqual(cli.yardsticks_env({}), {})
        self.assertEqual(cli.yardsticks_env({"cublas_gflops": 51234.5, "host_api_ms": 3}),
                         {cli.YARDSTICKS_ENV: "cublas_gflops=51234.5,host_api_ms=3.0"})
        for bad in ({"x": float("nan")}, {"x": float("inf")}, {"x": 0.0}, {"x": -1.0}, {"x": True}, {"x": "7"},
                    {"a,b": 1.0}, {"a=b": 1.0}, {"": 1.0}, {"x": 10 ** 400}):
            self.assertEqual(cli.yardsticks_env(bad), {}, bad)
        self.assertEqual(cli.yardsticks_env({"tiny": 1e-300}), {cli.YARDSTICKS_ENV: "tiny=1e-300"})
        # Several tasks' in one run: each figure under its task's tag (grader::yardstick reads it first).
        self.assertEqual(cli.tasks_yardsticks_env({"task_4": {"host_api_ms": 20}, "task_1": {"host_api_ms": 10},
                                                   "task_2": {"x": float("nan")}}),
                         {cli.YARDSTICKS_ENV: "task_1.host_api_ms=10.0,task_4.host_api_ms=20.0"})
        self.assertEqual(cli.tasks_yardsticks_env({"task_1": {}}), {})

    def test_only_a_reference_run_that_ended_cleanly_is_usable(self):
        good = perf(1.0)
        good.run_completed = True
        self.assertTrue(cli.reference_usable(good))
        for change in ({"run_completed": False}, {"forged_lines": 1}, {"timed_out": True}, {"returncode": 1}):
            bad = perf(1.0)
            bad.run_completed = True
            for name, value in change.items():
                setattr(bad, name, value)
            self.assertFalse(cli.reference_usable(bad), change)
        failed = phase(("failed", ["no"], {"gbps": 1.0}))
        failed.run_completed = True
        self.assertFalse(cli.reference_usable(failed))
        empty = phase(("passed", [], {}))
        empty.run_completed = True
        self.assertFalse(cli.reference_usable(empty))

    def test_a_figure_below_the_threshold_is_measured_again(self):
        performance = self.grade(0.58, 0.62)
        self.assertEqual(self.timed(), [("reference", "EX"), ("student", "EX")] * 2)
        self.assertEqual(performance.status, scoring.PASSED)
        self.assertIn("58.0% then 62.0%", performance.details)
        self.assertIn("measuring again", self.output)

    def test_a_figure_above_is_measured_once_one_below_twice_and_fails_when_both_are(self):
        for values, status, runs in [((0.80,), scoring.PASSED, 2), ((0.40, 0.41), scoring.FAILED, 4)]:
            self.runs = []
            self.assertEqual(self.grade(*values).status, status)
            self.assertEqual(len(self.timed()), runs)

    def test_a_figure_below_the_threshold_gets_the_counters_of_its_timed_test_alone_on_the_gpu(self):
        performance = self.grade(0.40, 0.40, ncu=("/cuda/bin/ncu", ""))
        self.assertEqual([(program, held) for program, spec, held in self.runs if spec == "[task_1][perf]"],
                         [("reference", "EX"), ("student", "EX")] * 2 + [("/cuda/bin/ncu", "EX")])
        self.assertEqual(self.profiled_env["WORKBOOK_PROFILE"], "1")
        self.assertEqual(performance.status, scoring.FAILED)
        self.assertIn("Things to check", performance.details)  # these counters prove no cause
        self.assertIn("Counters of the timed call (Nsight Compute)", performance.details)
        self.assertIn("  vector_add <<<(4096, 1, 1), (256, 1, 1)>>>:\n    - global loads: 32.0 sectors", performance.details)
        self.assertIn("counters_s", performance.metrics)
        self.assertIn("profiling, ", self.output)
        # Beside what the profiled call must move, as its test recorded it (counters.PROFILED_BYTES).
        self.assertIn("DRAM: 201.3 MB read and written (1.00 x the 201.3 MB the task must move)", performance.details)

    def test_a_timed_test_without_a_profiled_range_is_not_profiled(self):
        # Lesson 05's pipelines are timed by the host's clock and open no range: ncu would find nothing.
        performance = self.grade(0.40, 0.40, ncu=("/cuda/bin/ncu", ""), profiled=False)
        self.assertNotIn("/cuda/bin/ncu", [program for program, _, _ in self.runs])
        self.assertNotIn("counters", performance.details.lower())

    def test_a_pass_a_figure_not_measured_and_no_counters_are_not_profiled(self):
        self.grade(0.80, ncu=("/cuda/bin/ncu", ""))
        self.assertNotIn("/cuda/bin/ncu", [program for program, _, _ in self.runs])
        self.runs = []
        performance = self.grade(0.40, 0.40, ncu=("/cuda/bin/ncu", ""), no_counters=True)
        self.assertNotIn("/cuda/bin/ncu", [program for program, _, _ in self.runs])
        self.assertNotIn("Counters", performance.details)

    def test_a_task_that_shows_its_counters_always_is_profiled_when_it_passes_too(self):
        always = lesson()
        always.tasks[0].counters_always = True
        performance = self.grade(0.80, the_lesson=always, ncu=("/cuda/bin/ncu", ""))
        self.assertEqual(performance.status, scoring.PASSED)
        self.assertIn("/cuda/bin/ncu", [program for program, _, _ in self.runs])
        self.assertEqual(performance.extra_data.get("counters"), "shown")
        self.assertIn("Counters of the timed call (Nsight Compute), each beside its ideal:", performance.details)
        self.assertNotIn("Hint [", performance.details)  # causes explain a shortfall; there is none

    def test_counters_when_short_leaves_out_a_pass_of_a_task_that_shows_them_always_but_not_a_shortfall(self):
        always = lesson()
        always.tasks[0].counters_always = True
        performance = self.grade(0.80, the_lesson=always, ncu=("/cuda/bin/ncu", ""), counters_when_short=True)
        self.assertEqual(performance.status, scoring.PASSED)
        self.assertNotIn("/cuda/bin/ncu", [program for program, _, _ in self.runs])
        self.assertNotIn("counters", performance.extra_data)
        self.assertEqual([n for n in self.notes if "counters" in n],
                         ["No counters on the tasks that show them on every grade: they are left out where the task "
                          "passed (--counters-when-short; ./grade alone shows them)."])
        self.runs = []
        performance = self.grade(0.40, 0.40, the_lesson=always, ncu=("/cuda/bin/ncu", ""), counters_when_short=True)
        self.assertIn("/cuda/bin/ncu", [program for program, _, _ in self.runs])  # a shortfall is profiled

    def test_without_ncu_a_passed_task_that_shows_counters_says_so_once_for_the_run(self):
        always = lesson()
        always.tasks[0].counters_always = True
        performance = self.grade(0.80, the_lesson=always)
        self.assertEqual(performance.status, scoring.PASSED)
        self.assertNotIn("No counters", performance.details)
        self.assertNotIn("counters", performance.extra_data)
        self.assertEqual([n for n in self.notes if "counters" in n],
                         ["No counters on the tasks that show them on every grade: no ncu in this test."])

    def test_without_ncu_the_verdict_says_so_in_one_line(self):
        performance = self.grade(0.40, 0.40)
        self.assertIn("\nNo counters: no ncu in this test.", performance.details)
        self.assertEqual(len(self.timed()), 4)

    def test_other_processes_on_the_gpu_are_named_but_not_ours(self):
        with FakeNvidiaSmi() as smi:
            smi.say(f"{os.getpid()}, python3, 100\n555, grade_01_vector_add__alice, 300\n4321, /opt/bob/train, 9000\n")
            performance = self.grade(0.70)
            self.assertEqual(len(smi.calls), 2)  # before and after the timed phases
        self.assertIn("· 1 other process was using the GPU (pid 4321 train): timings may be low", performance.summary)


if __name__ == "__main__":
    unittest.main()


# Two timed tasks whose tests both take a yardstick named host_api_ms (as lesson 07's tasks 1 and 4
# do), with different figures; task 3 is not timed.
TWO_TIMED = {"lessons": [{
    "slug": "07_monte_carlo", "title": "Monte Carlo", "sources": ["monte_carlo.cu"], "timeout_s": 40,
    "tasks": [
        {"id": 1, "title": "pi", "points": {"correctness": 3, "performance": 2},
         "performance": {"metric": "fraction_of_copy_bandwidth", "threshold": 0.6}},
        {"id": 2, "title": "walkers", "points": {"correctness": 3, "performance": 2},
         "performance": {"metric": "fraction_of_copy_bandwidth", "threshold": 0.6}},
        {"id": 3, "title": "histogram", "points": {"correctness": 3}},
    ]}]}


class FakeParked:
    """cli.ParkedRun's stand-in: records its start (under which hold of the lock), parks as the
    test says (test.parks), and on go() runs the test's run_phase, noting the hold then."""

    def __init__(self, test, grader, program, spec, *, seed, env):
        self.test, self.grader = test, grader
        self.program, self.test_spec, self.env, self.pid = program, spec, dict(env), 4242
        self.before_gate_s = 0.25
        self.closed = False
        self.parked_at = None
        test.parked_runs.append(self)
        test.events.append(("start", spec, grader.gpu.held))

    @staticmethod
    def wait_all(runs):  # cli.wait_all_parked's stand-in
        for run, _ in runs:
            run.test.events.append(("parked?", run.test_spec, run.grader.gpu.held))
            run.parked_at = 1.0 if run.test.parks else None

    def still_parked(self):
        return not self.closed

    def go(self, timeout_s, test_limit_s=None):
        self.test.events.append(("go", self.test_spec, self.grader.gpu.held))
        self.test.runs.append(("parked", self.test_spec, self.grader.gpu.held, self.env.get(cli.YARDSTICKS_ENV, ""),
                               test_limit_s))
        result = self.test.run_phase(self.program, self.test_spec, env=self.env, test_limit_s=test_limit_s)
        self.test.runs.pop()  # run_phase noted it too: once, as the parked run
        result.before_gate_s = self.before_gate_s
        result.in_tests_before_gate_s = 0.2
        if self.test.parked_test_seconds is not None:
            result.record_seconds = list(self.test.parked_test_seconds)
        return result

    def close(self):
        self.closed = True
        self.test.events.append(("close", self.test_spec, self.grader.gpu.held))


class TimedTogetherBase(unittest.TestCase):
    """A lesson of two timed tasks graded with stand-in phases (grade)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.env = mock.patch.dict(os.environ, {gpu_lock.LOCK_DIR_ENV: self.tmp.name})
        self.env.start()
        self.runs = []  # (program, spec, held, env's yardsticks, test_limit_s)
        self.reference = "reference"
        self.reference_records = lambda records: records  # what the reference's timed run reports
        self.parked_runs, self.events, self.parks = [], [], True  # --park-timed (FakeParked)
        self.parked_test_seconds = None  # the parked run's tests' seconds, when not the student's

    def tearDown(self):
        self.env.stop()
        self.tmp.cleanup()

    def grade(self, student, timing_cache=None, park_timed=False):
        """`student(tags)`: the student's timed run of those tasks (tags), as records; the reference
        gives 0.9 of the copy bandwidth and host_api_ms 10 times the task's number."""
        grader = cli.Grader(Namespace(sanitize=False, no_timing=False, timeout=None, no_sanitizer_check=True,
                                      no_counters=True, timing_cache=timing_cache, park_timed=park_timed),
                            {}, {"07_monte_carlo": self.reference}, {"uuid": "GPU-test", "copy_bandwidth_gbps": 4000.0},
                            seed=1, tree="alice_1a2b3c4d")

        def run_phase(program, spec, **kwargs):
            tags = re.findall(r"\[(task_\d+)\]", spec)
            program = "reference" if program == self.reference else program
            self.runs.append((program, spec, grader.gpu.held, kwargs["env"].get(cli.YARDSTICKS_ENV, ""),
                              kwargs.get("test_limit_s")))
            if "~[perf]" in spec:
                records = [(tag, "passed", {}) for tag in tags]
                result = phase(run_completed=True, elapsed_s=1.0)
            elif program == "reference":
                records = self.reference_records([(tag, "passed", {"fraction_of_copy_bandwidth": 0.9,
                                                                   "host_api_ms": 10.0 * int(tag[5:])}) for tag in tags])
                failed = any(outcome == "failed" for _, outcome, _ in records)
                result = phase(run_completed=True, elapsed_s=2.0, in_tests_s=1.0, returncode=42 if failed else 0)
            else:
                result = student(tags)
                records = result.records
                result.records = []
            seconds = getattr(result, "record_seconds_given", [0.5] * len(records))
            for (tag, outcome, metrics), took in zip(records, seconds):
                result.records.append({"event": "end", "test": f"timed {tag}", "tags": [tag], "outcome": outcome,
                                       "messages": [], "metrics": dict(metrics)})
                result.record_seconds.append(took)
            return result

        self.run_phase = run_phase
        with mock.patch.object(cli, "run_phase", run_phase), contextlib.redirect_stdout(io.StringIO()), \
                mock.patch.object(gpu_processes, "compute_apps", return_value=[]), \
                mock.patch.object(cli, "ParkedRun", partial(FakeParked, self, grader)), \
                mock.patch.object(cli, "wait_all_parked", FakeParked.wait_all):
            self.result = grader.grade_lesson(parse_manifest(TWO_TIMED)[0], "student")
        self.grader = grader
        return {t.task.id: t.performance for t in self.result.tasks}

    @staticmethod
    def student_run(values, **fields):
        def student(tags):
            result = phase(elapsed_s=3.0, in_tests_s=1.0, **dict({"run_completed": True}, **fields))
            result.records = [(tag, "passed", {"fraction_of_copy_bandwidth": values[tag]}) for tag in tags]
            return result
        return student

    def timed(self):
        return [(program, spec, held) for program, spec, held, _, _ in self.runs if "~[perf]" not in spec]


class TimedTogetherTest(TimedTogetherBase):
    """A lesson's timed tasks in one hold alone and one process each for the reference and the
    student (cli.Grader._timed_together): each task given its own yardsticks, judged by its own
    records; a run that did not end normally gives nothing but a hung test's timeout."""

    def test_one_run_each_alone_every_task_with_its_own_yardsticks_and_verdict(self):
        performance = self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}))
        both = "[task_1][perf],[task_2][perf]"
        self.assertEqual(self.timed(), [("reference", both, "EX"), ("student", both, "EX")])
        student = next(r for r in self.runs if r[0] == "student" and "~[perf]" not in r[1])
        # host_api_ms: 10 for task 1, 20 for task 2, each under its task's name.
        self.assertIn("task_1.host_api_ms=10.0", student[3])
        self.assertIn("task_2.host_api_ms=20.0", student[3])
        self.assertNotIn(",host_api_ms=", "," + student[3])
        self.assertEqual(student[4], 40)  # each test held to the lesson's limit
        self.assertEqual(performance[1].metrics["fraction_of_copy_bandwidth"], 0.8)
        self.assertEqual(performance[2].metrics["fraction_of_copy_bandwidth"], 0.7)
        self.assertEqual((performance[1].status, performance[2].status), (scoring.PASSED, scoring.PASSED))
        self.assertIsNone(performance[3])
        # The two runs' whole seconds, once.
        self.assertEqual((self.result.wall_s["performance"], self.result.wall_s["reference"]), (3.0, 2.0))

    def test_a_task_below_its_threshold_is_measured_again_alone(self):
        self.grade(self.student_run({"task_1": 0.8, "task_2": 0.5}))
        self.assertEqual(self.timed()[2:], [("reference", "[task_2][perf]", "EX"), ("student", "[task_2][perf]", "EX")])

    def test_a_run_that_did_not_end_normally_gives_nothing_each_task_is_timed_alone(self):
        crashed = self.student_run({"task_1": 0.8, "task_2": 0.7}, run_completed=False, returncode=-11)
        alone = self.student_run({"task_1": 0.8, "task_2": 0.7})
        performance = self.grade(lambda tags: crashed(tags) if len(tags) > 1 else alone(tags))
        self.assertEqual([spec for program, spec, _ in self.timed() if program == "student"],
                         ["[task_1][perf],[task_2][perf]", "[task_1][perf]", "[task_2][perf]"])
        self.assertEqual((performance[1].status, performance[2].status), (scoring.PASSED, scoring.PASSED))

    def test_a_hung_test_times_its_task_out_the_other_is_timed_alone(self):
        def hung(tags):
            result = phase(elapsed_s=45.0, timed_out=True, test_over_limit=True, timeout_s=40.0)
            result.records = [("task_1", "passed", {"fraction_of_copy_bandwidth": 0.8})]
            result.unfinished_test, result.unfinished_tags = "timed task_2", ["task_2"]
            return result
        calls = []

        def student(tags):
            calls.append(tags)
            return hung(tags) if len(tags) > 1 else self.student_run({"task_1": 0.8})(tags)
        performance = self.grade(student)
        self.assertEqual(calls, [["task_1", "task_2"], ["task_1"]])
        self.assertEqual(performance[2].status, scoring.TIMED_OUT)
        self.assertEqual(performance[1].status, scoring.PASSED)

    def test_a_failed_timed_test_is_timed_again_alone_another_tasks_error_never_decides(self):
        def together_then_alone(tags):
            result = self.student_run({"task_1": 0.8, "task_2": 0.7})(tags)
            if len(tags) > 1:  # task 2's test failed there (say, task 1's code left a sticky error)
                result.records[1] = ("task_2", "failed", {})
                result.returncode = 42
                result.output_tail = "cudaErrorIllegalAddress"
            return result
        performance = self.grade(together_then_alone)
        self.assertEqual([spec for program, spec, _ in self.timed() if program == "student"],
                         ["[task_1][perf],[task_2][perf]", "[task_2][perf]"])
        self.assertEqual((performance[1].status, performance[2].status), (scoring.PASSED, scoring.PASSED))
        self.assertEqual(performance[2].metrics["fraction_of_copy_bandwidth"], 0.7)

    def test_a_task_whose_timed_tests_took_over_half_the_limit_is_timed_alone(self):
        def slow(tags):
            result = self.student_run({"task_1": 0.8, "task_2": 0.7})(tags)
            result.record_seconds_given = [0.5, 25.0]
            return result
        self.grade(slow)
        self.assertEqual([spec for program, spec, _ in self.timed() if program == "student"],
                         ["[task_1][perf],[task_2][perf]", "[task_2][perf]"])

    def test_one_failed_reference_test_leaves_the_others_usable(self):
        def reference_fails_task_2(records):
            return [(tag, "failed" if tag == "task_2" else outcome, metrics) for tag, outcome, metrics in records]
        self.reference_records = reference_fails_task_2
        self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}))
        student = next(r for r in self.runs if r[0] == "student" and "~[perf]" not in r[1])
        self.assertIn("task_1.host_api_ms=10.0", student[3])
        self.assertNotIn("task_2.", student[3])

    def test_the_timing_cache_gives_what_it_has_the_reference_times_the_rest(self):
        cache = os.path.join(self.tmp.name, "timings.json")
        self.reference = os.path.join(self.tmp.name, "reference")
        Path(self.reference).write_text("a build of the reference")  # the cache keeps figures per build
        self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache)
        self.runs.clear()
        self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache)
        self.assertEqual(self.timed(), [("student", "[task_1][perf],[task_2][perf]", "EX")])  # both kept
        self.assertIn("task_2.host_api_ms=20.0", self.runs[-1][3])
        uses = {k[-1]: v["uses"] for k, v in json.loads(Path(cache).read_text())["entries"].items()}
        self.assertEqual(uses, {"1": 1, "2": 1})
        # Task 2 timed alone after the lesson's run (below: too slow there): the figure the cache
        # gave that run is handed on, not taken (counted) again.
        self.runs.clear()

        def slow_2(tags):
            result = self.student_run({"task_1": 0.8, "task_2": 0.7})(tags)
            result.record_seconds_given = [0.5, 25.0] if len(tags) > 1 else [0.5]
            return result
        self.grade(slow_2, timing_cache=cache)
        self.assertEqual(self.timed(), [("student", "[task_1][perf],[task_2][perf]", "EX"), ("student", "[task_2][perf]", "EX")])
        uses = {k[-1]: v["uses"] for k, v in json.loads(Path(cache).read_text())["entries"].items()}
        self.assertEqual(uses, {"1": 2, "2": 2})
        # Task 2's figures dropped from the cache: the reference times task 2 alone.
        data = json.loads(Path(cache).read_text())
        del data["entries"][next(k for k in data["entries"] if k.endswith("/2"))]
        Path(cache).write_text(json.dumps(data))
        self.runs.clear()
        self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache)
        self.assertEqual([spec for program, spec, _ in self.timed()], ["[task_2][perf]", "[task_1][perf],[task_2][perf]"])
        self.assertIn("task_1.host_api_ms=10.0", self.runs[-1][3])


class ParkTimedTest(TimedTogetherBase):
    """./grade --park-timed (./grade-class where gradings share a GPU): a lesson's timed run
    started before the hold alone, the GPU held shared meanwhile, and let go on inside the hold with
    the very tests and environment the hold would run; anything else runs as without it."""

    both = "[task_1][perf],[task_2][perf]"

    def warm_cache(self):
        cache = os.path.join(self.tmp.name, "timings.json")
        self.reference = os.path.join(self.tmp.name, "reference")
        Path(self.reference).write_text("a build of the reference")
        self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache)  # the reference timed
        self.runs.clear()
        self.events.clear()
        return cache

    def test_started_shared_before_the_hold_and_let_go_on_inside_it_with_the_holds_environment(self):
        cache = self.warm_cache()
        performance = self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache,
                                 park_timed=True)
        self.assertEqual(self.events, [("start", self.both, "SH"), ("parked?", self.both, "SH"),
                                       ("go", self.both, "EX"), ("close", self.both, "EX")])
        self.assertEqual(self.timed(), [("parked", self.both, "EX")])  # the only timed run: no reference, no rerun
        parked = self.runs[-1]
        self.assertIn("task_1.host_api_ms=10.0", parked[3])
        self.assertIn("task_2.host_api_ms=20.0", parked[3])
        self.assertEqual(parked[4], 40)
        self.assertEqual((performance[1].status, performance[2].status), (scoring.PASSED, scoring.PASSED))
        # Before the gate, beside others; the rest in the hold.
        self.assertEqual(self.result.wall_s["timed_setup"], 0.25)
        self.assertEqual(self.result.wall_s["performance"], 2.75)
        self.assertEqual(self.result.wall_detail_s["performance_in_tests"], 0.8)  # 1.0, of which 0.2 before the gate
        self.assertEqual(self.grader.parked_counts, {"started": 1, "parked": 1, "used": 1})
        # The cache's figures were taken once for this grading, by the parking.
        uses = {k[-1]: v["uses"] for k, v in json.loads(Path(cache).read_text())["entries"].items()}
        self.assertEqual(uses, {"1": 1, "2": 1})

    def test_without_the_references_figures_nothing_is_parked(self):
        self.reference = os.path.join(self.tmp.name, "reference")
        Path(self.reference).write_text("a build of the reference")
        self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}),
                   timing_cache=os.path.join(self.tmp.name, "timings.json"), park_timed=True)
        self.assertEqual(self.events, [])
        self.assertEqual(self.timed(), [("reference", self.both, "EX"), ("student", self.both, "EX")])

    def test_a_run_that_did_not_park_is_stopped_and_the_hold_runs_it(self):
        cache = self.warm_cache()
        self.parks = False
        self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache, park_timed=True)
        self.assertEqual([e[0] for e in self.events], ["start", "parked?", "close"])
        self.assertEqual(self.timed(), [("student", self.both, "EX")])
        self.assertEqual(self.grader.parked_counts, {"started": 1, "parked": 0, "used": 0})
        self.assertNotIn("timed_setup", self.result.wall_s)

    def test_a_parked_run_whose_environment_is_not_the_holds_is_stopped_unused(self):
        cache = self.warm_cache()
        real = cli.Grader._timed_run
        calls = []

        def other_env(grader, lesson, tasks, figures):  # the parked run's environment, not the hold's
            spec, env, limit, test_limit = real(grader, lesson, tasks, figures)
            calls.append(spec)
            return spec, (dict(env, WORKBOOK_SOMETHING="else") if len(calls) == 1 else env), limit, test_limit
        with mock.patch.object(cli.Grader, "_timed_run", other_env):
            self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache, park_timed=True)
        self.assertEqual([e[0] for e in self.events], ["start", "parked?", "close"])
        self.assertEqual(self.timed(), [("student", self.both, "EX")])
        self.assertEqual(self.grader.parked_counts["used"], 0)
        self.assertEqual(calls, [self.both, self.both])  # parked, then the hold's own

    def test_a_run_that_is_not_wanted_after_all_is_stopped_when_the_grading_ends(self):
        cache = self.warm_cache()
        def without_parked(grader, program, lesson, tasks, figures):
            spec, env, _, test_limit_s = grader._timed_run(lesson, tasks, figures)
            return self.run_phase(program, spec, env=env, test_limit_s=test_limit_s)
        with mock.patch.object(cli.Grader, "_run_timed", without_parked):
            self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache, park_timed=True)
        self.assertEqual([e[0] for e in self.events], ["start", "parked?", "close"])
        self.assertTrue(self.parked_runs[0].closed)
        self.assertEqual(os.listdir(self.grader.gpu.parked_dir), [])  # unmarked

    def test_parked_programs_are_not_others_on_the_gpu(self):
        lock = gpu_lock.GpuLock("GPU-test")
        lock.mark_parked(os.getpid())
        lock.mark_parked(999999999)  # not running: not counted
        self.assertEqual(lock.parked(), {os.getpid()})
        grader = cli.Grader(Namespace(sanitize=False, no_timing=False, timeout=None, no_sanitizer_check=True,
                                      no_counters=True, timing_cache=None),
                            {}, {}, {"uuid": "GPU-test", "copy_bandwidth_gbps": 4000.0}, seed=1, tree="bob")
        with mock.patch.object(gpu_processes, "compute_apps", return_value=[(os.getpid(), "grade_03"), (7, "train")]):
            self.assertEqual(grader._who_else(), [(7, "train")])
        lock.unmark_parked(os.getpid())
        self.assertEqual(lock.parked(), set())

    def test_a_test_whose_own_seconds_passed_the_per_test_limit_is_run_again_in_the_hold(self):
        # Alone, a test over the limit would have been stopped; the parked run's watch counts from go.
        cache = self.warm_cache()
        self.parked_test_seconds = [0.5, 41.0]
        self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache, park_timed=True)
        self.assertEqual([e[0] for e in self.events], ["start", "parked?", "go", "close"])
        self.assertEqual([r[0] for r in self.runs if "~[perf]" not in r[1]][:2], ["parked", "student"])
        self.assertEqual(self.grader.parked_counts["used"], 0)

    def test_nothing_parks_without_the_copy_bandwidth_in_the_cache(self):
        cache = self.warm_cache()
        grader = cli.Grader(Namespace(sanitize=False, no_timing=False, timeout=None, no_sanitizer_check=True,
                                      no_counters=True, timing_cache=cache, park_timed=True),
                            {}, {}, {"uuid": "GPU-test"}, seed=1, tree="bob")  # no bandwidth given
        with mock.patch.object(cli, "ParkedRun", side_effect=AssertionError("started")), \
                contextlib.redirect_stdout(io.StringIO()):
            grader._park([cli.LessonCheck(parse_manifest(TWO_TIMED)[0], "student")])
        self.assertFalse(grader._bandwidth_asked)

    def test_a_lesson_with_a_task_still_to_check_in_the_hold_is_not_parked(self):
        cache = self.warm_cache()
        grader = cli.Grader(Namespace(sanitize=False, no_timing=False, timeout=None, no_sanitizer_check=True,
                                      no_counters=True, timing_cache=cache, park_timed=True),
                            {}, {"07_monte_carlo": self.reference}, {"uuid": "GPU-test", "copy_bandwidth_gbps": 4000.0},
                            seed=1, tree="bob")
        lesson = parse_manifest(TWO_TIMED)[0]
        check = cli.LessonCheck(lesson, "student", deferred=[lesson.tasks[0]])
        check.verdicts = {t.id: scoring.ComponentResult("correctness", scoring.PASSED, 3, 3, "passed")
                         for t in lesson.tasks}
        with mock.patch.object(cli, "ParkedRun", side_effect=AssertionError("started")):
            grader._park([check])

    def test_an_error_in_the_hold_stops_the_parked_runs_while_the_gpu_is_still_held(self):
        cache = self.warm_cache()
        closed_while = []

        def close(run):
            run.closed = True
            closed_while.append(run.grader.gpu.held)

        def boom(grader, *args, **kwargs):
            raise RuntimeError("a grading that fails in its hold")
        with mock.patch.object(FakeParked, "close", close), mock.patch.object(cli.Grader, "_run_timed", boom):
            with self.assertRaises(RuntimeError):
                self.grade(self.student_run({"task_1": 0.8, "task_2": 0.7}), timing_cache=cache, park_timed=True)
        self.assertTrue(self.parked_runs[0].closed)
        self.assertEqual(closed_while[0], "EX")  # inside the hold, not during another grading's
        self.assertEqual(os.listdir(gpu_lock.GpuLock("GPU-test").parked_dir), [])
