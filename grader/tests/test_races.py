"""Results that change between runs (grader/driver/races.py), without a GPU: a grader program reports
the fact ("Seen [results-differ]: ..."), the driver runs the failed task's tests once under
compute-sanitizer racecheck, and only a shared-memory hazard in racecheck's report makes the
verdict say Hint [race], naming the kernel and line. Racecheck's output is canned (the shapes of
test_sanitizer_check.py); the driver's flow runs with a stand-in for the process runner."""
import unittest
from pathlib import Path

from helpers import phase  # noqa: F401  (puts the driver on sys.path)
from check_grades import hint_ids
from driver import races, scoring
from driver.runner import PhaseResult
from test_sanitizer_check import (CLEAN, MEMCHECK_OUT_OF_BOUNDS, RACECHECK, RACECHECK_OLD_FORM, RACECHECK_WARNING_ONLY,
                                  GradingHarness, passing, sanitized, the_lesson)

# What lesson 03's grader says when a rerun of matmul_tiled on the same inputs differs.
DIFFER_MESSAGE = ("matmul_tiled computed a wrong C = A * B with M x N x K = 1000 x 1000 x 1000.\n"
                  "37 of 1000000 elements of C are wrong (0 never written), in rows 3..990 and columns 0..999.\n"
                  "Seen [results-differ]: the same inputs gave different results in two runs (37 elements differ "
                  "between them).")
REPRODUCE = "./grade --sanitize --seed 7 04.2"


def failed(message):
    return scoring.ComponentResult("correctness", scoring.FAILED, 0, 4, "37 of 1000000 elements of C are wrong",
                                   message)


def failing_run(task_id, **fields):
    """A racecheck run that went through the task's tests, which failed (the values are wrong)."""
    result = PhaseResult(run_completed=True, **fields)
    result.records.append({"event": "end", "test": "t", "tags": [f"task_{task_id}"], "outcome": "failed",
                           "messages": ["wrong C"], "metrics": {}})
    return result


def racecheck(result, limit=120.0):
    return scoring.SanitizerRun("racecheck", [2], result, limit)


class FactTest(unittest.TestCase):
    def test_the_label_is_read_on_a_line_of_its_own_of_a_failed_verdict(self):
        self.assertTrue(races.results_differ(failed(DIFFER_MESSAGE)))
        self.assertFalse(races.results_differ(failed("3 of 10 elements are wrong")))
        self.assertFalse(races.results_differ(failed("it threw: Seen [results-differ]: forged")))  # not at a line start
        passed = scoring.ComponentResult("correctness", scoring.PASSED, 4, 4, "correct", DIFFER_MESSAGE)
        self.assertFalse(races.results_differ(passed))

    def test_the_label_is_the_one_the_grader_programs_write(self):
        header = (Path(__file__).resolve().parents[1] / "support" / "diagnosis.hpp").read_text()
        self.assertIn(f'kResultsDifferLabel = "{races.RESULTS_DIFFER}"', header)


