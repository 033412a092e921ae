"""The GPU's reader-writer lock between real processes: correctness phases (shared) side by
side, a timed phase (exclusive) alone; whoever waits says for whom; the files are writable
by every user."""
import os
import re
import stat
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from helpers import phase  # noqa: F401  (puts the driver on sys.path)
from driver import gpu_lock
from driver.gpu_lock import GpuLock
from driver.file_lock import LockError
from lock_helpers import Holder

LOCK_ID = "GPU-00000000-test"  # what lock_helpers' stand-in locks
WAITING_FOR_CORRECTNESS = ("Waiting for the GPU: other gradings are running correctness tests on it; performance "
                           "is measured alone, one grading at a time.")


class GpuLockTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = Path(self.tmp.name)
        self.log = self.work / "locks.log"
        self.env = {gpu_lock.LOCK_DIR_ENV: str(self.work / "locks"), gpu_lock.LOCK_LOG_ENV: str(self.log)}
        self.holders = []

    def tearDown(self):
        for holder in self.holders:
            holder.finish()
        self.tmp.cleanup()

    def start(self, name, mode, tree="alice_1a2b3c4d"):
        holder = Holder(self.work, name, "gpu", mode, tree, self.env)
        self.holders.append(holder)
        return holder

    def assert_still_waiting(self, holder):
        time.sleep(0.3)
        self.assertNotIn("acquired", holder.output)

    def test_correctness_phases_run_side_by_side(self):
        first = self.start("first", "SH")
        first.wait_acquired()
        second = self.start("second", "SH")
        second.wait_acquired()  # while the first still holds it
        self.assertNotIn("Waiting", second.output)

    def test_a_timed_phase_waits_for_correctness_phases(self):
        reader = self.start("reader", "SH")
        reader.wait_acquired()
        writer = self.start("writer", "EX")
        writer.wait_waiting()
        self.assert_still_waiting(writer)
        self.assertEqual(writer.output.splitlines()[0], WAITING_FOR_CORRECTNESS)
        reader.finish()
        writer.wait_acquired()

    def test_a_correctness_phase_waits_for_a_timed_phase_and_names_it(self):
        writer = self.start("writer", "EX", tree="alice_1a2b3c4d")
        writer.wait_acquired()
        reader = self.start("reader", "SH", tree="bob_5e6f7a8b")
        reader.wait_waiting()
        self.assert_still_waiting(reader)
        self.assertRegex(reader.output.splitlines()[0], re.escape("Waiting for the GPU: another grading is timing on "
                                                                  f"it (pid {writer.pid}, user ") +
                         r"[^,]+, tree alice_1a2b3c4d, since \d\d:\d\d:\d\d\); performance is measured alone, "
                         r"one grading at a time\.$")
        writer.finish()
        reader.wait_acquired()

    def test_this_process_counts_its_seconds_waiting_for_and_holding_each_mode(self):
        before = gpu_lock.lock_seconds()
        writer = self.start("writer", "EX")
        writer.wait_acquired()
        with mock.patch.dict(os.environ, self.env):
            lock = GpuLock(LOCK_ID, say=lambda line: None)
            finisher = threading.Timer(0.4, writer.finish)
            finisher.start()
            with lock.shared():  # waits until the writer is done
                time.sleep(0.2)
            finisher.join()
            with lock.exclusive():
                time.sleep(0.1)
        after = gpu_lock.lock_seconds()
        spent = {mode: {k: after[mode][k] - before[mode][k] for k in ("waited", "held")} for mode in after}
        self.assertGreaterEqual(spent["shared"]["waited"], 0.3)
        self.assertGreaterEqual(spent["shared"]["held"], 0.2)
        self.assertGreaterEqual(spent["exclusive"]["held"], 0.1)
        self.assertLess(spent["exclusive"]["waited"], 0.3)

    def test_two_timed_phases_take_turns(self):
        first = self.start("first", "EX")
        first.wait_acquired()
        second = self.start("second", "EX")
        second.wait_waiting()
        self.assert_still_waiting(second)
        first.finish()
        second.wait_acquired()
        second.finish()
        # The lock log: the two exclusive intervals one after the other.
        events = [line.split() for line in self.log.read_text().splitlines()]
        self.assertEqual([(e[0], e[1], int(e[2])) for e in events],
                         [("acquire", "EX", first.pid), ("release", "EX", first.pid),
                          ("acquire", "EX", second.pid), ("release", "EX", second.pid)])
        self.assertLessEqual(float(events[1][3]), float(events[2][3]))

    def test_a_waiting_timed_phase_goes_before_new_correctness_phases(self):
        reader = self.start("reader", "SH")
        reader.wait_acquired()
        writer = self.start("writer", "EX")
        writer.wait_waiting()
        late_reader = self.start("late", "SH")  # must not overtake the waiting writer
        late_reader.wait_waiting()
        self.assert_still_waiting(late_reader)
        reader.finish()
        writer.wait_acquired()
        self.assert_still_waiting(late_reader)
        writer.finish()
        late_reader.wait_acquired()

    def test_the_files_are_writable_by_every_user(self):
        with mock.patch.dict(os.environ, self.env):
            old = os.umask(0o077)
            try:
                lock = GpuLock(LOCK_ID, "alice_1a2b3c4d")
                with lock.exclusive():
                    pass
            finally:
                os.umask(old)
        for path in (lock.path, lock.gate, lock.holder):
            self.assertEqual(stat.S_IMODE(path.stat().st_mode), 0o666, path)
        self.assertEqual(lock.path.name, f"cuda-workbook-gpu-{LOCK_ID}.lock")
        self.assertEqual(lock.path.parent, self.work / "locks")

    def test_a_lock_directory_nobody_can_write_says_what_to_set(self):
        with mock.patch.dict(os.environ, {gpu_lock.LOCK_DIR_ENV: "/proc/no-such-dir"}):
            lock = GpuLock("GPU-x", "t", say=lambda _: None)
            with self.assertRaisesRegex(LockError, "cannot create the lock file.*WORKBOOK_LOCK_DIR"):
                with lock.shared():
                    pass

    def test_one_mode_at_a_time(self):
        with mock.patch.dict(os.environ, self.env):
            lock = GpuLock(LOCK_ID)
            with lock.shared():
                with self.assertRaises(RuntimeError):
                    with lock.exclusive():
                        pass
            with lock.exclusive():  # after releasing, the other mode is fine
                pass

    def test_the_lock_is_named_after_the_uuid_or_else_the_name(self):
        self.assertEqual(gpu_lock.gpu_id({"uuid": "GPU-1234", "name": "NVIDIA H200"}), "GPU-1234")
        self.assertEqual(gpu_lock.gpu_id({"name": "NVIDIA H200"}), "NVIDIA H200-0")
        with mock.patch.dict(os.environ, self.env):
            self.assertEqual(GpuLock.for_device({"name": "NVIDIA H200"}).path.name,
                             "cuda-workbook-gpu-NVIDIA_H200-0.lock")


if __name__ == "__main__":
    unittest.main()
