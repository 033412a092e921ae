"""grader/driver/counters.py: ncu's CSV read as its versions print it, why it gave no counters, the
counters described beside their ideals, and the causes they prove. Host-only: the CSV is written as
ncu writes it, or is what ncu wrote on an H100 (data/ncu/, tools/gpu_check.sh ncu)."""
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
    counters.GLOBAL_LOAD_EFFICIENCY: '"12.5"', counters.GLOBAL_STORE_EFFICIENCY: '"100"',
    counters.SHARED_LOAD_WAVEFRONTS: '"0"', counters.SHARED_LOAD_INSTRUCTIONS: '"0"',
    counters.SHARED_STORE_WAVEFRONTS: '"32,768"', counters.SHARED_STORE_INSTRUCTIONS: '"1,024"',
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
        self.assertIn("shared stores: 32.0 wavefronts per warp instruction (1 for 4-byte accesses without bank conflicts", text)
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


MEASURED = Path(__file__).resolve().parent / "data" / "ncu"
# What each task's profiled call must move (its timed test's profiled_bytes) at the graded sizes.
LEAST_BYTES = {"01": 12 * 2**28, "02": 12 * 2**28, "03": 3 * 4 * 4096**2, "04": 4 * 2**26}
BANDWIDTH_BOUND = {"01": True, "02": True, "03": False, "04": True}


def measured(name):
    """The kernels of one timed call, as ncu profiled them on an H100 (November 2026)."""
    return counters.parse((MEASURED / f"{name}.csv").read_text())


def hints_for(name):
    lesson = name[:2]
    return sorted({d.hint_id for d in counters.diagnose(measured(name), LEAST_BYTES[lesson], BANDWIDTH_BOUND[lesson])})