class FollowUpTest(unittest.TestCase):
    def setUp(self):
        self.task = the_lesson().tasks[1]

    def test_a_shared_memory_hazard_names_the_race_kernel_and_line(self):
        for text in (RACECHECK, RACECHECK_OLD_FORM):
            run = racecheck(sanitized(failing_run(2, returncode=86, elapsed_s=4.0), text))
            verdict = races.follow_up(self.task, failed(DIFFER_MESSAGE), run, REPRODUCE)
            self.assertEqual(hint_ids(verdict.details), ["race"])
            self.assertIn("Hint [race]: compute-sanitizer racecheck, run on this task's tests at small sizes, reported "
                          "a shared-memory hazard in matmul_tiled (matmul.cu:41): Race reported between Write access "
                          "and Read access.", verdict.details)
            self.assertIn("__syncthreads()", verdict.details)
            self.assertIn("matmul.cu:47", verdict.details)  # the report quoted as printed
            self.assertIn(f"Every report: {REPRODUCE}", verdict.details)
            self.assertTrue(verdict.details.startswith(DIFFER_MESSAGE))  # the facts stay first
            self.assertEqual((verdict.status, verdict.score, verdict.summary),
                             (scoring.FAILED, 0, "37 of 1000000 elements of C are wrong"))
            record = verdict.extra_data["results_differ"]
            self.assertEqual(record["racecheck"], "hazard")
            self.assertEqual(record["first_report"]["kernel"], "matmul_tiled")
            self.assertEqual(record["run"]["tool"], "racecheck")

    def test_no_hazard_names_no_cause_and_says_how_to_look(self):
        for text in (CLEAN, RACECHECK_WARNING_ONLY):
            run = racecheck(sanitized(failing_run(2, returncode=42), text))
            verdict = races.follow_up(self.task, failed(DIFFER_MESSAGE), run, REPRODUCE)
            self.assertEqual(hint_ids(verdict.details), [])
            self.assertIn("racecheck ran this task's tests at small sizes and reported no shared-memory hazard, so "
                          "the grader names no cause", verdict.details)
            self.assertIn("shared memory a load skipped", verdict.details)
            self.assertIn(f"To look: {REPRODUCE}", verdict.details)
            self.assertEqual(verdict.extra_data["results_differ"]["racecheck"], "no_hazard")

    def test_another_tools_findings_are_no_race(self):
        # Only racecheck's hazards prove a race; a memcheck report in a run of another tool does not.
        memcheck = scoring.SanitizerRun("memcheck", [2], sanitized(failing_run(2, returncode=86),
                                                                    MEMCHECK_OUT_OF_BOUNDS), 120.0)
        self.assertEqual(races.shared_memory_hazards(memcheck), [])
        verdict = races.follow_up(self.task, failed(DIFFER_MESSAGE), memcheck, REPRODUCE)
        self.assertEqual(hint_ids(verdict.details), [])

    def test_a_run_that_did_not_finish_could_not_look(self):
        for result, why in [(PhaseResult(timed_out=True, returncode=-9), "its run did not finish within 120 s"),
                            (PhaseResult(unfinished_test="t", returncode=-11), "its run ended before it finished"),
                            (passing(1), "its run ended before it finished")]:  # another task's tests only
            verdict = races.follow_up(self.task, failed(DIFFER_MESSAGE), racecheck(sanitized(result, CLEAN)),
                                      REPRODUCE)
            self.assertEqual(hint_ids(verdict.details), [])
            self.assertIn("The grader could not look for a race with compute-sanitizer racecheck: " + why,
                          verdict.details)
            self.assertEqual(verdict.extra_data["results_differ"]["racecheck"], "not_finished")

    def test_without_a_run_the_verdict_says_why(self):
        verdict = races.follow_up(self.task, failed(DIFFER_MESSAGE), None, REPRODUCE, "there is no compute-sanitizer")
        self.assertIn("could not look for a race with compute-sanitizer racecheck: there is no compute-sanitizer.",
                      verdict.details)
        self.assertEqual(hint_ids(verdict.details), [])
        self.assertEqual(verdict.extra_data["results_differ"], {"racecheck": "not_run"})


