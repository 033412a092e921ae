"""Report writers: the scoreboard, Gradescope's results.json and JUnit XML."""
import json
import tempfile
import unittest
import xml.etree.ElementTree as ET
from argparse import Namespace

from helpers import lesson, matmul_lesson
from driver import scoring
from driver.reports import format_scoreboard, gradescope_results, junit_xml, write_reports
from check_grades import caught_tasks, check, exits_zero, grade_options, selectors, under_the_sanitizer


def sample_run():
    l = lesson()
    t1 = scoring.TaskResult(
        l.tasks[0],
        scoring.ComponentResult("correctness", scoring.PASSED, 3, 3, "correct"),
        scoring.ComponentResult("performance", scoring.FAILED, 0, 2, "1% of copy", "threshold: 60% <&>",
                                {"fraction_of_copy_bandwidth": 0.01}))
    t2 = scoring.TaskResult(l.tasks[1], scoring.ComponentResult("correctness", scoring.CRASHED, 0, 4,
                                                                "crashed: illegal memory access", "run --sanitize"))
    device = {"name": "NVIDIA H100", "compute_capability": "9.0", "sm_count": 132, "copy_bandwidth_gbps": 3000.0}
    return scoring.GradeRun("exercises", 1234, device, [scoring.LessonResult(l, [t1, t2])])


def optional_run():
    l = matmul_lesson()
    tasks = [scoring.TaskResult(t, scoring.ComponentResult("correctness", scoring.PASSED, 2, 2, "correct"),
                                scoring.ComponentResult("performance", scoring.PASSED, 2, 2, "70% of cuBLAS FP32"))
             for t in l.tasks]
    tasks[0].correctness = scoring.ComponentResult("correctness", scoring.PASSED, 3, 3, "correct")
    return scoring.GradeRun("solutions", 1, {}, [scoring.LessonResult(l, tasks)])


class OptionalTaskTest(unittest.TestCase):
    def test_the_scoreboard_shows_the_bonus_apart(self):
        text = format_scoreboard(optional_run())
        self.assertIn("9 / 5 (+4 optional)", text)
        self.assertIn("Total: 9 / 5 (+4 optional)", text)
        self.assertIn("Task 2  challenge  [optional: bonus points]", text)

    def test_gradescope_sees_extra_credit(self):
        tests = gradescope_results(optional_run())["tests"]
        challenge = [t for t in tests if t["tags"][1] == "task_2"]
        self.assertEqual([(t["score"], t["max_score"]) for t in challenge], [(2, 0), (2, 0)])
        self.assertTrue(all(t["extra_data"]["optional"] and t["extra_data"]["points"] == 2 for t in challenge))
        self.assertEqual(sum(t["max_score"] for t in tests), 5)


class ScoreboardTest(unittest.TestCase):
    def test_lists_every_component_with_points_and_the_total(self):
        text = format_scoreboard(sample_run())
        self.assertIn("seed 1234", text)
        self.assertIn("NVIDIA H100 · sm_90 · 132 SMs · measured copy bandwidth 3000 GB/s", text)
        self.assertIn("correctness  passed", text)
        self.assertIn("performance  FAILED", text)
        self.assertIn("CRASHED", text)
        self.assertIn("Total: 3 / 9", text)

    def test_explains_what_went_wrong(self):
        text = format_scoreboard(sample_run())
        self.assertIn("What went wrong", text)
        self.assertIn("01_vector_add · Task 2 · correctness: CRASHED", text)
        self.assertIn("run --sanitize", text)


    def test_counters_of_a_passed_task_are_shown_only_where_they_were_read(self):
        # A passed task always has details (its threshold line): only counters that were read
        # (the driver marks them "shown") make the section; without ncu, or with --no-counters,
        # it does not appear.
        run = optional_run()
        for task_result in run.lessons[0].tasks:
            task_result.performance.details = "threshold: 40% of cuBLAS FP32"
        self.assertNotIn("Counters of the timed calls that passed", format_scoreboard(run))
        run.lessons[0].tasks[1].performance.details += "\nCounters of the timed call (Nsight Compute), each beside its ideal:"
        run.lessons[0].tasks[1].performance.extra_data["counters"] = "shown"
        text = format_scoreboard(run)
        self.assertIn("Counters of the timed calls that passed", text)
        self.assertIn("03_matmul · Task 2 · performance: passed\n  threshold: 40% of cuBLAS FP32\n  Counters of the timed call", text)
        self.assertNotIn("03_matmul · Task 1 · performance: passed", text)
        self.assertNotIn("What went wrong", text)


