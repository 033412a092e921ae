"""Tiered hints and the progress view (progress.py, ./grade --hint and --progress)."""
import contextlib
import io
import json
import shutil
import tempfile
import unittest
from pathlib import Path

from helpers import phase  # noqa: F401  (puts the driver on sys.path)
from driver import cli, progress, scoring
from driver.manifest import parse_manifest

ROOT = Path(__file__).resolve().parents[2]

TIERED = {"lessons": [{
    "slug": "01_vector_add", "title": "Vector add", "sources": ["vector_add.cu"],
    "tasks": [
        {"id": 1, "title": "kernel", "points": {"correctness": 3, "performance": 2},
         "performance": {"metric": "fraction_of_copy_bandwidth", "threshold": 0.6},
         "hints": ["nudge one", "concept one", "close one"]},
        {"id": 2, "title": "host", "points": {"correctness": 4}, "hints": ["nudge two", "concept two", "close two"]},
        {"id": 3, "title": "bonus", "optional": True, "points": {"correctness": 1},
         "hints": ["nudge three", "concept three", "close three"]},
    ]}]}


def tiered():
    return parse_manifest(TIERED)[0]


def component(kind, status, score, max_score):
    return scoring.ComponentResult(kind, status, score, max_score, status)


def run_with(statuses, sanitize=False):
    """A GradeRun of the tiered lesson: per task (correctness status, performance status or None)."""
    lesson = tiered()
    results = []
    for task, (c, p) in zip(lesson.tasks, statuses):
        correctness = component("correctness", c, task.correctness_points if c == scoring.PASSED else 0,
                                task.correctness_points)
        performance = None if p is None else component("performance", p, task.performance_points
                                                       if p == scoring.PASSED else 0, task.performance_points)
        results.append(scoring.TaskResult(task, correctness, performance))
    return scoring.GradeRun("exercises", 7, {}, [scoring.LessonResult(lesson, results)], sanitize=sanitize)


class HintTiersTest(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)
        self.path = self.dir / "progress.json"

    def test_hints_come_one_at_a_time_in_order_and_are_remembered(self):
        lesson = tiered()
        state = progress.Progress(self.path)
        self.assertEqual(state.next_hint(lesson, lesson.tasks[0]), (1, "nudge one"))
        state.save()
        state = progress.Progress(self.path)
        self.assertEqual(state.next_hint(lesson, lesson.tasks[0]), (2, "concept one"))
        self.assertEqual(state.next_hint(lesson, lesson.tasks[0]), (3, "close one"))
        self.assertEqual(state.next_hint(lesson, lesson.tasks[0]), (3, "close one"))  # the last, again
        self.assertEqual(state.next_hint(lesson, lesson.tasks[1]), (1, "nudge two"))  # per task

    def test_a_failed_task_shows_the_nudge_once_then_never_more_by_itself(self):
        state = progress.Progress(self.path)
        failed = run_with([(scoring.FAILED, scoring.NOT_RUN), (scoring.PASSED, None), (scoring.PASSED, None)])
        first = "\n".join(progress.help_lines(failed, state))
        self.assertIn("Hint 1 of 3: nudge one", first)
        self.assertIn("./grade --hint 01.1", first)
        second = "\n".join(progress.help_lines(failed, state))
        self.assertIn("Hint 1 of 3 (shown before): nudge one", second)
        self.assertNotIn("concept one", second)
        state.next_hint(failed.lessons[0].lesson, failed.lessons[0].lesson.tasks[0])
        state.next_hint(failed.lessons[0].lesson, failed.lessons[0].lesson.tasks[0])
        last = "\n".join(progress.help_lines(failed, state))
        self.assertIn("Hint 3 of 3, the last (shown before): close one", last)

    def test_only_code_that_ran_and_went_wrong_gets_a_hint(self):
        state = progress.Progress(self.path)
        quiet = run_with([(scoring.NOT_IMPLEMENTED, scoring.NOT_RUN), (scoring.COMPILE_ERROR, None),
                          (scoring.SKIPPED, None)])
        self.assertEqual(progress.help_lines(quiet, state), [])
        self.assertEqual(state.hints_seen, {})
        loud = run_with([(scoring.PASSED, scoring.FAILED), (scoring.CRASHED, None), (scoring.TIMED_OUT, None)])
        text = "\n".join(progress.help_lines(loud, state))
        for nudge in ("nudge one", "nudge two", "nudge three"):
            self.assertIn(nudge, text)


