"""tools/lock_log_summary.py: where a GPU's time went, from the per-GPU lock's log."""
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import lock_log_summary  # noqa: E402
from driver import gpu_lock  # noqa: E402

# On the GPU's lock (G): two correctness phases side by side (0-4 s, 1-3 s), nobody (4-5 s), one
# grading alone (5-8 s), another alone (8-9 s) whose tree and lock are left out (an older log,
# counted on G's lock as the only other one), then a shared hold never released. A unit test's lock
# of its own (U) holds the GPU alone at 4-5 s: left out.
LOG = """acquire SH 10 100.0 alice /tmp/G.lock
acquire SH 11 101.0 bob /tmp/G.lock
release SH 11 103.0 bob /tmp/G.lock
release SH 10 104.0 alice /tmp/G.lock
acquire EX 20 104.0 t /tmp/U.lock
release EX 20 105.0 t /tmp/U.lock
acquire EX 12 105.0 carol /tmp/G.lock
release EX 12 108.0 carol /tmp/G.lock
acquire EX 13 108.0
release EX 13 109.0
acquire SH 14 109.5 dave /tmp/G.lock
acquire SH 15 110.0 erin /tmp/G.lock
release SH 15 110.0 erin /tmp/G.lock
"""


class LockLogSummaryTest(unittest.TestCase):
    def test_the_gpu_alone_correctness_only_and_nobody_add_up_to_the_span(self):
        found = lock_log_summary.intervals(LOG.splitlines())
        lines = lock_log_summary.summarize([hold if hold[4] != "-" else hold[:4] + ("/tmp/G.lock",) for hold in found])
        self.assertEqual(lines[0], "lock log: 10 s from the first hold to the last; the GPU alone 4 s (2 holds), "
                                   "correctness only 4 s, nobody 2 s (1 holds of other locks left out)")
        # Before carol's hold (105 s): bob's acquire at 101 s is the last start, alice ends at 104 s.
        self.assertEqual(lines[1], "lock log: before the holds alone, at most 3 s of correctness phases ending while "
                                   "none started (1 of 2 holds): the GPU draining for a waiting timed phase")
        self.assertEqual(lines[2], "lock log: alone longest: carol 3 s (1), - 1 s (1)")

    def test_a_drain_counts_only_while_a_correctness_phase_is_open(self):
        G = "/tmp/G.lock"
        found = lock_log_summary.intervals([
            f"acquire SH 1 0.0 a {G}", f"acquire SH 2 1.0 b {G}", f"release SH 2 2.0 b {G}",
            f"release SH 1 6.0 a {G}",                       # a drains 1-6 s
            f"acquire EX 3 7.0 c {G}", f"release EX 3 8.0 c {G}",  # 6-7 s: nobody, not draining
            f"acquire EX 4 8.0 d {G}", f"release EX 4 9.0 d {G}"])  # right after c: no drain
        self.assertEqual(lock_log_summary.drains(found), (5.0, 1))

    def test_a_log_the_lock_wrote_is_read_with_its_trees(self):
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "locks.log"
            with mock.patch.dict(os.environ, {gpu_lock.LOCK_DIR_ENV: d, gpu_lock.LOCK_LOG_ENV: str(log)}):
                with gpu_lock.GpuLock("GPU-test", tree="broken variant/1").exclusive():
                    pass
                with gpu_lock.GpuLock("GPU-test", tree="").shared():
                    pass
                lock = str(gpu_lock.GpuLock("GPU-test").path)
            found = lock_log_summary.intervals(log.read_text().splitlines())
        self.assertEqual([(mode, tree, held) for mode, _, _, tree, held in found],
                         [("EX", "broken_variant_1", lock), ("SH", "-", lock)])

    def test_one_process_s_holds_of_two_locks_pair_up_lock_by_lock(self):
        found = lock_log_summary.intervals(["acquire SH 7 1.0 t /tmp/G.lock", "acquire EX 7 2.0 t /tmp/U.lock",
                                            "release EX 7 3.0 t /tmp/U.lock", "release SH 7 5.0 t /tmp/G.lock"])
        self.assertEqual(sorted((mode, start, end, lock) for mode, start, end, _, lock in found),
                         [("EX", 2.0, 3.0, "/tmp/U.lock"), ("SH", 1.0, 5.0, "/tmp/G.lock")])

    def test_a_line_that_is_not_the_lock_s_is_refused_by_number(self):
        with self.assertRaisesRegex(ValueError, "line 2 is not"):
            lock_log_summary.intervals(["acquire EX 1 1.0 t", "hello"])
        with self.assertRaisesRegex(ValueError, "line 1: 'noon' is not a time"):
            lock_log_summary.intervals(["acquire EX 1 noon t"])
        with tempfile.TemporaryDirectory() as d:
            bad = Path(d) / "bad.log"
            bad.write_text("hello world\n")
            err = io.StringIO()
            with mock.patch.object(sys, "stderr", err), redirect_stdout(io.StringIO()):
                self.assertEqual(lock_log_summary.main([str(bad)]), 2)
            self.assertIn("line 1 is not", err.getvalue())


if __name__ == "__main__":
    unittest.main()
