"""grader/driver/counters.py: ncu's CSV read as its versions print it, why it gave no counters, and
the counters described beside their ideals. Host-only: the CSV here is written as ncu writes it."""
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from driver import counters  # noqa: E402
from driver.counters import CountersError  # noqa: E402

# ncu 2025 prints the launch's block and grid; older ones print "Kernel Time" instead.
HEADER_2025 = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
               '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
HEADER_OLD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
              '"Section Name","Metric Name","Metric Unit","Metric Value"')


def rows_2025(launch, kernel, values):
    return [f'"{launch}","4242","grade_01","host","{kernel}","1","13","(256, 1, 1)","(65536, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","",{value}' for metric, value in values.items()]


UNCOALESCED = {
    counters.GLOBAL_LOAD_SECTORS: '"16,777,216"', counters.GLOBAL_LOAD_REQUESTS: '"524,288"',
    counters.GLOBAL_STORE_SECTORS: '"2,097,152"', counters.GLOBAL_STORE_REQUESTS: '"524,288"',
    counters.SHARED_LOAD_CONFLICTS: '"0"', counters.SHARED_LOAD_REQUESTS: '"0"',
    counters.SHARED_STORE_CONFLICTS: '"31,744"', counters.SHARED_STORE_REQUESTS: '"1,024"',
    counters.THREADS_PER_INSTRUCTION: '"32"', counters.ACTIVE_WARPS_PCT: '"87.41"',
    counters.DRAM_READ_BYTES: '"536,870,912"', counters.DRAM_WRITE_BYTES: '"67,108,864"',
    counters.LOCAL_LOAD_BYTES: '"0"', counters.LOCAL_STORE_BYTES: '"0"',
}


class ParseTest(unittest.TestCase):
    def test_launches_in_order_with_their_counters_past_the_program_output(self):
        text = "\n".join(["==PROF== Connected to process 4242 (grade_01)", "Randomness seeded to: 7",
                          "==PROF== Profiling \"vector_add\" - 0: 0%....50%....100% - 9 passes", HEADER_2025]
                         + rows_2025(0, "vector_add(const float *, const float *, float *, int)", UNCOALESCED)
                         + rows_2025(1, "fill(float *, int)", {counters.DRAM_WRITE_BYTES: '"4,096"'})
                         + ["==PROF== Disconnected from process 4242"])
        first, second = counters.parse(text)
        self.assertEqual((first.launch, first.block, first.grid), ("0", "(256, 1, 1)", "(65536, 1, 1)"))
        self.assertTrue(first.name.startswith("vector_add("))
        self.assertEqual(first.value(counters.GLOBAL_LOAD_SECTORS), 16777216.0)
        self.assertEqual(first.ratio(counters.GLOBAL_LOAD_SECTORS, counters.GLOBAL_LOAD_REQUESTS), 32.0)
        self.assertEqual(second.values, {counters.DRAM_WRITE_BYTES: 4096.0})

    def test_an_older_header_and_values_ncu_could_not_give(self):
        text = "\n".join([HEADER_OLD, '"3","1","p","h","k","1/1/2024","1","7","S","'
                          + counters.THREADS_PER_INSTRUCTION + '","","n/a"',
                          '"3","1","p","h","k","1/1/2024","1","7","S","' + counters.ACTIVE_WARPS_PCT + '","%","50.5"'])
        [kernel] = counters.parse(text)
        self.assertIsNone(kernel.value(counters.THREADS_PER_INSTRUCTION))
        self.assertEqual(kernel.value(counters.ACTIVE_WARPS_PCT), 50.5)
        self.assertEqual((kernel.block, kernel.grid), ("", ""))
        self.assertIsNone(kernel.ratio(counters.GLOBAL_LOAD_SECTORS, counters.GLOBAL_LOAD_REQUESTS))

    def test_a_value_ncu_scaled_to_a_fitting_unit_is_read_in_base_units(self):
        header = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'
        [kernel] = counters.parse("\n".join([header, f'"0","k","{counters.DRAM_READ_BYTES}","Mbyte","10.24"',
                                              f'"0","k","{counters.GLOBAL_LOAD_SECTORS}","Ksector","640"',
                                              f'"0","k","{counters.ACTIVE_WARPS_PCT}","%","50"',
                                              f'"0","k","{counters.DRAM_WRITE_BYTES}","byte","7"']))
        self.assertEqual(kernel.values, {counters.DRAM_READ_BYTES: 10.24e6, counters.GLOBAL_LOAD_SECTORS: 640e3,
                                         counters.ACTIVE_WARPS_PCT: 50.0, counters.DRAM_WRITE_BYTES: 7.0})

    def test_output_without_a_table_or_its_columns_is_an_error(self):
        with self.assertRaisesRegex(CountersError, "no CSV table"):
            counters.parse("==PROF== Connected\nhello\n")
        with self.assertRaisesRegex(CountersError, "no column Metric Value"):
            counters.parse('"ID","Kernel Name","Metric Name"\n"0","k","m"\n')


