"""tools/make_release.py: which solutions go into a student release, what is always withheld, and
where the release is written. (CI also builds and tests a release: the end of .ci/run.)"""
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

import helpers  # noqa: F401 (puts grader/ on the path)
from driver.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "make_release.py"
WITHHELD = ("grader/tests/broken", "grader/tests/students", "grader/tests/expected/solutions.json",
            "tools/gpu_check.sh")


def checkout_top():
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--show-toplevel"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, universal_newlines=True)
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 else None


def why_not_here():
    """Why the tool cannot run here (None when it can): it needs the instructor's git checkout."""
    if checkout_top() != ROOT:
        return "not a git checkout of the workbook (a release is made from the instructor's repository)"
    if not (ROOT / "grader" / "tests" / "expected" / "solutions.json").is_file():
        return "a student release, not the instructor's copy: nothing to make a release of"
    return None


def load_tool():
    spec = importlib.util.spec_from_file_location("make_release", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ReleaseCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def release(self, *args, cwd=None, tool=TOOL):
        return subprocess.run([sys.executable, str(tool), *args], cwd=str(cwd or self.tmp), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)


@unittest.skipIf(why_not_here(), why_not_here())
class ReleaseTest(ReleaseCase):
    def assert_withheld(self, tree: Path):
        for path in WITHHELD:
            self.assertFalse((tree / path).exists(), path)

    def test_help_shows_examples(self):
        done = self.release("--help")
        self.assertEqual(done.returncode, 0)
        for text in ("--publish", "--output", "--format", "examples:", "tools/make_release.py --publish 01,02"):
            self.assertIn(text, done.stdout)

    def test_published_lessons_only_into_a_folder_relative_to_the_current_directory(self):
        (self.tmp / "here").mkdir()
        done = self.release("--publish", "01", "--format", "dir", "-o", "out", cwd=self.tmp / "here")
        self.assertEqual(done.returncode, 0, done.stdout)
        tree = self.tmp / "here" / "out"
        self.assertFalse((ROOT / "out").exists())
        self.assertEqual(sorted(p.name for p in (tree / "solutions").iterdir()), ["01_vector_add"])
        self.assertTrue((tree / "solutions" / "01_vector_add" / "vector_add.cu").is_file())
        self.assert_withheld(tree)
        self.assertTrue((tree / "exercises" / "02_multiply_add").is_dir())
        self.assertTrue(os.access(tree / "grade", os.X_OK))
        notes = (tree / "RELEASE.md").read_text()
        self.assertIn("- 01_vector_add: Vector add", notes)
        self.assertIn("Not published yet: 02_multiply_add, 03_matmul", notes)
        self.assertIn("Published solutions: 01_vector_add", done.stdout)
        self.assertIn("Wrote out ", done.stdout)

    def test_the_default_archive_withholds_every_solution(self):
        done = self.release()
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertIn("Published solutions: none", done.stdout)
        archive = self.tmp / "cuda-workbook-student.tar.gz"
        with tarfile.open(str(archive)) as t:
            names = t.getnames()
        self.assertIn("cuda-workbook/RELEASE.md", names)
        self.assertIn("cuda-workbook/exercises/01_vector_add/vector_add.cu", names)
        self.assertEqual([n for n in names if n.startswith("cuda-workbook/solutions")], [])
        for path in WITHHELD:
            self.assertNotIn(f"cuda-workbook/{path}", names)
            self.assertFalse([n for n in names if n.startswith(f"cuda-workbook/{path}/")], path)
        # Again: refused without --force, nothing touched; replaced with it.
        before = archive.stat().st_mtime_ns
        done = self.release()
        self.assertEqual(done.returncode, 2, done.stdout)
        self.assertIn("--force", done.stdout)
        self.assertEqual(archive.stat().st_mtime_ns, before)
        self.assertEqual(self.release("--force").returncode, 0)

    def test_an_existing_folder_or_a_trailing_slash_gets_the_default_name(self):
        (self.tmp / "www").mkdir()
        done = self.release("--publish", "vector_add,02", "-o", "www")
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertTrue((self.tmp / "www" / "cuda-workbook-student-published-01-02.tar.gz").is_file())
        done = self.release("--publish", "03_matmul", "--publish", "1", "-o", "new/week3/")
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertTrue((self.tmp / "new" / "week3" / "cuda-workbook-student-published-01-03.tar.gz").is_file())
        done = self.release("--publish", "all", "-o", str(self.tmp / "all.tgz"))
        self.assertEqual(done.returncode, 0, done.stdout)
        with tarfile.open(str(self.tmp / "all.tgz")) as t:
            solutions = {n.split("/")[2] for n in t.getnames() if n.startswith("cuda-workbook/solutions/")}
        self.assertEqual(solutions, {lesson.slug for lesson in load_manifest(ROOT / "lessons" / "manifest.json")})

    def test_force_replaces_an_earlier_release_only(self):
        self.assertEqual(self.release("--format", "dir", "-o", "rel").returncode, 0)
        done = self.release("--format", "dir", "-o", "rel", "--publish", "01")
        self.assertEqual(done.returncode, 2, done.stdout)
        done = self.release("--format", "dir", "-o", "rel", "--publish", "01", "--force")
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertEqual([p.name for p in (self.tmp / "rel" / "solutions").iterdir()], ["01_vector_add"])
        (self.tmp / "mine").mkdir()
        (self.tmp / "mine" / "notes.txt").write_text("mine\n")
        done = self.release("--format", "dir", "-o", "mine", "--force")
        self.assertEqual(done.returncode, 2, done.stdout)
        self.assertIn("does not hold a release", done.stdout)
        self.assertEqual((self.tmp / "mine" / "notes.txt").read_text(), "mine\n")

    def test_bad_arguments_are_usage_errors(self):
        for bad, says in ((["--publish", "99"], "the lessons are: 01_vector_add"),
                          (["--publish", "01,nope"], "no lesson matches 'nope'"),
                          (["--publish", "01.2"], "whole lessons"),
                          (["-o", "release.zip"], ".tar.gz"),
                          (["--format", "dir", "-o", "release.tar.gz"], "--format dir")):
            done = self.release(*bad)
            self.assertEqual(done.returncode, 2, (bad, done.stdout))
            self.assertIn(says, done.stdout)
        self.assertEqual(list(self.tmp.iterdir()), [])


@unittest.skipIf(why_not_here(), why_not_here())
class OutsideACheckoutTest(ReleaseCase):
    def test_a_copy_without_git_fails_clearly(self):
        copy = self.tmp / "copy"
        for part in ("tools/make_release.py", "grader/driver", "lessons/manifest.json"):
            (copy / part).parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(str(ROOT / part), str(copy / part))
        done = self.release("--publish", "01", tool=copy / "tools" / "make_release.py")
        self.assertEqual(done.returncode, 1, done.stdout)
        self.assertIn("is not a git checkout of its own", done.stdout)
        self.assertFalse((self.tmp / "cuda-workbook-student-published-01.tar.gz").exists())


class LeakCheckTest(ReleaseCase):
    """The check that no file of a release repeats a withheld solution."""

    # Made-up code: the real solutions must not be quoted here, or the release would hold them.
    SOLUTION = """__global__ void saxpy(float a, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

void saxpy_host(float a, const float* x, float* y, int n) {
  if (n <= 0) return;
  workbook::DeviceBuffer<float> d_x(n), d_y(n);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_x.data(), x, d_x.bytes(), cudaMemcpyHostToDevice));
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_y.data(), y, d_y.bytes(), cudaMemcpyHostToDevice));
  const int threads = 128;
}
"""
    EXERCISE = """__global__ void saxpy(float a, const float* x, float* y, int n) {
  // TODO(task 1)
}

void saxpy_host(float a, const float* x, float* y, int n) {
  // TODO(task 2)
}
"""

    def leaks(self, files, answers=None):
        tool = load_tool()
        for name, text in files.items():
            (self.tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (self.tmp / name).write_text(text)
        return tool.leaks(self.tmp, {"09_saxpy/saxpy.cu": self.SOLUTION},
                          {"09_saxpy/saxpy.cu": self.EXERCISE}, answers)

    def test_a_grader_repeating_a_test_students_answer_is_caught(self):
        # A test student's answer differs from the solution, and is withheld as well: a grader's own
        # kernel copied from it gives the task away just the same.
        student = self.SOLUTION.replace("const int threads = 128;", "const int threads = 256;").replace(
            "if (i < n) y[i] = a * x[i] + y[i];", "if (i < n) y[i] += a * x[i];")
        kernel = "\n".join(student.splitlines()[:3]) + "\n"
        answers = {"grader/tests/students/plain/09_saxpy/saxpy.cu": student}
        found = self.leaks({"exercises/09_saxpy/saxpy.cu": self.EXERCISE,
                            "grader/09_saxpy/saxpy_grader.cu": "// the grader's yardstick\n" + student}, answers)
        self.assertEqual(found, ["grader/09_saxpy/saxpy_grader.cu repeats lines of "
                                 "grader/tests/students/plain/09_saxpy/saxpy.cu",
                                 "grader/09_saxpy/saxpy_grader.cu repeats lines of solutions/09_saxpy/saxpy.cu"])
        self.assertEqual(self.leaks({"grader/09_saxpy/saxpy_grader.cu": kernel}, answers), [])  # three lines

    def test_a_lesson_quoting_the_solution_is_caught(self):
        quoted = "# Lesson\n\n```cpp\n" + "\n".join(self.SOLUTION.splitlines()[5:11]) + "\n```\n"
        found = self.leaks({"exercises/09_saxpy/saxpy.cu": self.EXERCISE,
                            "lessons/09_saxpy/README.md": quoted,
                            "solutions/10_axpby/axpby.cu": "// published\n" + self.SOLUTION})
        self.assertEqual(found, ["lessons/09_saxpy/README.md repeats lines of solutions/09_saxpy/saxpy.cu",
                                 "solutions/10_axpby/axpby.cu repeats lines of solutions/09_saxpy/saxpy.cu"])

    def test_the_exercise_and_a_few_shared_lines_are_not_leaks(self):
        few = "\n".join(self.SOLUTION.splitlines()[7:10])  # three lines in a row: boilerplate
        self.assertEqual(self.leaks({"exercises/09_saxpy/saxpy.cu": self.EXERCISE,
                                     "common/src/buffers.cu": few + "\n"}), [])


if __name__ == "__main__":
    unittest.main()
