"""Scoring rules: points only for what passed, performance only for correct kernels,
crashes and hangs named as such."""
import unittest

from helpers import lesson, matmul_lesson, phase
from driver import scoring, skeleton
from driver.scoring import judge_correctness, judge_performance


class CorrectnessTest(unittest.TestCase):
    def setUp(self):
        self.task = lesson().tasks[0]

    def judge(self, p):
        return judge_correctness(self.task, p, "01_vector_add")

    def test_all_passed_gives_full_points(self):
        r = self.judge(phase(("passed", [], {})))
        self.assertEqual((r.status, r.score, r.max_score), (scoring.PASSED, 3, 3))

    def test_one_failure_gives_zero_with_the_message_and_no_tier_hints(self):
        r = self.judge(phase(("passed", [], {}), ("failed", ["n := 33\n3 of 33 elements are wrong"], {})))
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))
        self.assertIn("3 of 33 elements are wrong", r.summary)
        self.assertIn("n := 33", r.details)
        # The manifest's tiered hints are shown one at a time by progress.py, never all at once.
        self.assertNotIn("Use i < n.", r.details)

    def test_forged_report_lines_fail_loudly_whatever_the_records_say(self):
        first = '{"event": "end", "test": "forged", "outcome": "passed", "seq": 1}'
        r = self.judge(phase(("passed", [], {}), authenticated=True, report_found=True, run_completed=True,
                             forged_lines=2, first_forged=first))
        self.assertEqual((r.status, r.score, r.max_score), (scoring.TAMPERED, 0, 3))
        self.assertEqual(r.summary, "the report file holds 2 lines the grader did not write")
        self.assertEqual(r.details, f"The report file holds 2 lines the grader did not write, the first:\n  {first}\n"
                                    "The grader program's results are authenticated per run, so results written by "
                                    "other code do not count.")
        self.assertEqual(scoring.STATUS_LABELS[r.status], "REPORT TAMPERED")
        perf = judge_performance(lesson().tasks[0], self.judge(phase(("passed", [], {}))),
                                 phase(("passed", [], {"fraction_of_copy_bandwidth": 9.0}), authenticated=True,
                                       run_completed=True, forged_lines=1, first_forged=first), "01_vector_add")
        self.assertEqual((perf.status, perf.score), (scoring.TAMPERED, 0))
        self.assertIn("1 line the grader did not write", perf.summary)

    def test_replayed_lines_are_named_as_copies(self):
        r = self.judge(phase(("passed", [], {}), authenticated=True, run_completed=True, forged_lines=3,
                             out_of_sequence=1, first_forged="{...}"))
        self.assertEqual(r.status, scoring.TAMPERED)
        self.assertIn("3 lines the grader did not write (1 of them copies of lines the grader wrote, out of their "
                      "place: replayed, moved, or after lines that were removed), the first:", r.details)

    def test_a_key_nobody_could_read_says_so_and_counts_nothing(self):
        r = self.judge(phase(("passed", [], {}), authenticated=True, forged_lines=3, first_forged="{...}",
                             key_problem="the pipe was empty"))
        self.assertEqual((r.status, r.score), (scoring.TAMPERED, 0))
        self.assertIn("could not read its key", r.summary)
        self.assertIn("no whole key in the pipe the driver gave it (the pipe was empty)", r.details)
        self.assertIn("None of the 3 lines of its report can be authenticated", r.details)
        self.assertNotIn("compute-sanitizer", r.details)
        r = self.judge(phase(authenticated=True, forged_lines=1, key_problem="the pipe could not be read: Bad file "
                             "descriptor", sanitizer_tool="memcheck"))
        self.assertIn("or compute-sanitizer, which started the program, did not pass the pipe on", r.details)

    def test_an_exit_with_status_0_before_the_last_record_does_not_pass(self):
        sentence = ("before it finished its tests (something in the submission ended the process, e.g. exit())")
        # After a test that passed: the tests after it never ran.
        r = self.judge(phase(("passed", [], {}), authenticated=True, report_found=True, run_completed=False,
                             returncode=0))
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))
        self.assertEqual(r.summary, "the grader program exited with status 0 before it finished its tests")
        self.assertIn("The grader program exited with status 0 after 1 of its tests " + sentence, r.details)
        # While a test was open.
        r = self.judge(phase(authenticated=True, report_found=True, run_completed=False, returncode=0,
                             unfinished_test="t"))
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))
        self.assertIn('exited with status 0 during "t" ' + sentence, r.details)
        # Before any test, or with the report file gone.
        r = self.judge(phase(authenticated=True, report_found=True, run_completed=False, returncode=0))
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))
        self.assertIn("exited with status 0 before its first test " + sentence, r.details)
        r = self.judge(phase(authenticated=True, run_completed=False, returncode=0))
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))
        self.assertIn("its report file is missing", r.details)
        # The same in a performance phase, whatever metric it recorded.
        perf = judge_performance(lesson().tasks[0], self.judge(phase(("passed", [], {}))),
                                 phase(("passed", [], {"fraction_of_copy_bandwidth": 9.0}), authenticated=True,
                                       report_found=True, returncode=0), "01_vector_add")
        self.assertEqual((perf.status, perf.score), (scoring.FAILED, 0))
        # Finished runs, and runs without a key (a program run by hand), are judged as before.
        self.assertEqual(self.judge(phase(("passed", [], {}), authenticated=True, run_completed=True)).status,
                         scoring.PASSED)
        self.assertEqual(self.judge(phase(("passed", [], {}))).status, scoring.PASSED)

    def test_wrote_nothing_is_not_implemented_only_in_the_untouched_skeleton(self):
        facts = "vector_add<<<4, 256>>> on n = 1000 ran and wrote nothing: all 1000 elements of c still hold ..."
        where = "vector_add in exercises/01_vector_add/vector_add.cu"
        record = phase(("wrote_nothing", [facts], {}))
        untouched = judge_correctness(self.task, record, "01_vector_add", skeleton.UNTOUCHED, where)
        self.assertEqual((untouched.status, untouched.score, untouched.summary),
                         (scoring.NOT_IMPLEMENTED, 0, "not implemented yet"))
        self.assertIn(where, untouched.details)
        # Code the student wrote that writes nothing is a failure, told with the grader's facts.
        changed = judge_correctness(self.task, record, "01_vector_add", skeleton.CHANGED, where)
        self.assertEqual((changed.status, changed.score), (scoring.FAILED, 0))
        self.assertEqual(changed.summary, facts[:100])
        self.assertIn(facts, changed.details)
        self.assertIn("no longer the skeleton", changed.details)
        self.assertNotIn("not implemented", changed.summary + changed.details)
        # Without a record of the skeleton nothing proves it untouched: the facts, no label.
        unknown = self.judge(record)
        self.assertEqual(unknown.status, scoring.FAILED)
        self.assertIn(facts, unknown.details)

    def test_any_other_end_before_the_last_record_does_not_pass_either(self):
        # Status 1 between two tests (say, _exit(1) from a thread): the tests that passed are not enough.
        r = self.judge(phase(("passed", [], {}), authenticated=True, report_found=True, run_completed=False,
                             returncode=1, output_tail="last words"))
        self.assertEqual((r.status, r.score), (scoring.CRASHED, 0))
        self.assertIn("ended with status 1 before it finished its tests", r.summary)
        self.assertIn("last words", r.details)
        # No test at all: the program's output says why (a bad test spec, say).
        r = self.judge(phase(authenticated=True, report_found=True, run_completed=False, returncode=1,
                             output_tail="Invalid test spec"))
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))
        self.assertIn("Invalid test spec", r.details)

    def test_printed_text_cannot_fail_a_run_that_finished_clean(self):
        # Only a run that went wrong is read for the CUDA error that ended it.
        printed = "cudaErrorIllegalAddress\nAll tests passed (42 assertions in 3 test cases)"
        r = self.judge(phase(("passed", [], {}), authenticated=True, report_found=True, run_completed=True,
                             output_tail=printed))
        self.assertEqual((r.status, r.score), (scoring.PASSED, 3))
        r = self.judge(phase(("failed", ["3 of 33 elements are wrong"], {}), authenticated=True, run_completed=True,
                             output_tail="CUDA error: cudaErrorIllegalAddress"))
        self.assertEqual(r.status, scoring.CRASHED)

    def test_no_records_at_all_never_passes(self):
        for returncode in (0, 1):
            r = self.judge(phase(authenticated=True, report_found=True, run_completed=True, returncode=returncode))
            self.assertEqual((r.status, r.score), (scoring.FAILED, 0))
            self.assertIn("no test ran", r.summary)

    def test_a_crash_names_the_call_that_crashed(self):
        thrown = ["n := 1000", "block := 256",
                  "threw: CUDA error cudaErrorIllegalAddress (an illegal memory access was encountered)"]
        record = phase(("passed", [], {}), ("failed", thrown, {}), open_wait=("vector_add, n = 1000, block 256", 1.5))
        record.records[1]["test"] = "Task 1: vector_add is correct for every size and block size"
        r = self.judge(record)
        self.assertEqual((r.status, r.score), (scoring.CRASHED, 0))
        self.assertIn('in the test "Task 1: vector_add is correct for every size and block size"', r.details)
        self.assertIn("with n := 1000, block := 256", r.details)
        self.assertIn("after: vector_add, n = 1000, block 256", r.details)
        # Nothing known, nothing claimed.
        bare = self.judge(phase(("failed", ["threw: cudaErrorIllegalAddress"], {})))
        self.assertEqual(bare.details.split(".")[0], "A kernel crashed with cudaErrorIllegalAddress")

    def test_a_crash_names_the_call_its_error_surfaced_in(self):
        # The grader's call ended by throwing with the error pending (GpuWait unwinding): that
        # call is named, not an earlier one that threw an exception of its own, nor another test's.
        test = "Task 3: vector_add_host is correct"
        record = phase(("failed", ["threw: CUDA error cudaErrorIllegalAddress"], {}))
        record.records[0]["test"] = test
        record.raised_waits = [("Task 1: other", "vector_add(n = 5)", "cudaErrorIllegalAddress"),
                               (test, "vector_add_host(n = 0)", ""),
                               (test, "vector_add_host(n = 1000)", "cudaErrorIllegalAddress")]
        r = self.judge(record)
        self.assertEqual((r.status, r.score), (scoring.CRASHED, 0))
        self.assertIn("in the grader's call vector_add_host(n = 1000), which ended with that error", r.details)
        self.assertNotIn("n = 0", r.details)
        self.assertNotIn("n = 5", r.details)
        # Another error pending than the one reported: that call is not named.
        record.raised_waits = [(test, "vector_add_host(n = 1000)", "cudaErrorLaunchFailure")]
        self.assertNotIn("vector_add_host(n = 1000)", self.judge(record).details)

    def test_a_timeout_names_the_test_that_hung(self):
        r = self.judge(phase(timed_out=True, timeout_s=30, unfinished_test="Task 1: correct"))
        self.assertEqual((r.status, r.score), (scoring.TIMED_OUT, 0))
        self.assertIn("timed out after 30 s", r.summary)
        self.assertIn("Task 1: correct", r.summary)

    def test_a_launch_that_never_finished_is_called_stuck(self):
        # Five quick waits, then one open from t = 2 s until the kill at 30 s.
        r = self.judge(phase(timed_out=True, timeout_s=30, elapsed_s=30.0, wait_durations_s=[0.01] * 5,
                             open_wait=("vector_add_grid_stride on n = 1000", 2.0)))
        self.assertIn("Hint [timeout-stuck]", r.details)
        self.assertIn("vector_add_grid_stride on n = 1000", r.details)
        self.assertIn("for the last 28.0 s", r.details)
        self.assertNotIn("timeout-slow", r.details)

    def test_slow_checks_that_kept_finishing_are_called_slow_not_stuck(self):
        # Twenty waits of 1.4 s each, the last one open for 1 s when the limit hit.
        r = self.judge(phase(timed_out=True, timeout_s=30, elapsed_s=30.0, wait_durations_s=[1.4] * 20,
                             open_wait=("multiply_add on n = 1000003", 29.0)))
        self.assertIn("Hint [timeout-slow]", r.details)
        self.assertIn("20 GPU waits had finished", r.details)
        self.assertNotIn("timeout-stuck", r.details)

    def test_a_long_open_wait_short_of_half_the_limit_is_neither_stuck_nor_slow(self):
        # Host work used the first 18 s; then one wait open for 12 s after waits of 0.01 s.
        r = self.judge(phase(timed_out=True, timeout_s=30, elapsed_s=30.0, wait_durations_s=[0.01] * 5,
                             open_wait=("a launch", 18.0)))
        self.assertNotIn("Hint [", r.details.split("\nHint 1")[0])
        self.assertIn("for the last 12.0 s", r.details)

    def test_a_timeout_without_wait_records_names_no_cause(self):
        r = self.judge(phase(timed_out=True, timeout_s=30, elapsed_s=30.0))
        self.assertEqual(r.details.split("\nHint 1")[0], "The test did not finish within 30 s.")
        # A long first wait that is short of half the limit is not called stuck either.
        r = self.judge(phase(timed_out=True, timeout_s=30, elapsed_s=30.0, open_wait=("x", 20.0)))
        self.assertNotIn("Hint [", r.details.split("\nHint 1")[0])

    def test_an_illegal_address_is_a_crash_with_the_sanitizer_hint(self):
        r = self.judge(phase(("failed", ["threw: x.cu:9: cudaMemcpy failed: cudaErrorIllegalAddress (an illegal "
                                         "memory access was encountered)"], {})))
        self.assertEqual(r.status, scoring.CRASHED)
        self.assertIn("illegal memory access", r.summary)
        self.assertIn("./grade --sanitize 01", r.details)

    def test_death_by_signal_is_a_crash(self):
        r = self.judge(phase(returncode=-11, unfinished_test="Task 1: correct", output_tail="boom"))
        self.assertEqual(r.status, scoring.CRASHED)
        self.assertIn("SIGSEGV", r.summary)

    def test_a_rejected_launch_is_a_failure_not_a_crash(self):
        # CUDA 13 reports 2048 threads per block as cudaErrorInvalidValue, older runtimes as
        # cudaErrorInvalidConfiguration.
        for code in ["cudaErrorInvalidValue", "cudaErrorInvalidConfiguration"]:
            r = self.judge(phase(("failed", [f"threw: x.cu:20: kernel launch failed: {code} (invalid argument)"], {})))
            self.assertEqual(r.status, scoring.FAILED)
            self.assertIn(f"a kernel launch was rejected ({code})", r.summary)
            self.assertIn("more than 1024 threads per block", r.details)

    def test_sanitizer_findings_outrank_the_crash_they_cause(self):
        p = phase(("failed", ["threw: cudaErrorLaunchFailure (unspecified launch failure)"], {}),
                  sanitizer_tool="memcheck", sanitizer_errors=1, sanitizer_findings=["Invalid __global__ write"])
        r = self.judge(p)
        self.assertEqual(r.status, scoring.FAILED)
        self.assertIn("memcheck found 1 error(s)", r.summary)

    def test_sanitizer_findings_fail_the_task(self):
        p = phase(("passed", [], {}), sanitizer_tool="memcheck", sanitizer_errors=2,
                  sanitizer_findings=["Invalid __global__ write of size 4 bytes", "at vector_add+0x70 in x.cu:7"])
        r = self.judge(p)
        self.assertEqual(r.status, scoring.FAILED)
        self.assertIn("memcheck found 2 error(s)", r.summary)
        self.assertIn("x.cu:7", r.details)

    def test_no_records_is_never_a_pass(self):
        r = self.judge(phase(returncode=0))
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))

    def test_all_skipped_is_not_a_pass(self):
        r = self.judge(phase(("skipped", ["no CUDA-capable GPU"], {})))
        self.assertEqual((r.status, r.score), (scoring.SKIPPED, 0))


