"""The process runner against stand-in programs: reports, crashes, hangs, sanitizer output."""
import os
import stat
import tempfile
import textwrap
import unittest

from helpers import phase  # noqa: F401  (puts the driver on sys.path)
from driver.runner import PhaseResult, parse_records, parse_sanitizer_output, run_phase


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


class AuthenticatedChannelTest(RunPhaseTest):
    """Records count only when they carry this run's MAC, in sequence (report_record.hpp)."""

    def test_signed_records_count_and_run_end_completes_the_run(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            emit(event='end', test='t', tags=['task_1'], outcome='passed')
            emit(event='run_end')
            """)
        self.assertTrue(r.authenticated)
        self.assertTrue(r.run_completed)
        self.assertEqual(r.forged_lines, 0)
        self.assertEqual([x["outcome"] for x in r.records], ["passed"])

    def test_a_line_written_by_someone_else_does_not_count(self):
        r = self.run_fake("""
            emit(event='start', test='t', tags=['task_1'])
            raw(json.dumps({'event': 'end', 'test': 't', 'tags': ['task_1'], 'outcome': 'passed', 'seq': 1}) + '\\n')
            emit(event='end', test='t', tags=['task_1'], outcome='failed')
            emit(event='run_end')
            """)
        self.assertEqual(r.forged_lines, 1)
        self.assertIn('"outcome": "passed"', r.first_forged)
        self.assertEqual([x["outcome"] for x in r.records], ["failed"])

    def test_replayed_and_reordered_lines_do_not_count(self):
        r = self.run_fake("""
            first = sign({'event': 'start', 'test': 't', 'tags': ['task_1']})
            raw(first + '\\n')
            sign({'event': 'end', 'test': 't', 'tags': ['task_1'], 'outcome': 'failed'})  # never written
            later = sign({'event': 'run_end'})
            raw(first + '\\n' + later + '\\n')
            """)
        self.assertEqual(r.forged_lines, 2)  # the replayed start, then run_end out of sequence
        self.assertEqual(r.records, [])
        self.assertFalse(r.run_completed)

    def test_a_key_read_by_someone_else_leaves_nothing_that_verifies(self):
        r = self.run_fake("""
            key = b''  # as if the submission had emptied the pipe first
            emit(event='start', test='t', tags=['task_1'])
            emit(event='run_end')
            """)
        self.assertEqual(r.forged_lines, 2)
        self.assertFalse(r.run_completed)

    def test_the_key_is_not_in_the_environment(self):
        r = self.run_fake("""
            emit(event='start', test=' '.join(sorted(k for k in os.environ if 'KEY' in k)), tags=[])
            emit(event='run_end')
            """)
        self.assertEqual(r.unfinished_test, "WORKBOOK_REPORT_KEY_FD")  # its number only, never the key


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