class ProgressTest(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)
        self.path = self.dir / "progress.json"

    def test_each_task_keeps_its_last_verdict(self):
        state = progress.Progress(self.path)
        state.record(run_with([(scoring.PASSED, scoring.FAILED), (scoring.FAILED, None), (scoring.PASSED, None)]),
                     when=1000.0)
        state.save()
        state = progress.Progress(self.path)
        # A later run of task 2 alone (./grade 01.2) changes task 2 only.
        later = run_with([(scoring.PASSED, scoring.FAILED), (scoring.PASSED, None), (scoring.PASSED, None)])
        later.lessons[0].tasks[:] = [later.lessons[0].tasks[1]]
        state.record(later, when=2000.0)
        self.assertEqual(state.tasks["01.1"]["status"], "slow")
        self.assertEqual(state.tasks["01.1"]["when"], 1000.0)
        self.assertEqual(state.tasks["01.2"]["status"], scoring.PASSED)
        self.assertEqual(state.tasks["01.2"]["when"], 2000.0)

    def test_a_run_without_a_gpu_records_nothing(self):
        state = progress.Progress(self.path)
        state.record(run_with([(scoring.SKIPPED, scoring.NOT_RUN), (scoring.SKIPPED, None), (scoring.SKIPPED, None)]))
        self.assertEqual(state.tasks, {})

    def test_the_view_shows_verdicts_points_hints_and_what_was_never_graded(self):
        state = progress.Progress(self.path)
        state.record(run_with([(scoring.PASSED, scoring.PASSED), (scoring.FAILED, None), (scoring.PASSED, None)]),
                     when=0.0)
        del state.tasks["01.3"]
        state.next_hint(tiered(), tiered().tasks[1])
        text = progress.format_progress([tiered()], state, "exercises", now=7200.0)
        self.assertIn("01.1  passed", text)
        self.assertIn("5/5", text)
        self.assertIn("01.2  FAILED", text)
        self.assertIn("hints seen 1/3", text)
        self.assertIn("01.3  not graded yet", text)
        self.assertIn("2 h ago", text)
        self.assertIn("01_vector_add  Vector add  5 / 9", text)  # the optional task adds nothing

    def test_an_unreadable_file_starts_over_and_says_so(self):
        self.path.write_text("{ not json")
        state = progress.Progress(self.path)
        self.assertEqual((state.tasks, state.hints_seen), ({}, {}))
        self.assertIn("could not be read", state.problem)
        state.save()
        self.assertEqual(json.loads(self.path.read_text())["version"], 1)


class CommandLineTest(unittest.TestCase):
    """./grade --hint and --progress on a root of their own: no build, no GPU."""

    def setUp(self):
        self.root = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.root)
        (self.root / "lessons").mkdir()
        (self.root / "lessons" / "manifest.json").write_text(json.dumps(TIERED))
        (self.root / "exercises" / "01_vector_add").mkdir(parents=True)

    def grade(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(list(argv), root=self.root)
        return code, out.getvalue() + err.getvalue()

    def test_hint_shows_the_next_tier_and_the_ones_seen(self):
        code, text = self.grade("--hint", "01.2")
        self.assertEqual(code, cli.EXIT_OK)
        self.assertIn("Hint 1 of 3: nudge two", text)
        self.assertIn("More: ./grade --hint 01.2", text)
        code, text = self.grade("--hint", "1.2")
        self.assertIn("Hint 1 (seen): nudge two", text)
        self.assertIn("Hint 2 of 3: concept two", text)
        self.grade("--hint", "01.2")
        code, text = self.grade("--hint", "01.2")
        self.assertIn("Hint 3 of 3 (the last one), again: close two", text)
        self.assertNotIn("More:", text)
        saved = json.loads((self.root / "grade-results" / "progress.json").read_text())
        self.assertEqual(saved["hints_seen"], {"01.2": 3})

    def test_hint_needs_one_task(self):
        code, text = self.grade("--hint", "01")
        self.assertEqual(code, cli.EXIT_USAGE)
        self.assertIn("LESSON.TASK", text)
        code, text = self.grade("--hint", "01.9")
        self.assertEqual(code, cli.EXIT_USAGE)
        self.assertIn("has no task 9", text)

    def test_progress_before_any_grading(self):
        code, text = self.grade("--progress")
        self.assertEqual(code, cli.EXIT_OK)
        self.assertIn("01.1  not graded yet", text)


class WatchTest(unittest.TestCase):
    def test_a_saved_file_grades_again_and_ctrl_c_stops(self):
        root = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, root)
        source = root / "exercises" / "01_vector_add" / "vector_add.cu"
        source.parent.mkdir(parents=True)
        source.write_text("v1")
        calls = []

        def fake_main(argv, root_):
            calls.append(list(argv))
            if len(calls) == 1:
                source.write_text("v2, longer")  # saved while the first grading ran
                return 1
            raise KeyboardInterrupt

        real = cli.main
        cli.main = fake_main
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                code = cli.watch(["--watch", "01"], root, [tiered()], root / "exercises", poll_s=0.01)
        finally:
            cli.main = real
        self.assertEqual(code, cli.EXIT_OK)
        self.assertEqual(calls, [["01"], ["01"]])  # graded twice, without --watch
        self.assertIn("grading again", out.getvalue())
        self.assertIn("Stopped watching", out.getvalue())


class ManifestTiersTest(unittest.TestCase):
    def test_every_task_of_the_workbook_has_three_tiers(self):
        for lesson in cli.load_manifest(ROOT / "lessons" / "manifest.json"):
            for task in lesson.tasks:
                self.assertEqual(len(task.hints), 3, f"{lesson.slug} task {task.id}: a nudge, the concept, "
                                                     "then close to the answer")
                self.assertEqual(len(set(task.hints)), 3, f"{lesson.slug} task {task.id}: three different hints")


if __name__ == "__main__":
    unittest.main()