class PerformanceTest(unittest.TestCase):
    def setUp(self):
        self.task = lesson().tasks[0]
        self.correct = judge_correctness(self.task, phase(("passed", [], {})), "01")

    def perf(self, fraction, gbps=1000.0, reference=None):
        return judge_performance(self.task, self.correct, phase(
            ("passed", [], {"fraction_of_copy_bandwidth": fraction, "gbps": gbps})), "01", reference)

    def test_at_or_above_the_threshold_earns_the_points(self):
        self.assertEqual(self.perf(0.6).score, 2)
        self.assertEqual(self.perf(0.93).status, scoring.PASSED)

    def test_below_the_threshold_earns_nothing_and_says_so(self):
        r = self.perf(0.001)
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))
        self.assertIn("below the 60% threshold", r.summary)
        # What to check is offered as a checklist, never as a hint: the figure proves no cause.
        self.assertIn("Things to check (the figure alone does not say which): a memory-bound kernel", r.details)
        self.assertNotIn("Hint", r.details)

    def test_the_reference_ratio_is_reported(self):
        reference = phase(("passed", [], {"fraction_of_copy_bandwidth": 0.9, "gbps": 2000.0}))
        r = self.perf(0.45, gbps=1000.0, reference=reference)
        self.assertAlmostEqual(r.metrics["fraction_of_reference"], 0.5)
        self.assertIn("50% of the reference", r.summary)

    def test_incorrect_kernels_are_not_timed(self):
        wrong = judge_correctness(self.task, phase(("failed", ["wrong"], {})), "01")
        r = judge_performance(self.task, wrong, phase(("passed", [], {"fraction_of_copy_bandwidth": 1.0})), "01")
        self.assertEqual((r.status, r.score), (scoring.NOT_RUN, 0))

    def test_a_missing_metric_is_a_failure(self):
        r = judge_performance(self.task, self.correct, phase(("passed", [], {})), "01")
        self.assertEqual((r.status, r.score), (scoring.FAILED, 0))

    def test_tasks_without_performance_points_have_no_performance_component(self):
        host_task = lesson().tasks[1]
        self.assertIsNone(judge_performance(host_task, self.correct, None, "01"))


