"""The process runner against stand-in programs: reports, crashes, hangs, sanitizer output, and
the authenticated report channel (forged, replayed, reordered lines; exits before the last record),
also against a real grader program built without a GPU."""
import hashlib
import hmac
import os
import time
import stat
import tempfile
import textwrap
import unittest
from unittest import mock

from helpers import lesson  # also puts the driver on sys.path
from driver import scoring
from driver.runner import ParkedRun, PhaseResult, wait_all_parked, parse_records, parse_sanitizer_output, run_phase, verify_line


def judge(result):
    """The correctness verdict on a phase, as ./grade gives it."""
    return scoring.judge_correctness(lesson().tasks[0], result, "01_vector_add")


# A stand-in signs its records the way grader_main.cpp does: the key from the pipe the runner
# gives it, a sequence number, an HMAC-SHA256 over the line up to it. raw() writes unsigned text.
SIGNING_PROGRAM = """#!/usr/bin/env python3
import hashlib, hmac, json, os, signal, sys, time
report = open(os.environ['WORKBOOK_REPORT'], 'a')
key = os.read(int(os.environ['WORKBOOK_REPORT_KEY_FD']), 256)
sequence = [0]
def sign(r):
    body = json.dumps(dict(r, seq=sequence[0]))
    sequence[0] += 1
    return body[:-1] + ', "mac": "%s"}' % hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
def emit(**r):
    report.write(sign(r) + '\\n'); report.flush()
def raw(text):
    report.write(text); report.flush()
"""


def fake_program(directory, body):
    """A Python script standing in for a grader program; it sees WORKBOOK_REPORT like one."""
    path = os.path.join(directory, "fake_grader")
    with open(path, "w") as f:
        f.write(SIGNING_PROGRAM + textwrap.dedent(body))
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


class FakeProgram:
    def run_fake(self, body, timeout=10):
        with tempfile.TemporaryDirectory() as d:
            return run_phase(fake_program(d, body), "[task_1]", seed=7, timeout_s=timeout, env={"X": "1"})


