"""tools/make_release.py: which solutions go into a student release, and where it is written.
(CI also builds and tests one release: .ci/run.)"""
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "make_release.py"
IN_GIT = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode == 0


@unittest.skipUnless(IN_GIT and TOOL.exists(), "needs the instructor's git checkout (a release has no history)")
class ReleaseTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def release(self, *args, cwd=None):
        return subprocess.run([sys.executable, str(TOOL), *args], cwd=cwd or self.tmp, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)

    def test_help(self):
        done = self.release("--help")
        self.assertEqual(done.returncode, 0)
        self.assertIn("--publish", done.stdout)

    def test_published_lessons_only(self):
        done = self.release("--publish", "01", "--format", "dir", "-o", "out")
        self.assertEqual(done.returncode, 0, done.stdout)
        tree = self.tmp / "out"  # relative to the directory it ran in
        self.assertEqual(sorted(p.name for p in (tree / "solutions").iterdir()), ["01_vector_add"])
        for withheld in ("grader/tests/broken", "grader/tests/students", "grader/tests/expected/solutions.json",
                         "tools/gpu_check.sh"):
            self.assertFalse((tree / withheld).exists(), withheld)
        self.assertTrue((tree / "exercises" / "02_multiply_add").is_dir())
        self.assertIn("01_vector_add", (tree / "RELEASE.md").read_text())
        self.assertIn("Not yet published: 02_multiply_add", (tree / "RELEASE.md").read_text())

    def test_default_archive_withholds_every_solution(self):
        done = self.release()
        self.assertEqual(done.returncode, 0, done.stdout)
        archive = self.tmp / "cuda-workbook-student.tar.gz"
        with tarfile.open(archive) as t:
            names = t.getnames()
        self.assertIn("cuda-workbook/RELEASE.md", names)
        self.assertFalse([n for n in names if n.startswith("cuda-workbook/solutions")])
        # Again without --force: refused, nothing replaced.
        self.assertEqual(self.release().returncode, 2)

    def test_an_existing_folder_gets_the_default_name(self):
        (self.tmp / "www").mkdir()
        done = self.release("--publish", "vector_add,02", "-o", "www")
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertTrue((self.tmp / "www" / "cuda-workbook-student-published-01-02.tar.gz").is_file())

    def test_bad_lessons_are_usage_errors(self):
        for bad in (["--publish", "07"], ["--publish", "01.2"]):
            done = self.release(*bad)
            self.assertEqual(done.returncode, 2, done.stdout)
        self.assertIn("the lessons are", self.release("--publish", "07").stdout)


if __name__ == "__main__":
    unittest.main()