class GradescopeTest(unittest.TestCase):
    def test_has_a_test_per_component_with_scores_and_status(self):
        results = gradescope_results(sample_run())
        self.assertEqual(results["score"], 3)
        self.assertEqual(len(results["tests"]), 3)
        first = results["tests"][0]
        self.assertEqual((first["score"], first["max_score"], first["status"]), (3, 3, "passed"))
        self.assertEqual(first["number"], "1.1")
        self.assertEqual(results["tests"][1]["status"], "failed")
        self.assertEqual(results["tests"][2]["extra_data"]["status"], "crashed")
        for test in results["tests"]:
            self.assertTrue({"name", "score", "max_score", "status", "output"} <= set(test))

    def test_the_run_says_where_its_time_went(self):
        run = sample_run()
        self.assertEqual(set(gradescope_results(run)["extra_data"]), {"wall_s", "wall_detail_s"})  # nothing to say
        run.lessons[0].wall_s = {"correctness": 2.0, "total": 3.0}
        run.lessons[0].wall_detail_s = {"correctness_in_tests": 1.5}
        run.gpu_lock_s = {"shared": {"waited": 0.5, "held": 2.0}, "exclusive": {"waited": 0.0, "held": 1.0}}
        run.nvidia_smi_s = 0.25
        extra = gradescope_results(run)["extra_data"]
        slug = run.lessons[0].lesson.slug
        self.assertEqual(extra["wall_s"], {slug: {"correctness": 2.0, "total": 3.0}})
        self.assertEqual(extra["wall_detail_s"], {slug: {"correctness_in_tests": 1.5}})
        self.assertEqual(extra["gpu_lock_s"]["exclusive"]["held"], 1.0)
        self.assertEqual(extra["nvidia_smi_s"], 0.25)

    def test_written_files_parse(self):
        with tempfile.TemporaryDirectory() as d:
            json_path, xml_path = write_reports(sample_run(), d)
            with open(json_path) as f:
                self.assertEqual(json.load(f)["score"], 3)
            ET.parse(xml_path)


class JUnitTest(unittest.TestCase):
    def test_counts_failures_and_errors_and_escapes_text(self):
        root = ET.fromstring(junit_xml(sample_run()))
        self.assertEqual(root.get("tests"), "3")
        self.assertEqual(root.get("failures"), "1")
        self.assertEqual(root.get("errors"), "1")
        cases = root.findall("./testsuite/testcase")
        self.assertEqual(cases[0].get("classname"), "01_vector_add.task_1")
        self.assertIsNone(cases[0].find("failure"))
        self.assertIn("<&>", cases[1].find("failure").text)
        self.assertEqual(cases[2].find("error").get("type"), "crashed")