class RunPhaseTest(FakeProgram, unittest.TestCase):

    def test_records_and_arguments_arrive(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            emit(event='end', test='t', tags=['task_1'], outcome='passed', metrics={'gbps': float(sys.argv[3])})
            """)
        self.assertEqual(r.returncode, 0)
        self.assertEqual([x["outcome"] for x in r.records], ["passed"])
        self.assertEqual(r.metrics(), {"gbps": 7.0})
        self.assertIsNone(r.unfinished_test)

    def test_a_hang_is_killed_at_the_deadline(self):
        r = self.run_fake("""
            emit(event='start', test='hangs', tags=['task_1'])
            time.sleep(60)
            """, timeout=1)
        self.assertTrue(r.timed_out)
        self.assertEqual(r.unfinished_test, "hangs")
        self.assertLess(r.elapsed_s, 10)

    def test_one_test_past_its_limit_stops_a_run_of_several_tasks(self):
        """test_limit_s: a lesson's tasks in one run (cli.Grader._correctness_together) stop as
        soon as one test runs past a task's limit, not at the run's whole time."""
        with tempfile.TemporaryDirectory() as d:
            r = run_phase(fake_program(d, """
                emit(event='start', test='quick', tags=['task_1'], t=0.25)
                emit(event='end', test='quick', tags=['task_1'], outcome='passed', t=0.75)
                time.sleep(0.6)  # between tests: nothing is open
                emit(event='start', test='hangs', tags=['task_2'], t=1.0)
                time.sleep(60)
                """), "[task_1],[task_2]", seed=7, timeout_s=50, env={}, test_limit_s=1.0)
        self.assertTrue(r.timed_out and r.test_over_limit)
        self.assertEqual((r.timeout_s, r.unfinished_test, r.unfinished_tags), (1.0, "hangs", ["task_2"]))
        self.assertLess(r.elapsed_s, 10)
        self.assertEqual(r.record_seconds, [0.5])

    def test_a_run_stalled_between_tests_is_stopped_at_the_limit_too(self):
        """A hang before the first test (a static initialiser), between two or at the exit."""
        for body in ("time.sleep(60)\n",
                     "emit(event='start', test='t', tags=['task_1'])\n"
                     "emit(event='end', test='t', tags=['task_1'], outcome='passed')\ntime.sleep(60)\n"):
            with tempfile.TemporaryDirectory() as d:
                r = run_phase(fake_program(d, body), "[task_1],[task_2]", seed=7, timeout_s=50, env={},
                              test_limit_s=1.0)
            self.assertTrue(r.timed_out and r.test_over_limit, body)
            self.assertIsNone(r.unfinished_test)
            self.assertLess(r.elapsed_s, 10)

    def test_tests_within_their_limit_run_to_the_end(self):
        with tempfile.TemporaryDirectory() as d:
            r = run_phase(fake_program(d, """
                for i in range(3):
                    emit(event='start', test=f't{i}', tags=['task_1'])
                    time.sleep(0.5)
                    emit(event='end', test=f't{i}', tags=['task_1'], outcome='passed')
                emit(event='run_end', test_cases=3)
                """), "[task_1]", seed=7, timeout_s=50, env={}, test_limit_s=1.0)
        self.assertFalse(r.timed_out or r.test_over_limit)
        self.assertTrue(r.run_completed)
        self.assertEqual(len(r.records), 3)

    def test_a_run_past_its_whole_time_is_not_a_test_past_its_limit(self):
        r = self.run_fake("""
            for i in range(10):
                emit(event='start', test=f't{i}', tags=['task_1'])
                time.sleep(0.3)
                emit(event='end', test=f't{i}', tags=['task_1'], outcome='passed')
            """, timeout=1)
        self.assertTrue(r.timed_out)
        self.assertFalse(r.test_over_limit)

    def test_a_crash_names_the_signal_and_the_test(self):
        r = self.run_fake("""
            emit(event='start', test='crashes', tags=['task_1'])
            os.kill(os.getpid(), signal.SIGSEGV)
            """)
        self.assertEqual(r.killed_by, "SIGSEGV")
        self.assertEqual(r.unfinished_test, "crashes")


class AuthenticatedChannelTest(FakeProgram, unittest.TestCase):
    """Records count only when they carry this run's MAC, in sequence (report_record.hpp)."""

    def test_signed_records_count_and_run_end_completes_the_run(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            emit(event='end', test='t', tags=['task_1'], outcome='passed')
            emit(event='run_end', test_cases=1)
            """)
        self.assertTrue(r.authenticated)
        self.assertTrue(r.report_found)
        self.assertTrue(r.run_completed)
        self.assertEqual(r.run_test_cases, 1)
        self.assertEqual((r.forged_lines, r.out_of_sequence), (0, 0))
        self.assertEqual([x["outcome"] for x in r.records], ["passed"])
        self.assertEqual(judge(r).status, scoring.PASSED)

    def test_a_line_written_by_someone_else_does_not_count(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            raw(json.dumps({'event': 'end', 'test': 't', 'tags': ['task_1'], 'outcome': 'passed', 'seq': 1}) + '\\n')
            emit(event='end', test='t', tags=['task_1'], outcome='failed')
            emit(event='run_end')
            """)
        self.assertEqual((r.forged_lines, r.out_of_sequence), (1, 0))
        self.assertIn('"outcome": "passed"', r.first_forged)
        self.assertEqual([x["outcome"] for x in r.records], ["failed"])
        self.assertTrue(r.run_completed)
        verdict = judge(r)
        self.assertEqual((verdict.status, verdict.score), (scoring.TAMPERED, 0))
        self.assertIn("the report file holds 1 line the grader did not write", verdict.summary)

    def test_a_line_appended_after_the_run_ended_does_not_count(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            emit(event='end', test='t', tags=['task_1'], outcome='failed')
            emit(event='run_end')
            raw(json.dumps({'event': 'end', 'test': 't', 'tags': ['task_1'], 'outcome': 'passed'}) + '\\n')
            """)
        self.assertEqual(r.forged_lines, 1)
        self.assertEqual(judge(r).status, scoring.TAMPERED)

    def test_a_replayed_line_does_not_count(self):
        r = self.run_fake("""
            start = sign({'event': 'start', 'test': 't', 'tags': ['task_1']})
            raw(start + '\\n')
            emit(event='end', test='t', tags=['task_1'], outcome='passed')
            raw(start + '\\n')  # a copy from earlier in the file: its MAC verifies, its number is old
            emit(event='run_end')
            """)
        self.assertEqual((r.forged_lines, r.out_of_sequence), (1, 1))
        self.assertEqual([x["outcome"] for x in r.records], ["passed"])
        self.assertIsNone(r.unfinished_test)
        self.assertTrue(r.run_completed)
        self.assertEqual(judge(r).status, scoring.TAMPERED)

    def test_reordered_lines_do_not_count(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            end = sign({'event': 'end', 'test': 't', 'tags': ['task_1'], 'outcome': 'failed'})
            last = sign({'event': 'run_end'})
            raw(last + '\\n' + end + '\\n')  # the last record first, to close the run before the failure
            """)
        self.assertEqual((r.forged_lines, r.out_of_sequence), (1, 1))  # run_end, too early; the end is in place
        self.assertEqual([x["outcome"] for x in r.records], ["failed"])
        self.assertFalse(r.run_completed)
        self.assertEqual(judge(r).status, scoring.TAMPERED)

    def test_a_removed_line_leaves_the_rest_out_of_sequence(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            sign({'event': 'end', 'test': 't', 'tags': ['task_1'], 'outcome': 'failed'})  # never written
            emit(event='start', test='u', tags=['task_1'])
            emit(event='end', test='u', tags=['task_1'], outcome='passed')
            emit(event='run_end')
            """)
        self.assertEqual((r.forged_lines, r.out_of_sequence), (3, 3))
        self.assertEqual(r.records, [])
        self.assertEqual(judge(r).status, scoring.TAMPERED)

    def test_a_key_read_by_someone_else_leaves_nothing_that_verifies(self):
        r = self.run_fake("""
            key = b''  # as the grader program finds it when the submission emptied the pipe first
            emit(event='start', test='t', tags=['task_1'], key_problem='the pipe was empty')
            emit(event='run_end', key_problem='the pipe was empty')
            """)
        self.assertEqual((r.forged_lines, r.out_of_sequence), (2, 0))
        self.assertEqual(r.key_problem, "the pipe was empty")
        self.assertFalse(r.run_completed)
        verdict = judge(r)
        self.assertEqual((verdict.status, verdict.score), (scoring.TAMPERED, 0))
        self.assertIn("could not read its key", verdict.summary)

    def test_an_exit_with_status_0_before_the_last_record_does_not_pass(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            emit(event='end', test='t', tags=['task_1'], outcome='passed')
            emit(event='start', test='u', tags=['task_1'])
            sys.exit(0)
            """)
        self.assertEqual((r.returncode, r.forged_lines, r.run_completed), (0, 0, False))
        self.assertEqual(r.unfinished_test, "u")
        verdict = judge(r)
        self.assertEqual((verdict.status, verdict.score), (scoring.FAILED, 0))
        self.assertIn('exited with status 0 during "u" before it finished its tests', verdict.details)
        # Before it wrote anything at all (an exit in a static initialiser).
        verdict = judge(self.run_fake("sys.exit(0)\n"))
        self.assertEqual((verdict.status, verdict.score), (scoring.FAILED, 0))
        self.assertIn("before its first test", verdict.details)

    def test_a_line_cut_short_by_a_crash_is_not_forgery(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            raw(sign({'event': 'end', 'test': 't', 'tags': ['task_1'], 'outcome': 'passed'})[:40])
            os.kill(os.getpid(), signal.SIGSEGV)
            """)
        self.assertEqual(r.forged_lines, 0)
        self.assertEqual(r.unfinished_test, "t")
        self.assertEqual(r.killed_by, "SIGSEGV")
        verdict = judge(r)
        self.assertEqual((verdict.status, verdict.score), (scoring.CRASHED, 0))
        self.assertNotIn("did not write", verdict.details)

    def test_bytes_that_are_not_utf8_verify(self):
        r = self.run_fake("""
            body = b'{"event": "end", "test": "t", "tags": [], "outcome": "failed", "messages": ["\\xff"], "seq": 0}'
            mac = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
            report.buffer.write(body[:-1] + b', "mac": "' + mac + b'"}\\n'); report.flush()
            sequence[0] = 1
            emit(event='run_end')
            """)
        self.assertEqual(r.forged_lines, 0)
        self.assertEqual(r.records[0]["messages"], ["\ufffd"])
        self.assertTrue(r.run_completed)

    def test_the_key_is_not_in_the_environment(self):
        r = self.run_fake("""
            emit(event='start', test=' '.join(sorted(k for k in os.environ if 'KEY' in k)), tags=[])
            emit(event='run_end')
            """)
        self.assertEqual(r.unfinished_test, "WORKBOOK_REPORT_KEY_FD")  # its number only, never the key


class SignedVectorTest(unittest.TestCase):
    """The C++ signer and this verifier agree: the same vectors are in
    grader/support/tests/report_listener_test.cpp, where the C++ HMAC-SHA256 must produce them."""

    def test_rfc_4231_vectors(self):
        vectors = [
            (b"\x0b" * 20, b"Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (b"Jefe", b"what do ya want for nothing?",
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            (b"\xaa" * 20, b"\xdd" * 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
            (bytes(range(1, 26)), b"\xcd" * 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
            (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ]
        for key, message, mac in vectors:
            self.assertEqual(hmac.new(key, message, hashlib.sha256).hexdigest(), mac)

    def test_the_signed_record_the_cpp_test_produces_verifies_here(self):
        key = "0123456789abcdef" * 4
        line = (b'{"event": "end", "test": "Task 1: na\xc3\xafve \xff", "tags": ["task_1"], "outcome": "passed", '
                b'"messages": ["a \\"quoted\\"\\nline"], "t": 0.250, "metrics": {"gbps": 1.5}, "seq": 3, '
                b'"mac": "487bceb1022663356e5d4ca0c49e45657e52ffbdd5a9da1844d13295fd2a09a3"}')
        record = verify_line(line, key.encode())
        self.assertIsNotNone(record)
        self.assertEqual((record["seq"], record["test"], record["messages"]), (3, "Task 1: na\u00efve \ufffd",
                                                                              ['a "quoted"\nline']))
        self.assertIsNone(verify_line(line.replace(b"passed", b"PASSED"), key.encode()))
        self.assertIsNone(verify_line(line, ("1" + key[1:]).encode()))


# The real listener, built by CMake (grader/support/tests/report_channel_program.cpp); ctest names it.
CHANNEL_PROGRAM = os.environ.get("WORKBOOK_REPORT_CHANNEL_PROGRAM")


@unittest.skipUnless(CHANNEL_PROGRAM and os.path.exists(CHANNEL_PROGRAM),
                     "WORKBOOK_REPORT_CHANNEL_PROGRAM names no built program (ctest sets it)")
class RealProgramTest(unittest.TestCase):
    """A grader program without a GPU, run as the driver runs one: its C++ listener signs, this
    driver verifies, and each attack on the channel meets the real defence."""

    def run_program(self, spec, **env):
        return run_phase(CHANNEL_PROGRAM, spec, seed=1, timeout_s=60,
                         env=dict({"WORKBOOK_COPY_BANDWIDTH_GBPS": "1234"}, **env))

    def test_an_honest_run_verifies_and_completes(self):
        r = self.run_program("[honest]")
        self.assertEqual((r.returncode, r.forged_lines, r.key_problem), (0, 0, ""), r.output_tail)
        self.assertTrue(r.run_completed)
        self.assertEqual(r.run_test_cases, 1)
        self.assertEqual([x["outcome"] for x in r.records], ["passed"])
        metrics = r.metrics()
        self.assertEqual(metrics["copy_bandwidth_gbps"], 1234)
        self.assertEqual((metrics["guard_elements"], metrics["sanitize_mode"]), (4096, 0))
        self.assertEqual(metrics["key_fd_in_environment"], 0)  # taken out once read
        self.assertEqual(judge(r).status, scoring.PASSED)

    def test_a_failure_with_bytes_that_are_not_utf8_verifies(self):
        r = self.run_program("[fails]")
        self.assertEqual(r.forged_lines, 0, r.first_forged)
        self.assertEqual([x["outcome"] for x in r.records], ["failed"])
        self.assertIn("not UTF-8", r.records[0]["messages"][0])

    def test_a_setenv_at_startup_moves_nothing(self):
        # The bandwidth set to 1 GB/s, WORKBOOK_SANITIZE (no guards, checks skipped) and the report
        # file moved to /dev/null, all from a static initialiser, as a submission could.
        r = self.run_program("[honest]", WORKBOOK_CHANNEL_TEST_SETENV="1")
        self.assertTrue(r.run_completed, r.output_tail)
        metrics = r.metrics()
        self.assertEqual(metrics["copy_bandwidth_gbps"], 1234)
        self.assertEqual((metrics["guard_elements"], metrics["sanitize_mode"]), (4096, 0))
        self.assertEqual(metrics["pass_check_mode"], 0)  # nor fewer shapes
        # The other way round: a program started under --sanitize stays there, with every shape;
        # the check of a pass names its tool and gets the check's subsets, under any of the four.
        modes = ("guard_elements", "sanitize_mode", "pass_check_mode")
        for value, want in (("1", (0, 1, 0)), ("0", (4096, 0, 0)),
                            ("yes", (0, 1, 0)),  # sanitizer mode, every shape
                            ("Memcheck", (0, 1, 0)),  # not a tool's name as the check writes it
                            ("memcheck", (0, 1, 1)), ("racecheck", (0, 1, 1)),
                            ("synccheck", (0, 1, 1)), ("initcheck", (0, 1, 1))):
            with self.subTest(WORKBOOK_SANITIZE=value):
                metrics = self.run_program("[honest]", WORKBOOK_SANITIZE=value).metrics()
                self.assertEqual(tuple(metrics[m] for m in modes), want)

    def test_yardsticks_are_taken_as_given_at_startup_and_measured_otherwise(self):
        # a: given; b: not a number; c: empty; abc: not "ab"'s; e: given; f: not listed.
        given = "ab=9,a=2.5,b=nan,c=,abc=1e3x,e=4,=3,junk"
        r = self.run_program("[yardsticks]", WORKBOOK_YARDSTICKS=given)
        self.assertEqual([x["outcome"] for x in r.records], ["passed"], r.output_tail)
        self.assertEqual(r.metrics(), {"a": 2.5, "b": 7, "c": 7, "abc": 7, "e": 4, "f": 7,
                                       "yardsticks_given": 2, "measured": 4})
        self.assertEqual(self.run_program("[yardsticks]").metrics()["measured"], 6)  # none given
        # One set by the code being graded, after start-up, is not read.
        metrics = self.run_program("[yardsticks]", WORKBOOK_CHANNEL_TEST_SETENV="1").metrics()
        self.assertEqual((metrics["measured"], metrics["a"]), (6, 7))
        self.assertNotIn("yardsticks_given", metrics)
        # One left in the grading shell's environment is not passed on: only the driver gives them.
        with mock.patch.dict(os.environ, {"WORKBOOK_YARDSTICKS": "a=1000"}):
            self.assertEqual(self.run_program("[yardsticks]").metrics()["measured"], 6)

    def test_a_task_takes_its_own_yardsticks_first_then_the_plain_ones(self):
        # The test is tagged [task_2]: task_2.a is its own, task_1.b another task's, c plain.
        given = "a=1,task_1.a=2,task_2.a=3,task_1.b=4,c=5"
        r = self.run_program("[yardsticks_of_a_task]", WORKBOOK_YARDSTICKS=given)
        self.assertEqual([x["outcome"] for x in r.records], ["passed"], r.output_tail)
        self.assertEqual(r.metrics(), {"a": 3, "b": 7, "c": 5, "yardsticks_given": 2})

    def test_the_drivers_settings_left_in_the_shell_reach_no_program(self):
        shell = {"WORKBOOK_SANITIZE": "1", "WORKBOOK_COPY_BANDWIDTH_GBPS": "1"}
        with mock.patch.dict(os.environ, shell):
            metrics = self.run_program("[honest]").metrics()  # the caller's bandwidth, 1234, only
        self.assertEqual((metrics["sanitize_mode"], metrics["copy_bandwidth_gbps"]), (0, 1234))
        with mock.patch.dict(os.environ, shell):
            metrics = self.run_program("[honest]", WORKBOOK_SANITIZE="1").metrics()  # asked for: kept
        self.assertEqual(metrics["sanitize_mode"], 1)

    def test_a_static_initialiser_finds_the_key_gone(self):
        r = self.run_program("[honest]", WORKBOOK_CHANNEL_TEST_LATE_THIEF="1")
        self.assertEqual(r.forged_lines, 0)
        self.assertLessEqual(r.metrics()["late_thief_read"], 0)  # the pipe was read and closed before it ran

    def test_code_that_reads_the_key_first_leaves_nothing_that_counts(self):
        r = self.run_program("[honest]", WORKBOOK_CHANNEL_TEST_STEAL_KEY="1")
        self.assertEqual(r.key_problem, "the pipe was empty")
        self.assertEqual(r.records, [])
        self.assertEqual(r.forged_lines, 3)  # start, end, run_end: all marked, none verifies
        verdict = judge(r)
        self.assertEqual((verdict.status, verdict.score), (scoring.TAMPERED, 0))
        self.assertIn("could not read its key", verdict.summary)

    def test_forged_and_replayed_lines_are_caught(self):
        r = self.run_program("[forges]")
        self.assertEqual((r.forged_lines, r.out_of_sequence), (2, 1))
        self.assertEqual([x["outcome"] for x in r.records], ["failed"])
        self.assertTrue(r.run_completed)
        verdict = judge(r)
        self.assertEqual((verdict.status, verdict.score), (scoring.TAMPERED, 0))

    def test_exit_0_in_a_test_does_not_pass(self):
        r = self.run_program("[exits]")
        self.assertEqual((r.returncode, r.unfinished_test, r.run_completed), (0, "exits", False))
        verdict = judge(r)
        self.assertEqual((verdict.status, verdict.score), (scoring.FAILED, 0))
        self.assertIn("exited with status 0", verdict.summary)


@unittest.skipUnless(CHANNEL_PROGRAM and os.path.exists(CHANNEL_PROGRAM),
                     "WORKBOOK_REPORT_CHANNEL_PROGRAM names no built program (ctest sets it)")
class ParkedRunTest(unittest.TestCase):
    """runner.ParkedRun with the real main() (grader_main.cpp): the program parks before its first
    timing, says so, times only once let go on, and its seconds leave out the wait. [times]
    sleeps 0.2 s before it times."""

    def test_it_parks_before_the_first_timing_and_its_seconds_leave_out_the_wait(self):
        run = ParkedRun(CHANNEL_PROGRAM, "[times]", seed=1, env={})
        self.assertTrue(run.wait_parked(30))
        self.assertGreaterEqual(run.before_gate_s, 0.2)
        with open(run._launch.report, "rb") as f:  # parked inside the test, nothing timed yet
            self.assertNotIn(b'"end"', f.read())
        time.sleep(1.0)
        self.assertTrue(run.still_parked())
        r = run.go(30)
        self.assertEqual((r.returncode, r.forged_lines, r.run_completed), (0, 0, True), r.output_tail)
        self.assertEqual([x["outcome"] for x in r.records], ["passed"])
        self.assertGreater(r.metrics()["median_ms"], 0.9)
        # The test's 0.2 s (and on a GPU machine, the CUDA context the gate's synchronisation
        # creates) before the gate, and 3 ms after it: not the 1 s parked.
        self.assertLess(r.in_tests_s, run.before_gate_s + 0.5)
        self.assertLess(r.elapsed_s, run.before_gate_s + 0.5)
        self.assertEqual(r.before_gate_s, run.before_gate_s)

    def test_a_program_that_times_nothing_never_parks(self):
        run = ParkedRun(CHANNEL_PROGRAM, "[honest]", seed=1, env={})
        started = time.monotonic()
        self.assertFalse(run.wait_parked(30))
        self.assertLess(time.monotonic() - started, 10)  # at its end, not at the limit
        run.close()

    def test_a_parked_program_whose_gate_closes_exits_without_timing(self):
        run = ParkedRun(CHANNEL_PROGRAM, "[times]", seed=1, env={})
        self.assertTrue(run.wait_parked(30))
        process, report = run._launch.process, run._launch.report
        os.close(run._gate)  # the driver gone
        run._gate = -1
        self.assertEqual(process.wait(timeout=10), 3)
        with open(report, "rb") as f:
            self.assertNotIn(b'"end"', f.read())
        run.close()

    def test_a_run_with_no_gate_does_not_park(self):
        with mock.patch.dict(os.environ, {"WORKBOOK_TIMING_GATE": "0,1"}):  # a stray one in the shell
            r = run_phase(CHANNEL_PROGRAM, "[times]", seed=1, timeout_s=30, env={})
        self.assertEqual([x["outcome"] for x in r.records], ["passed"], r.output_tail)
        self.assertEqual(r.before_gate_s, 0.0)

    def test_runs_are_waited_for_together_and_say_when_they_parked(self):
        slow = ParkedRun(CHANNEL_PROGRAM, "[times]", seed=1, env={"WORKBOOK_CHANNEL_TEST_SETUP_MS": "1500"})
        quick = ParkedRun(CHANNEL_PROGRAM, "[times]", seed=1, env={"WORKBOOK_CHANNEL_TEST_SETUP_MS": "100"})
        try:
            # Waited for one after the other, the quick one's limit would pass while the slow one parks.
            wait_all_parked([(slow, 30), (quick, 1.0)])
            self.assertIsNotNone(slow.parked_at)
            self.assertIsNotNone(quick.parked_at)
            self.assertLess(quick.parked_at, slow.parked_at)
            # Its own seconds before the gate, and of them those in the test it parked in.
            self.assertGreaterEqual(slow.before_gate_s, 1.5)
            self.assertLess(slow.before_gate_s, 10)
            # Less a millisecond: the test's start is written to the millisecond (report_record.cpp),
            # so the difference can fall short of the 1.5 s slept inside the test (1.499918 s once).
            self.assertGreaterEqual(slow.in_test_before_gate_s, 1.499)
            self.assertLessEqual(slow.in_test_before_gate_s, slow.before_gate_s)
            r = slow.go(30)
            self.assertEqual([x["outcome"] for x in r.records], ["passed"])
            self.assertEqual(r.in_tests_before_gate_s, slow.in_test_before_gate_s)
        finally:
            slow.close()
            quick.close()

    def test_a_program_that_prints_much_before_it_parks_parks_and_its_output_is_kept(self):
        run = ParkedRun(CHANNEL_PROGRAM, "[times]", seed=1, env={"WORKBOOK_CHANNEL_TEST_PRINT_BYTES": str(1 << 20)})
        self.assertTrue(run.wait_parked(30))  # 1 MiB: more than a pipe holds, read as it came
        r = run.go(30)
        self.assertEqual([x["outcome"] for x in r.records], ["passed"])
        self.assertIn("the last line printed before the timing", r.output_tail)

    def test_a_program_that_died_while_parked_is_not_let_go_on(self):
        run = ParkedRun(CHANNEL_PROGRAM, "[times]", seed=1, env={})
        try:
            self.assertTrue(run.wait_parked(30))
            self.assertTrue(run.still_parked())
            os.kill(run.pid, 9)
            run._launch.process.wait(timeout=10)
            self.assertFalse(run.still_parked())  # Grader._run_timed then runs the tests in the hold
        finally:
            run.close()

    def test_its_time_limit_counts_the_seconds_before_the_gate(self):
        # Alone, a limit below the set-up's 0.3 s stops it; parked, it must too.
        alone = run_phase(CHANNEL_PROGRAM, "[times]", seed=1, timeout_s=0.25, env={"WORKBOOK_CHANNEL_TEST_SETUP_MS": "300"})
        self.assertTrue(alone.timed_out)
        run = ParkedRun(CHANNEL_PROGRAM, "[times]", seed=1, env={"WORKBOOK_CHANNEL_TEST_SETUP_MS": "300"})
        self.assertTrue(run.wait_parked(30))
        r = run.go(0.25)
        self.assertTrue(r.timed_out)
        self.assertEqual(r.records, [])


class StopTest(unittest.TestCase):
    def test_sigterm_stops_the_program_under_way(self):
        """The program runs in a session of its own (for its deadline): when ./grade is stopped
        (SIGTERM from ./grade-class, or Ctrl-C), run_phase must stop it too."""
        import signal
        import subprocess
        import sys
        import time
        from pathlib import Path
        with tempfile.TemporaryDirectory() as d:
            pid_file = os.path.join(d, "pid")
            program = fake_program(d, f"open({pid_file!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n")
            driver = os.path.join(d, "driver.py")
            with open(driver, "w") as f:
                f.write(f"import sys\nsys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
                        "from driver.runner import exit_on_sigterm, run_phase\nexit_on_sigterm()\n"
                        f"run_phase({program!r}, '[task_1]', seed=1, timeout_s=100, env={{}})\n")
            process = subprocess.Popen([sys.executable, driver])
            deadline = time.monotonic() + 30
            while not (os.path.exists(pid_file) and open(pid_file).read()):
                self.assertLess(time.monotonic(), deadline, "the program never started")
                time.sleep(0.1)
            pid = int(open(pid_file).read())
            process.send_signal(signal.SIGTERM)
            self.assertEqual(process.wait(timeout=30), 128 + signal.SIGTERM)
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "gone"
            self.assertIn(state, ("Z", "gone"), "the program was left running")


    def test_sigterm_stops_the_programs_run_side_by_side(self):
        """The sanitizer check runs its tools' programs from worker threads, which SIGTERM never
        reaches: side_by_side must kill them when the main thread is stopped."""
        import signal
        import subprocess
        import sys
        import time
        from pathlib import Path
        with tempfile.TemporaryDirectory() as d:
            pids, programs = [], []
            for i in range(2):  # two programs, each in a folder of its own, each writing its pid
                os.mkdir(os.path.join(d, str(i)))
                pids.append(os.path.join(d, str(i), "pid"))
                programs.append(fake_program(os.path.join(d, str(i)),
                                             f"open({pids[-1]!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n"))
            driver = os.path.join(d, "driver.py")
            with open(driver, "w") as f:
                f.write(f"import sys\nsys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
                        "from functools import partial\n"
                        "from driver.runner import exit_on_sigterm, run_phase, side_by_side\nexit_on_sigterm()\n"
                        f"side_by_side([partial(run_phase, p, '[task_1]', seed=1, timeout_s=100, env={{}}) "
                        f"for p in {programs!r}], workers=2)\n")
            process = subprocess.Popen([sys.executable, driver])
            deadline = time.monotonic() + 30
            while not all(os.path.exists(p) and open(p).read() for p in pids):
                self.assertLess(time.monotonic(), deadline, "the programs never started")
                time.sleep(0.1)
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            self.assertEqual(process.wait(timeout=30), 128 + signal.SIGTERM)
            self.assertLess(time.monotonic() - started, 20, "the driver waited for its programs")
            for p in pids:
                pid = int(open(p).read())
                try:
                    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                except OSError:
                    state = "gone"
                self.assertIn(state, ("Z", "gone"), "a program was left running")


class ParseTest(unittest.TestCase):
    def test_a_line_cut_short_by_a_crash_is_ignored(self):
        r = PhaseResult()
        parse_records('{"event": "start", "test": "a", "tags": []}\n{"event": "end", "te', r)
        self.assertEqual(r.records, [])
        self.assertEqual(r.unfinished_test, "a")

    def test_the_seconds_inside_the_test_cases_add_up(self):
        r = PhaseResult()
        parse_records("\n".join([
            '{"event": "start", "test": "a", "tags": [], "t": 0.5}',
            '{"event": "end", "test": "a", "tags": [], "outcome": "passed", "t": 1.25}',
            '{"event": "start", "test": "b", "tags": [], "t": 1.5}',
            '{"event": "end", "test": "b", "tags": [], "outcome": "passed", "t": 3.5}',
            '{"event": "start", "test": "c", "tags": [], "t": 4.0}',  # never ended: not counted
            '']), r)
        self.assertEqual(r.in_tests_s, 2.75)
        untimed = PhaseResult()  # records without a usable time count nothing
        parse_records('{"event": "start", "test": "a", "t": true}\n{"event": "end", "test": "a", "t": 2}\n', untimed)
        self.assertEqual(untimed.in_tests_s, 0.0)

    def test_gpu_waits_are_timed_and_the_open_one_is_kept(self):
        r = PhaseResult()
        parse_records("\n".join([
            '{"event": "start", "test": "a", "tags": [], "t": 0.1}',
            '{"event": "wait", "test": "a", "tags": [], "what": "first", "t": 0.5}',
            '{"event": "waited", "test": "a", "tags": [], "t": 0.75}',
            '{"event": "wait", "test": "a", "tags": [], "what": "second", "t": 1.0}']), r)
        self.assertEqual(r.wait_durations_s, [0.25])
        self.assertEqual(r.open_wait, ("second", 1.0))
        self.assertEqual(r.unfinished_test, "a")

    def test_a_wait_that_ended_by_throwing_is_kept_with_its_error(self):
        r = PhaseResult()
        parse_records("\n".join([
            '{"event": "start", "test": "a", "tags": [], "t": 0.1}',
            '{"event": "wait", "test": "a", "tags": [], "what": "f(n = 0)", "t": 0.5}',
            '{"event": "wait_raised", "test": "a", "tags": [], "what": "f(n = 0)", "t": 0.6}',
            '{"event": "wait", "test": "a", "tags": [], "what": "f(n = 1000)", "t": 0.7}',
            '{"event": "wait_raised", "test": "a", "tags": [], "what": "f(n = 1000)", '
            '"messages": ["cudaErrorIllegalAddress"], "t": 0.8}']), r)
        self.assertIsNone(r.open_wait)
        self.assertEqual(r.raised_waits, [("a", "f(n = 0)", ""), ("a", "f(n = 1000)", "cudaErrorIllegalAddress")])

    def test_sanitizer_findings_and_error_count(self):
        r = PhaseResult()
        parse_sanitizer_output(textwrap.dedent("""\
            ========= COMPUTE-SANITIZER
            ========= Invalid __global__ write of size 4 bytes
            =========     at vector_add(const float *, const float *, float *, int)+0x80 in vector_add.cu:13
            Catch2 output
            ========= ERROR SUMMARY: 3 errors
            """), r)
        self.assertEqual(r.sanitizer_errors, 3)
        self.assertEqual(r.sanitizer_findings[0], "Invalid __global__ write of size 4 bytes")
        self.assertIn("vector_add.cu:13", r.sanitizer_findings[1])

    def test_racecheck_hazards_count_as_errors(self):
        r = PhaseResult()
        parse_sanitizer_output(textwrap.dedent("""\
            ========= COMPUTE-SANITIZER
            ========= Error: Race reported between Write access at matmul_tiled(...)+0x2a0 in matmul.cu:27
            =========     and Read access at matmul_tiled(...)+0x3f0 in matmul.cu:30 [256 hazards]
            ========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)
            """), r)
        self.assertEqual(r.sanitizer_errors, 2)
        self.assertIn("Race reported", r.sanitizer_findings[0])
        clean = PhaseResult()
        parse_sanitizer_output("========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n", clean)
        self.assertEqual(clean.sanitizer_errors, 0)


if __name__ == "__main__":
    unittest.main()