class SpeedupTest(unittest.TestCase):
    def test_a_speedup_reads_as_a_factor_not_a_percentage(self):
        from driver.manifest import Task
        task = Task(3, "batches", 3, 2, "speedup_over_cudamalloc", 3.0)
        correct = scoring.ComponentResult("correctness", scoring.PASSED, 3, 3, "correct")
        r = judge_performance(task, correct, phase(("passed", [], {"speedup_over_cudamalloc": 10.31})), "05")
        self.assertEqual(r.status, scoring.PASSED)
        self.assertIn("10.3x as fast as cudaMalloc and cudaFree per batch", r.summary)
        self.assertIn("threshold: 3.0x", r.details)
        r = judge_performance(task, correct, phase(("passed", [], {"speedup_over_cudamalloc": 1.5})), "05")
        self.assertIn("below the 3.0x threshold", r.summary)
        self.assertNotIn("%", r.summary)


class GflopsTest(unittest.TestCase):
    """Compute-bound lessons report GFLOP/s and compare them with the reference's."""

    def setUp(self):
        self.task = matmul_lesson().tasks[0]
        self.correct = judge_correctness(self.task, phase(("passed", [], {})), "03")

    def test_gflops_and_the_reference_ratio(self):
        reference = phase(("passed", [], {"fraction_of_cublas": 0.17, "gflops": 8000.0}))
        r = judge_performance(self.task, self.correct, phase(
            ("passed", [], {"fraction_of_cublas": 0.085, "gflops": 4000.0})), "03", reference)
        self.assertEqual(r.status, scoring.FAILED)
        self.assertIn("8% of cuBLAS FP32 (4000 GFLOP/s), 50% of the reference", r.summary)
        self.assertIn("threadIdx.x the column", r.details)
        self.assertNotIn("copy bandwidth", r.details)


