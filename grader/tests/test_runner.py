"""The process runner against stand-in programs: reports, crashes, hangs, sanitizer output."""
import os
import stat
import tempfile
import textwrap
import unittest

from helpers import phase  # noqa: F401  (puts the driver on sys.path)
from driver.runner import PhaseResult, parse_records, parse_sanitizer_output, run_phase


def fake_program(directory, body):
    """A Python script standing in for a grader program; it sees WORKBOOK_REPORT like one."""
    path = os.path.join(directory, "fake_grader")
    with open(path, "w") as f:
        f.write("#!/usr/bin/env python3\nimport json, os, signal, sys, time\n"
                "report = open(os.environ['WORKBOOK_REPORT'], 'a')\n"
                "def emit(**r):\n    report.write(json.dumps(r) + '\\n'); report.flush()\n" + textwrap.dedent(body))
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


class RunPhaseTest(unittest.TestCase):
    def run_fake(self, body, timeout=10):
        with tempfile.TemporaryDirectory() as d:
            return run_phase(fake_program(d, body), "[task_1]", seed=7, timeout_s=timeout, env={"X": "1"})

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

    def test_a_crash_names_the_signal_and_the_test(self):
        r = self.run_fake("""
            emit(event='start', test='crashes', tags=['task_1'])
            os.kill(os.getpid(), signal.SIGSEGV)
            """)
        self.assertEqual(r.killed_by, "SIGSEGV")
        self.assertEqual(r.unfinished_test, "crashes")


class ParseTest(unittest.TestCase):
    def test_a_line_cut_short_by_a_crash_is_ignored(self):
        r = PhaseResult()
        parse_records('{"event": "start", "test": "a", "tags": []}\n{"event": "end", "te', r)
        self.assertEqual(r.records, [])
        self.assertEqual(r.unfinished_test, "a")

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