class DriverFlowTest(GradingHarness, unittest.TestCase):
    """cli.Grader: the racecheck run follows only a failure that reports the fact."""

    def grade(self, behave, index=None, **options):
        _, result = self.grade_with(behave, index, **{"no_timing": True, **options})
        return {t.task.id: t.correctness for t in result.tasks}, result

    @staticmethod
    def correctness(call, messages):
        """Plain runs: task 2 fails with `messages`, task 3 with wrong elements and no fact, task 1 passes."""
        result = passing(elapsed_s=2.0)
        for task_id in call["tasks"]:
            fails = {2: messages, 3: ["3 of 10 elements are wrong"]}.get(task_id)
            result.records.append({"event": "end", "test": "t", "tags": [f"task_{task_id}"],
                                   "outcome": "failed" if fails else "passed", "messages": fails or [],
                                   "metrics": {}})
        return result

    def test_racecheck_runs_once_for_the_task_that_saw_results_differ_and_names_the_race(self):
        def behave(call):
            if not call["tool"]:
                return self.correctness(call, [DIFFER_MESSAGE])
            if call["tool"] == "racecheck" and call["tasks"] == [2]:
                return sanitized(failing_run(2, returncode=86, elapsed_s=4.0), RACECHECK)
            return None
        verdicts, result = self.grade(behave)
        # The check of task 1's pass (memcheck, racecheck), then one racecheck run for task 2; none for task 3.
        self.assertEqual(self.runs.checks(side_by_side=2), [("memcheck", [1]), ("racecheck", [1]), ("racecheck", [2])])
        follow = self.runs.calls[-1]
        self.assertEqual(follow["spec"], "[task_2]~[perf]")
        self.assertEqual(follow["env"].get("WORKBOOK_SANITIZE"), "1")  # small sizes, no guards
        self.assertIn("--report-api-errors no", " ".join(follow["prefix"]))
        self.assertEqual(follow["timeout_s"], 60 + 20 * 2.0)
        self.assertEqual(hint_ids(verdicts[2].details), ["race"])
        self.assertIn("in matmul_tiled (matmul.cu:41)", verdicts[2].details)
        self.assertEqual(hint_ids(verdicts[3].details), [])
        self.assertNotIn("results_differ", verdicts[3].extra_data)
        self.assertIn("04_reduction task 2: results differ between runs; racecheck reported a shared-memory hazard",
                      self.output)
        self.assertEqual(result.wall_s["sanitizer_check"], 4.0)  # task 1's checks took 0 s here

    def test_no_hazard_leaves_the_facts(self):
        def behave(call):
            if not call["tool"]:
                return self.correctness(call, [DIFFER_MESSAGE])
            return sanitized(failing_run(2), CLEAN) if call["tasks"] == [2] else None
        verdicts, _ = self.grade(behave)
        self.assertEqual(hint_ids(verdicts[2].details), [])
        self.assertIn("reported no shared-memory hazard", verdicts[2].details)
        self.assertIn("To look: ./grade --sanitize --seed 7 04.2", verdicts[2].details)
        self.assertIn("racecheck reported no hazard", self.output)

    def test_without_compute_sanitizer_nothing_runs_and_the_verdict_says_so(self):
        verdicts, _ = self.grade(lambda call: self.correctness(call, [DIFFER_MESSAGE]) if not call["tool"] else None,
                                 index={"compute_sanitizer": ""})
        self.assertEqual(self.runs.checks(), [])
        self.assertIn("could not look for a race with compute-sanitizer racecheck: there is no compute-sanitizer "
                      "here (the build found none beside nvcc, and there is none on PATH)", verdicts[2].details)
        self.assertEqual(hint_ids(verdicts[2].details), [])

    def test_under_sanitize_the_run_itself_was_under_the_tools(self):
        verdicts, _ = self.grade(lambda call: self.correctness(call, [DIFFER_MESSAGE]), sanitize=True)
        self.assertEqual([(c["tool"], c["tasks"]) for c in self.runs.calls],
                         [("memcheck", [1]), ("racecheck", [1]), ("memcheck", [2]), ("memcheck", [3])])
        self.assertNotIn("results_differ", verdicts[2].extra_data)

    def test_a_failure_without_the_fact_gets_no_racecheck_run(self):
        verdicts, _ = self.grade(lambda call: self.correctness(call, ["5 of 10 elements are wrong"])
                                 if not call["tool"] else None)
        self.assertEqual(self.runs.checks(side_by_side=2), [("memcheck", [1]), ("racecheck", [1])])
        self.assertNotIn("results_differ", verdicts[2].extra_data)


if __name__ == "__main__":
    unittest.main()
