"""The figures a class measures once per GPU (grader/driver/timing_cache.py): reused until they are
due again, kept per GPU and per build of the program, their drift recorded, and nothing lost when
several gradings write at once. Where ./grade and ./grade-class use them: test_perf_phase.py and
test_class_grading.py."""
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver import cli, gpu_lock, gpu_processes  # noqa: E402
from driver.timing_cache import TimingCache  # noqa: E402


def put_many(path: str, worker: int) -> None:
    cache = TimingCache(Path(path))
    for i in range(20):
        cache.put(f"gpu/{worker}/{i}", None, {"gbps": float(i)}, "gbps")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class TimingCacheTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.program = self.tmp / "grade_01__solutions"
        self.program.write_text("v1")
        self.clock = Clock()
        self.cache = TimingCache(self.tmp / "cache.json", max_uses=3, max_age_s=60, clock=self.clock)

    def tearDown(self):
        self._tmp.cleanup()

    def test_a_figure_is_reused_until_its_uses_run_out(self):
        key = TimingCache.key("GPU-1", "reference/01/1")
        self.assertIsNone(self.cache.take(key, str(self.program)))
        self.cache.put(key, str(self.program), {"gbps": 2900.0}, "gbps")
        for _ in range(3):
            self.assertEqual(self.cache.take(key, str(self.program)), {"gbps": 2900.0})
        self.assertIsNone(self.cache.take(key, str(self.program)))  # due again
        self.cache.put(key, str(self.program), {"gbps": 2987.0}, "gbps")
        self.assertEqual(self.cache.take(key, str(self.program)), {"gbps": 2987.0})
        summary = self.cache.summary()
        self.assertEqual((summary["figures"], summary["measurements"], summary["reuses"]), (1, 2, 4))
        self.assertAlmostEqual(summary["largest_drift"], 0.03)

    def test_a_figure_too_large_for_a_float_is_no_crash(self):
        key = TimingCache.key("GPU-1", "reference/01/1")
        self.cache.put(key, str(self.program), {"gbps": 10 ** 400}, "gbps")  # a damaged file's
        self.cache.put(key, str(self.program), {"gbps": 2900.0}, "gbps")     # its drift: not a number
        self.assertIsNotNone(self.cache.summary())

    def test_a_figure_grows_old(self):
        key = TimingCache.key("GPU-1", "copy_bandwidth")
        self.cache.put(key, str(self.program), {"copy_bandwidth_gbps": 3000.0}, "copy_bandwidth_gbps")
        self.clock.now += 59
        self.assertIsNotNone(self.cache.take(key, str(self.program)))
        self.clock.now += 2
        self.assertIsNone(self.cache.take(key, str(self.program)))

    def test_another_gpu_or_a_rebuilt_program_measures_again(self):
        self.cache.put(TimingCache.key("GPU-1", "x"), str(self.program), {"gbps": 1.0}, "gbps")
        self.assertIsNone(self.cache.take(TimingCache.key("GPU-2", "x"), str(self.program)))
        os.utime(self.program, ns=(5, 5))
        self.assertIsNone(self.cache.take(TimingCache.key("GPU-1", "x"), str(self.program)))
        # and the figure of another build is no drift
        self.cache.put(TimingCache.key("GPU-1", "x"), str(self.program), {"gbps": 2.0}, "gbps")
        self.assertIsNone(self.cache.summary()["largest_drift"])

    def test_a_damaged_file_is_an_empty_cache(self):
        (self.tmp / "cache.json").write_text("{not json")
        self.assertIsNone(self.cache.take("gpu/x", None))
        self.cache.put("gpu/x", None, {"gbps": 1.0}, "gbps")
        self.assertEqual(self.cache.take("gpu/x", None), {"gbps": 1.0})

    def test_nonsense_in_the_file_or_a_folder_that_cannot_be_written_means_measuring(self):
        (self.tmp / "cache.json").write_text(json.dumps({"version": 1, "entries": {
            "gpu/x": {"metrics": "fast", "program": "-", "measured_at": 1000.0, "uses": 0},
            "gpu/y": {"metrics": {"gbps": 1.0}, "program": "-", "measured_at": "soon", "uses": "none"}}}))
        self.assertIsNone(self.cache.take("gpu/x", None))
        self.assertIsNone(self.cache.take("gpu/y", None))
        self.assertEqual(self.cache.summary()["figures"], 2)  # read, not raised
        self.cache.put("gpu/x", None, {"gbps": 2.0}, "gbps")
        self.assertEqual(self.cache.take("gpu/x", None), {"gbps": 2.0})
        self.assertIsNone(self.cache.take("gpu/z", str(self.tmp / "no_such_program")))
        blocked = TimingCache(self.tmp / "a_file" / "cache.json")
        (self.tmp / "a_file").write_text("not a folder")
        blocked.put("gpu/x", None, {"gbps": 1.0}, "gbps")
        self.assertIsNone(blocked.take("gpu/x", None))

    def test_an_entry_from_the_future_or_with_uses_below_zero_is_not_reused(self):
        for entry in ({"measured_at": 10**12, "uses": 0}, {"measured_at": 1000.0, "uses": -10**6}):
            (self.tmp / "cache.json").write_text(json.dumps({"version": 1, "entries": {
                "gpu/x": dict(entry, metrics={"copy_bandwidth_gbps": 1e9}, program="-")}}))
            self.assertIsNone(self.cache.take("gpu/x", None), entry)

    def test_gradings_writing_at_once_lose_nothing(self):
        path = str(self.tmp / "shared.json")
        workers = [multiprocessing.Process(target=put_many, args=(path, w)) for w in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.assertEqual(len(json.loads(Path(path).read_text())["entries"]), 80)


class CopyBandwidthTest(unittest.TestCase):
    """query_device with --timing-cache: the first grading on a GPU measures the copy bandwidth
    (workbook_device_info --measure-copy), the next ones reuse it."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.env = mock.patch.dict(os.environ, {gpu_lock.LOCK_DIR_ENV: self._tmp.name})
        self.env.start()
        self.calls = []

    def tearDown(self):
        self.env.stop()
        self._tmp.cleanup()

    def fake_run(self, command, **kwargs):
        self.calls.append(command[1:])
        device = {"name": "Fake GPU", "uuid": "GPU-fake"}
        if getattr(self, "ceiling", None):
            device["theoretical_bandwidth_gbps"] = self.ceiling  # below what the copy "measures"
        if "--measure-copy" in command:
            device["copy_bandwidth_gbps"] = 3000.0 + len(self.calls)
        return subprocess.CompletedProcess(command, 0, json.dumps(device).encode(), b"")

    def test_measured_once_then_reused(self):
        program = self.tmp / "workbook_device_info"
        program.write_text("")
        cache = str(self.tmp / "timing_cache.json")
        with mock.patch.object(cli.subprocess, "run", self.fake_run), \
                mock.patch.object(gpu_processes, "compute_apps", return_value=[]):
            first = json.loads(cli.query_device({"device_info": str(program)}, "alice", cache).stdout)
            second = json.loads(cli.query_device({"device_info": str(program)}, "bob", cache).stdout)
            alone = json.loads(cli.query_device({"device_info": str(program)}, "carol").stdout)
        self.assertEqual(first["copy_bandwidth_gbps"], 3002.0)
        self.assertEqual(second, dict(first))  # the facts and the kept bandwidth
        self.assertEqual(self.calls, [[], ["--measure-copy"], [], [], ["--measure-copy"]])
        self.assertEqual(alone["copy_bandwidth_gbps"], 3005.0)  # without the cache: measured

    def test_a_disturbed_or_impossible_bandwidth_is_not_kept(self):
        program = self.tmp / "workbook_device_info"
        program.write_text("")
        cache = str(self.tmp / "timing_cache.json")
        for others, ceiling in (([(99, "other")], None), (None, None), ([], 2000.0)):
            self.calls = []
            with mock.patch.object(cli.subprocess, "run", self.fake_run), \
                    mock.patch.object(gpu_processes, "compute_apps", return_value=others), \
                    mock.patch.object(self, "ceiling", ceiling, create=True):
                cli.query_device({"device_info": str(program)}, "alice", cache)
                cli.query_device({"device_info": str(program)}, "bob", cache)
            self.assertEqual(self.calls.count(["--measure-copy"]), 2, (others, ceiling))  # each measured


if __name__ == "__main__":
    unittest.main()