class FailureTest(unittest.TestCase):
    def test_counters_restricted_to_administrators_say_what_an_administrator_does(self):
        output = ("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission "
                  "to access NVIDIA GPU Performance Counters on the target device 0.\n")
        why = counters.failure(output, 1)
        self.assertIn("restricted to administrators", why)
        self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", why)
        self.assertEqual(why.count("\n"), 0, "one line")

    def test_an_unknown_metric_an_error_line_no_kernel_and_a_bare_exit_status(self):
        self.assertIn("does not know the metric sm__bogus.sum",
                      counters.failure("==ERROR== Failed to find metric sm__bogus.sum\n", 1))
        self.assertEqual(counters.failure("==ERROR== The application returned an error code (11).\n", 11),
                         "No counters: ncu said: The application returned an error code (11).")
        self.assertEqual(counters.failure("==PROF== Disconnected\n", 0),
                         "No counters: ncu profiled no kernel of the timed call.")
        self.assertEqual(counters.failure("", 9), "No counters: ncu exited with status 9.")
        self.assertIsNone(counters.failure(HEADER_2025 + "\n", 0))
        self.assertIsNone(counters.failure(HEADER_2025 + "\n", 1), "a test that failed still gave its counters")


class DescribeTest(unittest.TestCase):
    def test_each_counter_beside_its_ideal(self):
        [kernel] = counters.parse("\n".join([HEADER_2025] + rows_2025(0, "k", UNCOALESCED)))
        text = "\n".join(counters.describe(kernel, least_bytes=3 * 4 * (1 << 24)))
        self.assertIn("global loads: 32.0 sectors of 32 bytes per warp request", text)
        self.assertIn("global stores: 4.0 sectors", text)
        self.assertIn("shared stores: 31.00 bank conflicts per warp request (0 without conflicts)", text)
        self.assertNotIn("shared loads", text)  # no shared loads: nothing to say of them
        self.assertIn("threads per executed instruction: 32.0 (32 when no warp diverges)", text)
        self.assertIn("achieved occupancy: 87% of the warps", text)
        self.assertIn("DRAM: 604.0 MB read and written (3.00 x the 201.3 MB the task must move)", text)
        self.assertIn("local memory (register spills, or arrays the compiler could not keep in registers): 0.0 MB "
                      "loaded and stored", text)

    def test_counters_ncu_did_not_give_are_left_out(self):
        kernel = counters.Kernel("0", "k", "", "", {counters.ACTIVE_WARPS_PCT: None,
                                                    counters.THREADS_PER_INSTRUCTION: 20.0})
        self.assertEqual(counters.describe(kernel), ["threads per executed instruction: 20.0 (32 when no warp diverges)"])