class CheckGradesTest(unittest.TestCase):
    """The end-to-end checker must itself be able to fail."""

    def test_a_wrong_status_or_missing_text_is_reported(self):
        results = gradescope_results(sample_run())
        self.assertEqual(check(results, {"01_vector_add": {"1": {"correctness": "passed"}}}), [])
        self.assertTrue(check(results, {"01_vector_add": {"1": {"performance": "passed"}}}))
        self.assertTrue(check(results, {"01_vector_add": {"2": {"correctness": {
            "status": "crashed", "contains": ["timed out"]}}}}))
        self.assertTrue(check(results, {"01_vector_add": {"3": {"correctness": "passed"}}}))

    def test_under_the_sanitizer_a_performance_expected_to_pass_is_expected_skipped(self):
        expected = {"01_vector_add": {"1": {"correctness": "passed", "performance": "passed"},
                                      "2": {"correctness": "failed", "performance": {"status": "not_run"}},
                                      "3": {"performance": {"status": "passed", "metrics": {}}}}}
        self.assertEqual(under_the_sanitizer(expected), {"01_vector_add": {
            "1": {"correctness": "passed", "performance": "skipped"},
            "2": {"correctness": "failed", "performance": {"status": "not_run"}},
            "3": {"performance": "skipped"}}})
        self.assertEqual(expected["01_vector_add"]["1"]["performance"], "passed")  # the original is left alone

    def test_skipped_verdicts_expect_exit_zero_and_a_required_failure_does_not(self):
        results = gradescope_results(sample_run())
        passed = {"01_vector_add": {"1": {"correctness": "passed", "performance": "passed"}}}
        self.assertTrue(exits_zero(results, passed))
        self.assertTrue(exits_zero(results, under_the_sanitizer(passed)))  # skipped is not a failure
        self.assertFalse(exits_zero(results, {"01_vector_add": {"1": {"correctness": "failed"}}}))
        self.assertFalse(exits_zero(results, {"01_vector_add": {"1": {"performance": {"status": "not_run"}}}}))
        # as GradeRun.all_passed: skipped counts as passing for a performance only
        self.assertFalse(exits_zero(results, {"01_vector_add": {"1": {"correctness": "skipped"}}}))
        # and a grading of an optional task alone (a challenge's broken variant, --caught-tasks) has no
        # required verdict: ./grade exits 1 however the challenge went
        challenge = {"tests": [{"tags": ["05_streams", "task_4", "correctness"], "extra_data": {"optional": True}}]}
        self.assertFalse(exits_zero(challenge, {"05_streams": {"4": {"correctness": "failed"}}}))
        self.assertFalse(exits_zero(challenge, {"05_streams": {"4": {"correctness": "passed"}}}))
        self.assertTrue(exits_zero(challenge, {"05_streams": {"4": {"correctness": "failed"}},
                                               "01_vector_add": {"1": {"correctness": "passed"}}}))

    def test_the_grade_options_follow_from_the_expectations(self):
        args = Namespace(sanitize=False, counters=False, timing_cache="cache.json")
        caught = {"01_vector_add": {"1": {"correctness": {"status": "failed"}, "performance": "not_run"}}}
        self.assertEqual(grade_options(caught, args), ["--no-timing", "--no-counters"])
        slow = {"01_vector_add": {"1": {"correctness": "passed", "performance": {"status": "failed"}}}}
        self.assertEqual(grade_options(slow, args), ["--no-counters", "--timing-cache", "cache.json"])
        hangs = {"01_vector_add": {"2": {"correctness": {"status": "timed_out", "hints": ["timeout-stuck"]}}}}
        self.assertEqual(grade_options(hangs, args), ["--no-timing", "--no-counters", "--timeout", "15"])
        sanitized = Namespace(sanitize=True, counters=True, timing_cache=None)
        self.assertEqual(grade_options(slow, sanitized), ["--sanitize"])

    def test_listed_tasks_become_task_selectors(self):
        expected = {"04_reduction": {"2": {"correctness": "passed"}},
                    "06_debugging_profiling": {"1": {"correctness": "passed"}, "5": {"correctness": "passed"}}}
        self.assertEqual(selectors(expected), ["04_reduction.2", "06_debugging_profiling.1", "06_debugging_profiling.5"])

    def test_a_broken_variant_is_graded_on_the_tasks_it_breaks(self):
        expected = {"02_multiply_add": {"1": {"correctness": "passed", "performance": "passed"},
                                        "2": {"correctness": {"status": "failed", "contains": ["grid"]}},
                                        "3": {"correctness": "passed"}},
                    "06_debugging_profiling": {"4": {"correctness": "passed",
                                                     "performance": {"status": "passed", "hints": ["x"]}},
                                               "5": {"correctness": "passed"}},
                    "07_monte_carlo": {"1": {"correctness": "passed"}}}
        caught = caught_tasks(expected)
        self.assertEqual(selectors(caught), ["02_multiply_add.2", "06_debugging_profiling.4"])
        self.assertEqual(caught["06_debugging_profiling"]["4"], expected["06_debugging_profiling"]["4"])
        # Timing follows what is left: task 1's performance no longer asks for a timed phase, 06.4's does.
        args = Namespace(sanitize=False, counters=False, timing_cache=None)
        self.assertEqual(grade_options({"02_multiply_add": caught["02_multiply_add"]}, args),
                         ["--no-timing", "--no-counters"])
        self.assertEqual(grade_options(caught, args), ["--no-counters"])
        everything_passes = {"01_vector_add": {"1": {"correctness": "passed"}}}
        self.assertEqual(caught_tasks(everything_passes), everything_passes)  # nothing broken: all kept

    def test_a_metric_out_of_its_bounds_is_reported(self):
        results = gradescope_results(sample_run())
        def expect(bounds):
            return {"01_vector_add": {"1": {"performance": {
                "status": "failed", "metrics": {"fraction_of_copy_bandwidth": bounds}}}}}
        self.assertEqual(check(results, expect({"min": 0.005, "max": 2})), [])
        self.assertEqual(check(results, expect({"max": 0.01})), [])
        problems = check(results, expect({"min": 0.5}))
        self.assertEqual(len(problems), 1)
        self.assertIn("metric fraction_of_copy_bandwidth is 0.01, expected within [0.5, inf]", problems[0])
        self.assertTrue(check(results, {"01_vector_add": {"1": {"correctness": {  # not recorded at all
            "status": "passed", "metrics": {"fraction_of_copy_bandwidth": {"max": 2}}}}}}))


if __name__ == "__main__":
    unittest.main()
