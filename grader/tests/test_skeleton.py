"""Whether a task's code is still the skeleton (grader/driver/skeleton.py): "not implemented yet"
is said of nothing else."""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import helpers  # noqa: F401 (puts grader/ on the path)
from driver import skeleton
from driver.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[2]

SOURCE = '''#include "x.hpp"
// TODO(task 9): a marker outside every block is not a task's code
const char* text = "{ not a brace";
__global__ void kernel(const float* a, float* c, int n) {
  // TODO(task 1): write c. A '}' in a comment does not close the body.
}

void host(const float* a, float* c, int n) {
  /* notes */ (void)a, (void)c,
      (void)n;  // TODO(task 2): the round trip
}
'''


class TaskCodeTest(unittest.TestCase):
    def test_the_block_around_the_marker_without_comments_or_spacing(self):
        self.assertEqual((skeleton.task_code(SOURCE, 1).function, skeleton.task_code(SOURCE, 1).body), ("kernel", ""))
        self.assertEqual((skeleton.task_code(SOURCE, 2).function, skeleton.task_code(SOURCE, 2).body),
                         ("host", "(void)a,(void)c,(void)n;"))

    def test_no_marker_or_a_marker_outside_a_block(self):
        self.assertIsNone(skeleton.task_code(SOURCE, 3))
        self.assertIsNone(skeleton.task_code(SOURCE, 9))
        self.assertIsNone(skeleton.task_code('const char* s = "TODO(task 1)"; void f() {}', 1))

    def test_unbalanced_text_never_raises(self):
        for text in ("void f() { // TODO(task 1)", "}}} // TODO(task 1)", "void f() { 'x // TODO(task 1)\n"):
            skeleton.task_code(text, 1)


class StateTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.tree = Path(self.dir.name)
        (self.tree / "09_x").mkdir()
        self.skeletons = {"09_x": {"1": {"file": "x.cu", "function": "kernel", "body": ""},
                                   "2": {"file": "x.cu", "function": "host", "body": "(void)a,(void)c,(void)n;"}}}

    def tearDown(self):
        self.dir.cleanup()

    def state(self, text, task_id):
        (self.tree / "09_x" / "x.cu").write_text(text)
        return skeleton.state(self.skeletons, self.tree, "09_x", task_id)

    def test_untouched_also_with_notes_and_reformatting(self):
        self.assertEqual(self.state(SOURCE, 1), skeleton.UNTOUCHED)
        noted = SOURCE.replace("/* notes */ (void)a, (void)c,\n      (void)n;", "(void)a,(void)c,(void)n; // my notes")
        self.assertEqual(self.state(noted, 2), skeleton.UNTOUCHED)

    def test_any_code_or_a_removed_marker_is_changed(self):
        self.assertEqual(self.state(SOURCE.replace("does not close the body.\n", "does not close the body.\n"
                                                   "  float s = a[0];\n"), 1), skeleton.CHANGED)
        self.assertEqual(self.state(SOURCE.replace("// TODO(task 1): write c.", "// write c."), 1), skeleton.CHANGED)
        self.assertEqual(self.state(SOURCE.replace("(void)n;", "(void)n; return;"), 2), skeleton.CHANGED)

    def test_unknown_without_a_record_or_a_file(self):
        self.assertEqual(skeleton.state(self.skeletons, self.tree, "09_x", 1), skeleton.UNKNOWN)  # no file yet
        self.assertEqual(self.state(SOURCE, 3), skeleton.UNKNOWN)
        self.assertEqual(skeleton.state({}, self.tree, "09_x", 1), skeleton.UNKNOWN)


class CodeStateTest(unittest.TestCase):
    """What ./grade hands the verdict: the state, and the code named as the student would."""

    def test_state_and_place_relative_to_the_project(self):
        from driver.cli import CodeState
        from driver.manifest import Lesson, Task
        with tempfile.TemporaryDirectory() as root:
            (Path(root) / "grader").mkdir()
            (Path(root) / "grader" / "skeletons.json").write_text(
                '{"09_x": {"1": {"file": "x.cu", "function": "kernel", "body": ""}}}')
            tree = Path(root) / "exercises"
            (tree / "09_x").mkdir(parents=True)
            (tree / "09_x" / "x.cu").write_text(SOURCE)
            lesson = Lesson("09_x", "X", ["x.cu"], [Task(1, "t", 1.0), Task(2, "u", 1.0)])
            code = CodeState(Path(root), tree)
            self.assertEqual(code.of(lesson, lesson.tasks[0]),
                             (skeleton.UNTOUCHED, "kernel in exercises/09_x/x.cu"))
            # A task the record does not know: no claim about it, and the lesson's file named.
            self.assertEqual(code.of(lesson, lesson.tasks[1]), (skeleton.UNKNOWN, "exercises/09_x/x.cu"))


class RecordTest(unittest.TestCase):
    def test_every_task_of_exercises_is_recorded_and_untouched(self):
        lessons = load_manifest(ROOT / "lessons" / "manifest.json")
        recorded = skeleton.load(ROOT)
        for lesson in lessons:
            for task in lesson.tasks:
                with self.subTest(lesson=lesson.slug, task=task.id):
                    self.assertEqual(skeleton.state(recorded, ROOT / "exercises", lesson.slug, task.id),
                                     skeleton.UNTOUCHED)

    def test_the_reference_solutions_are_not_skeletons(self):
        if not (ROOT / "solutions").is_dir():
            self.skipTest("a student release has no solutions/")
        recorded = skeleton.load(ROOT)
        for slug, tasks in recorded.items():
            if (ROOT / "solutions" / slug).is_dir():
                for task_id in tasks:
                    self.assertEqual(skeleton.state(recorded, ROOT / "solutions", slug, int(task_id)), skeleton.CHANGED)

    def test_the_recorded_file_is_current(self):
        check = subprocess.run([sys.executable, "-m", "driver.skeleton", "--check"], cwd=ROOT / "grader",
                               capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stderr)


if __name__ == "__main__":
    unittest.main()
