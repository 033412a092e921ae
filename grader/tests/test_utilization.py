"""tools/utilization.py: whether a run was short of CPU or of GPU, from its samples."""
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import utilization  # noqa: E402

STAT = """cpu  100 10 50 800 40 5 5 0 0 0
cpu0 50 5 25 400 20 2 3 0 0 0
intr 1
procs_running 7
procs_blocked 0
"""


class UtilizationTest(unittest.TestCase):
    def test_busy_is_everything_but_idle_and_iowait(self):
        self.assertEqual(utilization.cpu_times(STAT), (170, 1010))
        self.assertEqual(utilization.procs_running(STAT), 7)

    def test_summary_says_how_busy_cpu_and_gpu_were(self):
        samples = utilization.parse(["# header", "10.0 0.95 16 16 100/5000", "12.0 0.50 8 16 0/5000",
                                     "14.0 0.15 4 16 [N/A]/5000", "16.0 0.20 4 16 -"])
        lines = utilization.summarize(samples)
        self.assertIn("4 samples over 6 s; CPU busy 45% on average, 25% of the time at 90% or more", lines[0])
        self.assertIn("0.50 runnable processes per core", lines[0])
        # Only readings count for the GPU: 100% and 0%.
        self.assertEqual(lines[1], "utilization: GPU 0 busy 50% on average, 50% of the time at 90% or more, "
                                   "idle (0%) 50% of the time")

    def test_a_malformed_line_is_an_error_not_a_figure(self):
        with self.assertRaises(ValueError):
            utilization.parse(["10.0 0.9 16"])
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "u.log"
            log.write_text("garbage\n")
            self.assertEqual(utilization.main(["summary", str(log)]), 1)

    def test_record_stops_at_once_on_sigterm(self):
        # gpu_check.sh stops the sampler when a stage ends or a time limit strikes: it must not
        # sit out its interval first.
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "u.log"
            sampler = subprocess.Popen([sys.executable, utilization.__file__, "record", str(log), "--interval", "30"])
            deadline = time.monotonic() + 10
            while not (log.exists() and log.read_text().startswith("#")) and time.monotonic() < deadline:
                time.sleep(0.05)
            started = time.monotonic()
            sampler.terminate()
            self.assertEqual(sampler.wait(timeout=10), 0)
            self.assertLess(time.monotonic() - started, 3)
            self.assertTrue(log.read_text().startswith("# t cpu_busy"))

    def test_no_samples(self):
        self.assertEqual(utilization.summarize([]), ["utilization: no samples"])


if __name__ == "__main__":
    unittest.main()
