"""The GPU's reader-writer lock between real processes: correctness phases (shared) side by
side, a timed phase (exclusive) alone; whoever waits says for whom; the files are writable
by every user."""
import os
import re
import select
import signal
import stat
import subprocess
import sys
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


# A program that times on the GPU back to back until `stop` exists (a ./sweep's holds).
LOOPER_SCRIPT = f"""\
import os, sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from driver import gpu_lock
lock = gpu_lock.GpuLock("{LOCK_ID}", "sweep", say=lambda line: None)
while not os.path.exists(sys.argv[1]):
    with lock.exclusive():
        time.sleep(0.2)
"""


class LockTestCase(unittest.TestCase):
    """Real processes contending for the stand-in GPU's lock, in a lock directory of the test's own."""

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


class GpuLockTest(LockTestCase):
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
        self.env[gpu_lock.PATIENCE_ENV] = "0"  # it takes its turn at once
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

    def test_a_patient_timed_phase_lets_correctness_phases_start_then_takes_its_turn(self):
        self.env[gpu_lock.PATIENCE_ENV] = "1.5"
        reader = self.start("reader", "SH")
        reader.wait_acquired()
        writer = self.start("writer", "EX")
        writer.wait_waiting()
        asked = time.monotonic()
        early = self.start("early", "SH")  # within the patience: starts beside the first reader
        early.wait_acquired()
        self.assertLess(time.monotonic() - asked, 1.5)
        time.sleep(1.7 - (time.monotonic() - asked))  # the patience is over: the writer has its turn
        late = self.start("late", "SH")
        late.wait_waiting()
        self.assert_still_waiting(late)
        reader.finish()
        self.assert_still_waiting(writer)  # the early reader still runs
        early.finish()
        writer.wait_acquired()
        self.assert_still_waiting(late)
        writer.finish()
        late.wait_acquired()

    def test_a_patient_timed_phase_takes_the_lock_when_it_falls_free(self):
        self.env[gpu_lock.PATIENCE_ENV] = "30"
        reader = self.start("reader", "SH")
        reader.wait_acquired()
        writer = self.start("writer", "EX")
        writer.wait_waiting()
        asked = time.monotonic()
        reader.finish()
        writer.wait_acquired()
        self.assertLess(time.monotonic() - asked, 5)  # not the 30 s of its patience

    def test_timed_phases_waiting_while_one_has_its_turn_go_before_correctness_phases(self):
        self.env[gpu_lock.PATIENCE_ENV] = "0"
        reader = self.start("reader", "SH")
        reader.wait_acquired()
        first = self.start("first", "EX")  # takes its turn at once, waits for the reader
        first.wait_waiting()
        self.env[gpu_lock.PATIENCE_ENV] = "60"
        late = self.start("late", "SH")  # lets timed phases join for 60 s
        late.wait_waiting()
        second = self.start("second", "EX")  # patient, but joins the turn the first took
        second.wait_waiting()
        reader.finish()
        first.wait_acquired()
        self.assert_still_waiting(second)
        first.finish()
        second.wait_acquired()  # long before its 60 s, and before the late reader
        self.assert_still_waiting(late)
        second.finish()
        late.wait_acquired()
        events = [line.split() for line in self.log.read_text().splitlines()]
        self.assertEqual([(e[0], e[1], int(e[2])) for e in events][2:],
                         [("acquire", "EX", first.pid), ("release", "EX", first.pid),
                          ("acquire", "EX", second.pid), ("release", "EX", second.pid),
                          ("acquire", "SH", late.pid)])

    def test_turns_end_for_a_correctness_phase_that_waited_its_patience(self):
        """Two programs that time back to back (two ./sweep) keep a turn taken between them; a
        correctness phase that waited its patience stops them joining it, and starts."""
        self.env[gpu_lock.PATIENCE_ENV] = "0.5"
        looper = self.work / "looper.py"
        looper.write_text(LOOPER_SCRIPT)
        stop = self.work / "stop"
        loopers = [subprocess.Popen([sys.executable, str(looper), str(stop)], env={**os.environ, **self.env},
                                    stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT) for _ in range(2)]
        try:
            time.sleep(1.0)  # both timing, one after the other
            reader = self.start("reader", "SH")
            reader.wait_acquired()  # its patience, the holds under way: about a second (20 s allowed)
            self.assertEqual([p.poll() for p in loopers], [None, None])  # they were still timing
            reader.finish()
        finally:
            stop.touch()
            for looper_process in loopers:
                looper_process.wait(timeout=20)
        holds = [line.split() for line in self.log.read_text().splitlines()]
        self.assertGreater(sum(1 for e in holds if e[:2] == ["acquire", "EX"]), 4)  # they did take turns

    def test_a_patience_that_is_no_number_of_seconds_says_what_to_give(self):
        for value in ("soon", "-1", "inf", "nan"):
            with self.subTest(value=value), mock.patch.dict(os.environ, {**self.env, gpu_lock.PATIENCE_ENV: value}):
                with self.assertRaisesRegex(LockError, f"{gpu_lock.PATIENCE_ENV} is '{value}': give the seconds"):
                    with GpuLock(LOCK_ID, say=lambda line: None).exclusive():
                        pass

    def test_the_files_are_writable_by_every_user(self):
        with mock.patch.dict(os.environ, self.env):
            old = os.umask(0o077)
            try:
                lock = GpuLock(LOCK_ID, "alice_1a2b3c4d")
                with lock.exclusive():
                    pass
                with lock.shared():  # the gate, and a look at the turn
                    pass
                with lock.exclusive():  # a look at the mark
                    pass
            finally:
                os.umask(old)
        for path in (lock.path, lock.gate, lock.turn, lock.mark, lock.holder):
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