class CommandTest(unittest.TestCase):
    def test_the_profiled_range_only_every_metric_as_csv_into_the_log(self):
        cmd = counters.command("/usr/local/cuda/bin/ncu", "/tmp/x/ncu.csv", kernels=2)
        self.assertEqual(cmd[:10], ["/usr/local/cuda/bin/ncu", "--csv", "--print-units", "base", "--log-file",
                                    "/tmp/x/ncu.csv", "--profile-from-start", "off", "--launch-count", "2"])
        self.assertEqual(cmd[10:], ["--metrics", ",".join(counters.METRICS)])

    def test_ncu_beside_the_toolkits_sanitizer_then_on_path(self):
        with tempfile.TemporaryDirectory() as d:
            bin_dir = Path(d) / "bin"
            bin_dir.mkdir()
            for name in ("compute-sanitizer", "ncu"):
                (bin_dir / name).write_text("#!/bin/sh\n")
                (bin_dir / name).chmod(0o755)
            index = {"compute_sanitizer": str(bin_dir / "compute-sanitizer")}
            self.assertEqual(counters.find_ncu(index), (str(bin_dir / "ncu"), ""))
            with mock.patch.object(counters.shutil, "which", return_value=None):
                (bin_dir / "ncu").unlink()
                found, why = counters.find_ncu(index)
            self.assertIsNone(found)
            self.assertIn("no Nsight Compute (ncu)", why)


class ProfileTest(unittest.TestCase):
    """counters.profile with a stand-in for runner.run_phase that plays ncu: it writes the log."""

    def profile(self, log_text, returncode=0, timed_out=False, output=""):
        calls = []

        def run_phase(program, spec, **kwargs):
            calls.append((program, spec, kwargs))
            wrapper = kwargs["wrapper"]
            if log_text is not None:
                Path(wrapper[wrapper.index("--log-file") + 1]).write_text(log_text)
            return SimpleNamespace(timed_out=timed_out, elapsed_s=3.5, returncode=returncode, output_tail=output)

        lines, elapsed = counters.profile(run_phase, "grade_01__alice", "[task_1][perf]", ncu="ncu", seed=7,
                                          timeout_s=60, env={"A": "1"}, least_bytes=3 * 4 * (1 << 24))
        return lines, elapsed, calls

    def test_the_timed_test_under_ncu_in_the_profiling_environment(self):
        log = "\n".join(["==PROF== Connected", HEADER_2025] + rows_2025(0, "vector_add(const float *, int)", UNCOALESCED)
                        + rows_2025(1, "vector_add(const float *, int)", UNCOALESCED))
        lines, elapsed, [(program, spec, kwargs)] = self.profile(log)
        self.assertEqual((program, spec, kwargs["seed"], elapsed), ("grade_01__alice", "[task_1][perf]", 7, 3.5))
        self.assertEqual(kwargs["env"], {"A": "1", "WORKBOOK_PROFILE": "1"})
        self.assertEqual(kwargs["wrapper"][0], "ncu")
        self.assertIn("the grader names no cause from them yet", lines[0])
        self.assertEqual(lines[1], "  vector_add <<<(65536, 1, 1), (256, 1, 1)>>>:")  # each kernel once
        self.assertEqual(sum(line.startswith("  vector_add") for line in lines), 1)
        self.assertIn("    - global loads: 32.0 sectors", "\n".join(lines))

    def test_each_way_to_get_no_counters_is_one_line(self):
        self.assertEqual(self.profile(None, timed_out=True)[0], ["No counters: profiling did not end within 60 s."])
        self.assertIn("restricted to administrators",
                      self.profile("==ERROR== ERR_NVGPUCTRPERM - no permission\n", returncode=1)[0][0])
        self.assertEqual(self.profile(None, returncode=0)[0], ["No counters: ncu profiled no kernel of the timed call."])
        self.assertEqual(self.profile('"ID","Kernel Name"\n', returncode=0)[0],
                         ["No counters: ncu's CSV has no column Metric Name, Metric Value."])


if __name__ == "__main__":
    unittest.main()