class RunTest(unittest.TestCase):
    def test_optional_tasks_are_bonus_points_and_do_not_fail_the_run(self):
        l = matmul_lesson()
        ok = [scoring.ComponentResult("correctness", scoring.PASSED, 3, 3, ""),
              scoring.ComponentResult("performance", scoring.PASSED, 2, 2, "")]
        missing = [scoring.ComponentResult("correctness", scoring.NOT_IMPLEMENTED, 0, 2, ""),
                   scoring.ComponentResult("performance", scoring.NOT_RUN, 0, 2, "")]
        run = scoring.GradeRun("t", 1, {}, [scoring.LessonResult(l, [scoring.TaskResult(l.tasks[0], *ok),
                                                                     scoring.TaskResult(l.tasks[1], *missing)])])
        self.assertEqual((run.score, run.max_score, run.bonus_max_score), (5, 5, 4))
        self.assertTrue(run.all_passed)
        run.lessons[0].tasks[1] = scoring.TaskResult(l.tasks[1], *[
            scoring.ComponentResult(c.kind, scoring.PASSED, c.max_score, c.max_score, "") for c in missing])
        self.assertEqual(run.score, 9)  # bonus on top of the maximum
        run.lessons[0].tasks[0].correctness = missing[0]
        self.assertFalse(run.all_passed)  # a required task still counts


    def test_all_passed_needs_every_component(self):
        l = lesson()
        ok = scoring.ComponentResult("correctness", scoring.PASSED, 3, 3, "")
        bad = scoring.ComponentResult("performance", scoring.FAILED, 0, 2, "")
        run = scoring.GradeRun("t", 1, {}, [scoring.LessonResult(l, [scoring.TaskResult(l.tasks[0], ok, bad)])])
        self.assertFalse(run.all_passed)
        self.assertEqual(run.score, 3)
        self.assertEqual(run.max_score, 9)

    def test_performance_skipped_under_the_sanitizer_still_counts_as_all_passed(self):
        l = lesson()
        ok = scoring.ComponentResult("correctness", scoring.PASSED, 3, 3, "")
        skipped = scoring.ComponentResult("performance", scoring.SKIPPED, 0, 2, "")
        skipped_correctness = scoring.ComponentResult("correctness", scoring.SKIPPED, 0, 3, "")
        run = scoring.GradeRun("t", 1, {}, [scoring.LessonResult(l, [scoring.TaskResult(l.tasks[0], ok, skipped)])])
        self.assertTrue(run.all_passed)
        run.lessons[0].tasks[0].correctness = skipped_correctness
        self.assertFalse(run.all_passed)
        self.assertFalse(scoring.GradeRun("t", 1, {}, []).all_passed)

    def test_a_lesson_that_does_not_compile_scores_zero_everywhere(self):
        result = scoring.lesson_not_gradable(lesson(), scoring.COMPILE_ERROR, "does not compile", "x.cu:3: error")
        self.assertEqual(result.score, 0)
        self.assertTrue(all(t.correctness.status == scoring.COMPILE_ERROR for t in result.tasks))


if __name__ == "__main__":
    unittest.main()