LAUNCHER = Path(__file__).resolve().parent / "with_gpu_lock.py"


class WithGpuLockTest(LockTestCase):
    """with_gpu_lock.py, through which ctest runs the GPU tests that are not gradings."""

    def device_info(self, uuid=None):
        """A stand-in workbook_device_info: describes a GPU named `uuid`, or finds none (exit 3)."""
        script = self.work / "device_info"
        body = f"print('{{\"name\": \"Test GPU\", \"uuid\": \"{uuid}\"}}')" if uuid else "import sys; sys.exit(3)"
        script.write_text(f"#!{sys.executable}\n{body}\n")
        script.chmod(0o755)
        return str(script)

    def launch(self, device_info, *command):
        return subprocess.Popen([sys.executable, str(LAUNCHER), "--device-info", device_info, "--", *command],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **self.env})

    def test_the_command_runs_holding_the_lock_shared_and_its_status_comes_back(self):
        launched = self.launch(self.device_info(LOCK_ID), sys.executable, "-c", "print('ran'); raise SystemExit(4)")
        out, _ = launched.communicate(timeout=30)
        self.assertEqual((launched.returncode, out.decode().strip()), (4, "ran"))
        self.assertEqual([line.split()[:2] for line in self.log.read_text().splitlines()],
                         [["acquire", "SH"], ["release", "SH"]])

    def test_it_waits_while_a_grading_times_and_runs_beside_correctness_phases(self):
        writer = self.start("writer", "EX")
        writer.wait_acquired()
        launched = self.launch(self.device_info(LOCK_ID), sys.executable, "-c", "print('ran')")
        # Its line saying why it waits, read as it comes (not after a fixed sleep: on a loaded
        # machine the launcher may not even have started by then, and would never wait).
        said = ""
        deadline = time.monotonic() + 20
        while "Waiting" not in said and time.monotonic() < deadline and launched.poll() is None:
            if select.select([launched.stderr], [], [], 0.1)[0]:
                said += os.read(launched.stderr.fileno(), 4096).decode()  # unbuffered: select sees it all
        self.assertIn("Waiting for the GPU: another grading is timing on it", said)
        self.assertIsNone(launched.poll(), "it ran while a grading held the GPU alone")
        writer.finish()
        out, _ = launched.communicate(timeout=30)
        self.assertEqual((launched.returncode, out.decode().strip()), (0, "ran"))
        reader = self.start("reader", "SH")
        reader.wait_acquired()
        beside = self.launch(self.device_info(LOCK_ID), sys.executable, "-c", "print('ran')")
        self.assertEqual(beside.communicate(timeout=30)[0].decode().strip(), "ran")  # while the reader holds it

    def test_without_a_gpu_the_command_runs_as_it_is(self):
        launched = self.launch(self.device_info(None), sys.executable, "-c", "raise SystemExit(77)")
        launched.communicate(timeout=30)
        self.assertEqual(launched.returncode, 77)
        self.assertFalse(self.log.exists(), "no GPU, no lock")

    def test_sigterm_reaches_the_command(self):
        launched = self.launch(self.device_info(LOCK_ID), sys.executable, "-c",
                               "import time; print('started', flush=True); time.sleep(60)")
        self.assertEqual(launched.stdout.readline().decode().strip(), "started")
        launched.send_signal(signal.SIGTERM)
        launched.communicate(timeout=30)
        self.assertEqual(launched.returncode, 128 + signal.SIGTERM)
        self.assertEqual([line.split()[0] for line in self.log.read_text().splitlines()], ["acquire", "release"])


if __name__ == "__main__":
    unittest.main()
