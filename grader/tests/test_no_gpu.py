"""./grade without a GPU: the reports are still written, each task saying why it was not run,
and the exit status tells "no GPU" (3) from "no GPU, and a lesson does not compile" (5). The
build and the device query are stand-ins, so this runs anywhere."""
import contextlib
import io
import json
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from helpers import MANIFEST  # noqa: F401  (puts the driver on sys.path)
from driver import build, cli, scoring

ROOT = Path(__file__).resolve().parents[2]
NO_GPU = subprocess.CompletedProcess([], 3, b"", b"no CUDA-capable GPU was found on this machine")


class NoGpuTest(unittest.TestCase):
    def grade(self, compile_failures):
        index = {"trees": {"exercises": {"dir": str(ROOT / "exercises"), "lessons": {
            "01_vector_add": "grade_01", "02_multiply_add": "grade_02", "03_matmul": "grade_03"}}}}
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.object(build, "prepare", return_value=(index, "exercises")), \
                mock.patch.object(build, "locked", return_value=contextlib.nullcontext()), \
                mock.patch.object(cli, "build_lessons", return_value=compile_failures), \
                mock.patch.object(cli, "device_facts", return_value=NO_GPU), \
                contextlib.redirect_stdout(io.StringIO()) as out:
            code = cli.main(["--results", d, "01", "03"], root=ROOT)
            results = json.loads((Path(d) / "results.json").read_text())
            junit = (Path(d) / "junit.xml").read_text()
        return code, results, junit, out.getvalue()

    def test_no_gpu_writes_every_task_as_not_run_and_exits_3(self):
        code, results, junit, out = self.grade({})
        self.assertEqual(code, cli.EXIT_NO_GPU)
        self.assertIn("Nothing was graded", out)
        statuses = {t["extra_data"]["status"] for t in results["tests"]}
        self.assertEqual(statuses, {"skipped", "not_run"})
        self.assertTrue(all(t["score"] == 0 for t in results["tests"]))
        self.assertIn("no CUDA-capable GPU", results["tests"][0]["output"])
        self.assertEqual({t["tags"][0] for t in results["tests"]}, {"01_vector_add", "03_matmul"})
        self.assertIn("<skipped", junit)

    def test_a_lesson_that_does_not_compile_without_a_gpu_exits_5(self):
        code, results, junit, out = self.grade({"03_matmul": "matmul.cu:12: error: expected ';'"})
        self.assertEqual(code, cli.EXIT_NO_GPU_NOR_COMPILE)
        by_lesson = {}
        for t in results["tests"]:
            by_lesson.setdefault(t["tags"][0], set()).add(t["extra_data"]["status"])
        self.assertEqual(by_lesson["03_matmul"], {"compile_error", "not_run"})
        self.assertEqual(by_lesson["01_vector_add"], {"skipped", "not_run"})
        self.assertIn("expected ';'", json.dumps(results))
        self.assertIn("03_matmul does not compile", out)


class WithGpuTest(unittest.TestCase):
    def test_lessons_that_compiled_are_graded_and_the_others_reported(self):
        device = subprocess.CompletedProcess([], 0, json.dumps({"name": "Test GPU", "uuid": "GPU-test",
                                                                "copy_bandwidth_gbps": 1000.0}).encode(), b"")
        graded = []

        def grade_lessons(grader, work):  # each (lesson, program, result given), in one call
            results = []
            for lesson, program, given in work:
                if not given:
                    graded.append((lesson.slug, program))
                results.append(given or scoring.lesson_not_gradable(lesson, scoring.PASSED, "correct", ""))
            return results

        index = {"trees": {"exercises": {"dir": str(ROOT / "exercises"), "lessons": {
            "01_vector_add": "grade_01", "03_matmul": "grade_03"}}}}
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.dict("os.environ", {"WORKBOOK_LOCK_DIR": d}), \
                mock.patch.object(build, "prepare", return_value=(index, "exercises")), \
                mock.patch.object(build, "locked", return_value=contextlib.nullcontext()), \
                mock.patch.object(cli, "build_lessons", return_value={"03_matmul": "error: x"}), \
                mock.patch.object(cli, "device_facts", return_value=device), \
                mock.patch.object(cli.Grader, "grade_lessons", grade_lessons), \
                contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(["--results", d, "01", "02", "03"], root=ROOT)
            results = json.loads((Path(d) / "results.json").read_text())
        self.assertEqual(graded, [("01_vector_add", "grade_01")])
        statuses = {(t["tags"][0], t["tags"][2]): t["extra_data"]["status"] for t in results["tests"]}
        self.assertEqual(statuses[("01_vector_add", "correctness")], "passed")
        self.assertEqual(statuses[("02_multiply_add", "correctness")], "missing")
        self.assertEqual(statuses[("03_matmul", "correctness")], "compile_error")
        self.assertEqual(code, cli.EXIT_NOT_ALL_PASSED)


if __name__ == "__main__":
    unittest.main()
