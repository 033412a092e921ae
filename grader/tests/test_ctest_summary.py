"""The last lines of the test workflow (tools/ctest_summary.py): where the time went, how many tests
were skipped and why."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import ctest_summary  # noqa: E402

CATCH2_SKIP = """PinnedBuffer is host memory
/work/common/tests/gpu_test.cu:42: SKIPPED:
explicitly with message:
  the NVIDIA driver is missing or older than this CUDA runtime needs

test cases: 1 | 1 skipped"""
EXAMPLE_SKIP = "build/example_05: needs a GPU: the NVIDIA driver is missing or older than this CUDA runtime needs.\n"
SWEEP_SKIP = ("sweep: nothing was timed. No GPU to run on: the NVIDIA driver is missing or older than this CUDA "
              "runtime needs.\n\nskipped: no GPU\n")
GRADE_SKIP = ("Compiled: 05_streams.\nNothing was graded. No GPU to run on: the NVIDIA driver is missing or older "
              "than this CUDA runtime needs. The grader needs an NVIDIA GPU with its driver.\nskipped: no GPU\n")


def junit(*cases):
    body = []
    for name, skipped, out in cases:
        skip = '<skipped message="SKIP_RETURN_CODE=4"/>' if skipped else ""
        status = "notrun" if skipped else "run"
        body.append(f'<testcase name="{name}" status="{status}">{skip}<system-out><![CDATA[{out}]]></system-out>'
                    "</testcase>")
    return f'<testsuite tests="{len(cases)}">{"".join(body)}</testsuite>'


def timed_junit(wall, cases):
    body = "".join(f'<testcase name="{name}" time="{seconds}" status="run"><system-out>ok</system-out></testcase>'
                   for name, seconds in cases)
    return f'<testsuite tests="{len(cases)}" time="{wall}">{body}</testsuite>'


class CtestSummaryTest(unittest.TestCase):
    def test_time_lines_give_wall_time_slowest_tests_and_groups(self):
        text = ctest_summary.summarize(timed_junit(100, [
            ("grader.e2e.solutions_score_full_marks", "95.5"), ("grader.e2e.broken_a_is_caught", "20"),
            ("grader.driver.test_runner", "2"), ("common.PinnedBuffer is host memory", "0.5"),
            ("lessons.01_vector_add.example_add", "1.5"), ("grader.07_monte_carlo.lesson 07: edges. again", "1")]))
        lines = text.splitlines()
        self.assertEqual(len(lines), 4)
        self.assertEqual(lines[0], "ctest: time: 100 s of wall time for 120 s of tests (1.2 at a time on average)")
        self.assertTrue(lines[1].startswith("ctest: slowest: grader.e2e.solutions_score_full_marks 95.5 s, "
                                            "grader.e2e.broken_a_is_caught 20.0 s, grader.driver.test_runner 2.0 s"))
        self.assertEqual(lines[2], "ctest: by group: grader.e2e 116 s (2), grader.driver 2 s (1), lessons 2 s (1), "
                                   "grader.07_monte_carlo 1 s (1), common 0 s (1)")
        self.assertIn("none of the 6 tests was skipped", lines[3])

    def test_the_gradings_seconds_are_added_up_from_check_grades_lines(self):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import check_grades
        one = check_grades.time_line({"extra_data": {
            "wall_s": {"01_vector_add": {"correctness": 2.0, "sanitizer_check": 3.0, "performance": 1.0, "total": 7},
                       "03_matmul": {"correctness": 4.0}},
            "wall_detail_s": {"01_vector_add": {"correctness_in_tests": 1.0}},
            "gpu_lock_s": {"shared": {"waited": 5.0, "held": 6.0}, "exclusive": {"waited": 1.0, "held": 1.5}}}})
        two = check_grades.time_line({"extra_data": {"wall_s": {"01_vector_add": {"correctness": 1.0}},
                                                     "gpu_lock_s": {"shared": {"waited": 2.0, "held": 1.0}}}})
        text = ctest_summary.summarize(junit(("grader.e2e.a", False, f"Total: 1\n{one}\nas expected"),
                                             ("grader.e2e.b", False, f"{two}\n"), ("grader.e2e.c", False, "grading time: {"),
                                             # a line with one part unreadable counts for nothing
                                             ("grader.e2e.d", False, 'grading time: {"phases": {"correctness": 100}, '
                                                                      '"lock": {"shared_held": "n/a"}}')))
        self.assertIn("ctest: the 2 gradings' seconds: correctness 7 s (1 s in the tests), sanitizer_check 3 s, "
                      "performance 1 s", text)
        self.assertIn("ctest: the gradings and the GPU lock: exclusive held 2 s, exclusive waited 1 s, shared held 7 s, "
                      "shared waited 7 s", text)
        self.assertNotIn("gradings' seconds", ctest_summary.summarize(junit(("grader.e2e.a", False, "Total: 1"))))

    def test_a_report_without_times_gives_no_time_lines(self):
        self.assertEqual(ctest_summary.time_lines(ctest_summary.ET.fromstring(junit(("a", False, "")))), [])


    def test_gpu_skips_of_every_kind_become_one_line_with_their_reason(self):
        text = ctest_summary.summarize(junit(("a", True, CATCH2_SKIP), ("b", True, EXAMPLE_SKIP),
                                             ("c", True, GRADE_SKIP), ("e", True, SWEEP_SKIP),
                                             ("d", False, "ok")))
        self.assertEqual(len(text.splitlines()), 1)
        self.assertIn("4 of 5 tests skipped because they need an NVIDIA GPU", text)
        self.assertIn("the NVIDIA driver is missing or older than this CUDA runtime needs", text)
        self.assertIn("the other 1 ran here", text)

    def test_a_skip_for_another_reason_gets_a_line_of_its_own(self):
        text = ctest_summary.summarize(junit(("a", True, EXAMPLE_SKIP), ("b", True, "nothing useful")))
        lines = text.splitlines()
        self.assertEqual(len(lines), 2)
        self.assertIn("1 skipped: no reason printed (SKIP_RETURN_CODE=4)", lines[0])
        self.assertIn("1 of 2 tests skipped because they need an NVIDIA GPU", lines[1])

    def test_a_check_script_states_its_own_reason(self):
        slurm = ("skipped: sinfo failed: slurm_load_partitions: Unable to contact slurm controller (connect "
                 "failure). CI starts a single-node cluster with tools/ci/slurm_single_node.sh start.\n")
        lines = ctest_summary.summarize(junit(("a", True, EXAMPLE_SKIP), ("s", True, slurm))).splitlines()
        self.assertIn("1 skipped: sinfo failed: slurm_load_partitions: Unable to contact slurm controller", lines[0])
        self.assertIn("1 of 2 tests skipped because they need an NVIDIA GPU", lines[1])

    def test_nothing_skipped_says_so(self):
        self.assertIn("none of the 2 tests was skipped", ctest_summary.summarize(junit(("a", False, ""),
                                                                                       ("b", False, ""))))

    def test_no_report_says_nothing(self):
        self.assertEqual(ctest_summary.main(["x", "/nonexistent/ctest-junit.xml"]), 0)


if __name__ == "__main__":
    unittest.main()