class DiagnoseTest(unittest.TestCase):
    """Each cause fires on the variant that has it, and on nothing else that was measured: the
    references, the plain student and the other slow variants."""

    EXPECTED = {
        "01_vector_add__solutions": [],
        "01_vector_add__broken_vector_add_uncoalesced": ["uncoalesced-access"],
        "02_multiply_add__solutions": [],
        "03_matmul__solutions_challenge": [],
        "03_matmul__broken_tiled_without_tiles": [],  # slow for want of reuse: no counter here proves it
        "03_matmul__broken_tiled_bank_conflicts": ["bank-conflicts"],
        "04_reduction__solutions": [],
        "04_reduction__students_plain": [],
        "04_reduction__broken_sum_few_blocks": ["too-few-blocks"],
        "04_reduction__broken_sum_via_doubles": ["excess-dram"],
        # One thread per warp reads in[i] in turn: 12.5% of one sector per request, like a broadcast; the
        # cause is the idle lanes, and only that is claimed.
        "04_reduction__broken_sum_one_thread_per_block": ["idle-lanes"],
    }

    def test_every_measured_call_gets_exactly_its_causes(self):
        on_disk = sorted(p.stem for p in MEASURED.glob("*.csv"))
        self.assertEqual(on_disk, sorted(self.EXPECTED), "data/ncu/ and this table name the same calls")
        for name, want in self.EXPECTED.items():
            with self.subTest(name):
                self.assertEqual(hints_for(name), want)

    def test_the_hint_shows_the_counter_beside_its_ideal(self):
        [line] = counters.report(measured("04_reduction__broken_sum_few_blocks"), LEAST_BYTES["04"], True)[:1]
        self.assertIn("Hint [too-few-blocks]: sum_kernel ran 8 blocks on a GPU of 132 SMs: 124 SMs had no block", line)
        [line] = counters.report(measured("03_matmul__broken_tiled_bank_conflicts"), LEAST_BYTES["03"])[:1]
        self.assertIn("shared-memory loads take 17.0 wavefronts per warp instruction (1 without bank conflicts", line)
        [line] = counters.report(measured("04_reduction__broken_sum_via_doubles"), LEAST_BYTES["04"], True)[:1]
        self.assertIn("1360 MB of DRAM, 5.1 x the 268 MB the task must move", line)

    def test_more_dram_is_a_cause_only_where_the_task_is_a_bandwidth(self):
        kernels = measured("04_reduction__broken_sum_via_doubles")
        self.assertEqual(counters.diagnose(kernels, LEAST_BYTES["04"], bandwidth_bound=False), [])
        self.assertEqual(counters.diagnose(kernels, None, bandwidth_bound=True), [])

    def test_a_kernel_with_a_small_share_of_the_time_is_not_diagnosed(self):
        # sum_via_doubles ends with a one-thread kernel (narrow<<<1, 1>>>): 1 thread per instruction and
        # 1 block, 0.5% of the call's time. Alone, it would prove both; beside the others it proves nothing.
        kernels = measured("04_reduction__broken_sum_via_doubles")
        narrow = [k for k in kernels if counters.short_name(k.name) == "narrow"]
        self.assertEqual(sorted(d.hint_id for d in counters.diagnose(narrow)), ["idle-lanes", "too-few-blocks"])
        self.assertNotIn("narrow", [d.kernel for d in counters.diagnose(kernels)])

    def test_no_traffic_is_no_evidence_and_a_block_smaller_than_a_warp_is_named(self):
        # A kernel with no global loads or stores (ncu prints a use of 0% then) proves nothing of them.
        [kernel] = counters.parse("\n".join([HEADER_2025] + rows_2025(0, "k", {
            counters.GLOBAL_LOAD_SECTORS: '"0"', counters.GLOBAL_LOAD_REQUESTS: '"0"', counters.GLOBAL_LOAD_EFFICIENCY: '"0"',
            counters.GLOBAL_STORE_SECTORS: '"0"', counters.GLOBAL_STORE_REQUESTS: '"0"',
            counters.GLOBAL_STORE_EFFICIENCY: '"0"', counters.THREADS_PER_INSTRUCTION: '"8"',
            counters.BLOCK_SIZE: '"8"'})))
        [diagnosis] = counters.diagnose([kernel])
        self.assertEqual(diagnosis.hint_id, "idle-lanes")
        self.assertIn("(its blocks have 8 threads: a warp holds 32)", diagnosis.line)

    def test_a_report_without_a_proven_cause_says_so_and_has_no_hint(self):
        lines = counters.report(measured("03_matmul__broken_tiled_without_tiles"), LEAST_BYTES["03"])
        self.assertNotIn("Hint [", "\n".join(lines))
        self.assertIn("none of them proves a cause of its own, so no hint", lines[0])

    def test_a_task_that_passed_shows_its_counters_and_no_cause(self):
        # "counters": "always" (lesson 06's transposes): the counters of a call that reached its
        # threshold are shown, and the causes, which explain a shortfall, are not looked for.
        lines = counters.report(measured("01_vector_add__broken_vector_add_uncoalesced"), LEAST_BYTES["01"], True,
                                causes=False)
        self.assertNotIn("Hint [", "\n".join(lines))
        self.assertEqual(lines[0], "Counters of the timed call (Nsight Compute), each beside its ideal:")
        self.assertIn("32.0 sectors of 32 bytes per warp request", "\n".join(lines))

    def test_the_kernel_as_the_lesson_gives_it_is_shown_first_and_never_diagnosed(self):
        # Lesson 06's task 5 profiles field_strength_as_given (the lesson's slow kernel) before the
        # student's: its 32 sectors per request are the "before", not a cause in the student's call.
        slow = measured("01_vector_add__broken_vector_add_uncoalesced")
        fast = measured("01_vector_add__solutions")
        given = [k._replace(name="<unnamed>::field_strength_as_given(const float *, float *, int, int, float)")
                 for k in slow[:1]]
        self.assertEqual(counters.diagnose(given + fast, LEAST_BYTES["01"], True), [])
        lines = counters.report(fast + given, LEAST_BYTES["01"], True)
        kernels = [line for line in lines if line.startswith("  ") and not line.startswith("    ")]
        self.assertIn("field_strength_as_given", kernels[0])
        self.assertIn("(before: the kernel as the lesson gives it)", kernels[0])
        self.assertTrue(kernels[1].endswith("(yours):"), kernels[1])
        # The student's own slow kernel is still diagnosed beside it.
        self.assertEqual([d.hint_id for d in counters.diagnose(given + slow, LEAST_BYTES["01"], True)],
                         ["uncoalesced-access"])

    def test_each_threshold_sits_between_what_was_measured(self):
        # Each threshold strictly between the figures of every call that must not fire it and those of
        # the variant that must, as the CSVs have them (not as a comment remembers them).
        def figures(names, value):
            return [v for name in names for k in counters._timed_kernels(measured(name)) for v in [value(k)]
                    if v is not None]

        def sector_use(k):  # the loads' or stores' use, where they carry the kernel's traffic
            uses = [used for _, used in counters.wide_access_use(k).values()]
            return min(uses) if uses else None

        def spread(k):  # sectors per request of the accesses that use little of them
            spreads = [per_request for per_request, used in counters.wide_access_use(k).values()
                       if used < counters.LEAST_SECTOR_USE_PCT]
            return max(spreads) if spreads else None

        def wavefronts(k):
            passes = counters.shared_passes(k).values()
            return max(passes) if passes else None

        fine = [n for n, want in self.EXPECTED.items() if not want]
        self.assertGreater(min(figures(fine, sector_use)), counters.LEAST_SECTOR_USE_PCT)
        self.assertLess(max(figures(["01_vector_add__broken_vector_add_uncoalesced"], sector_use)),
                        counters.LEAST_SECTOR_USE_PCT)
        self.assertLess(max(figures(fine, wavefronts)), counters.MOST_WAVEFRONTS)
        self.assertGreater(min(figures(["03_matmul__broken_tiled_bank_conflicts"], wavefronts)), counters.MOST_WAVEFRONTS)
        # A warp that uses little of few sectors (one active thread per warp, sum_one_thread_per_block)
        # is not uncoalesced; vector_add_uncoalesced spreads each request over many.
        self.assertLess(max(figures(["04_reduction__broken_sum_one_thread_per_block"], spread)),
                        counters.MANY_SECTORS_PER_REQUEST)
        self.assertGreaterEqual(min(figures(["01_vector_add__broken_vector_add_uncoalesced"], spread)),
                                counters.MANY_SECTORS_PER_REQUEST)
        threads = lambda k: k.value(counters.THREADS_PER_INSTRUCTION)  # noqa: E731
        self.assertGreater(min(figures(fine, threads)), counters.FEWEST_THREADS)
        self.assertLess(max(figures(["04_reduction__broken_sum_one_thread_per_block"], threads)), counters.FEWEST_THREADS)
        def dram(name):  # the call's DRAM bytes over what its task must move
            kernels = measured(name)
            moved = sum(k.value(counters.DRAM_READ_BYTES) + k.value(counters.DRAM_WRITE_BYTES) for k in kernels)
            return moved / LEAST_BYTES[name[:2]]

        bandwidth_fine = [n for n in fine if BANDWIDTH_BOUND[n[:2]]]
        self.assertLess(max(map(dram, bandwidth_fine)), counters.MOST_DRAM)
        self.assertGreater(dram("04_reduction__broken_sum_via_doubles"), counters.MOST_DRAM)


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
        # The written counters prove loads 32 sectors per request wide, 12.5% used, and a 32-way bank
        # conflict (32 wavefronts per shared store); the stores, 4 sectors per request, are fine.
        self.assertTrue(lines[0].startswith("Hint [uncoalesced-access]: vector_add's global loads touch 32.0 sectors of "
                                            "32 bytes per warp request and use 12.5% of their bytes"), lines[0])
        self.assertTrue(lines[1].startswith("Hint [bank-conflicts]: vector_add's shared-memory stores take 32.0"))
        self.assertEqual(lines[2], "Counters of the timed call (Nsight Compute), each beside its ideal:")
        self.assertEqual(lines[3], "  vector_add <<<(65536, 1, 1), (256, 1, 1)>>>:")  # each kernel once
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
