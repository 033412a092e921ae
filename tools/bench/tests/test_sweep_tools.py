"""Host-only tests of the sweep tooling: the CSV schema and reader, the sweep program's
command line, and ./sweep's handling of a sweep program's output (with stand-in programs),
including one that crashes or hangs in one function: the others are still swept; lesson 05's
pipeline rows, its timeline (the '# timeline' lines gathered into <lesson>_timeline.csv and
their reader) and the calibration passed from one run to the next ('# pass'); lesson 07's rows,
whose header has the column inside after date, what they mean (pi's error and points per
second), and its sweep program's own options."""
import contextlib
import io
import math
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parents[1]
sys.path[:0] = [str(BENCH), str(ROOT / "grader")]

import overlap  # noqa: E402
import sweep_cli  # noqa: E402
import sweep_schema  # noqa: E402
from sweep_schema import (COLUMNS, TIMELINE_COLUMNS, CsvError, columns_for, is_timeline, left_out,  # noqa: E402
                          read_sweep, read_timeline)

SAMPLE = BENCH / "samples" / "02_multiply_add_h100.csv"
MATMUL_SAMPLE = BENCH / "samples" / "03_matmul_h100.csv"
REDUCTION_SAMPLE = BENCH / "samples" / "04_reduction_h100.csv"
# The sweep program built by CMake (ctest passes it); the tests that run it skip without it.
SWEEP_PROGRAM = os.environ.get("WORKBOOK_SWEEP_PROGRAM")
# A python3 with matplotlib for ./plot (ctest passes it when there is one).
PLOT_PYTHON = os.environ.get("WORKBOOK_PLOT_PYTHON")
# Lesson 05's sweep program (ctest passes it): its own options, and it starts without a GPU.
STREAMS_PROGRAM = os.environ.get("WORKBOOK_STREAMS_SWEEP_PROGRAM")
STREAMS_SOURCE = BENCH / "05_streams.cu"
GPU = "NVIDIA H100 80GB HBM3"
STREAMS_COLUMNS = columns_for("streams")  # lesson 05's header: streams and chunks where the others have block, grid
# Lesson 07's sweep program (ctest passes it): its header, its own options, and it starts without a GPU.
MONTE_CARLO_PROGRAM = os.environ.get("WORKBOOK_MONTE_CARLO_SWEEP_PROGRAM")
MONTE_CARLO_COLUMNS = columns_for("monte_carlo")  # seed and bins for block and grid, inside after date
HISTOGRAM_N = 1 << 26
# The environment of a sweep program that must find no GPU, on any machine.
NO_GPU = dict(os.environ, CUDA_VISIBLE_DEVICES="-1")


def streams_rows(implementations=("student", "reference"), stages=True, n=1 << 20):
    """A small lesson 05 sweep as CSV lines (no header): the stages alone (H2D 2, kernel 2.1,
    D2H 2.2 ms) when `stages`, and for each implementation process at 1 and 4 streams x 1, 4
    and 16 chunks, 4 streams x 16 chunks the fastest (2.75 ms for the student, 2.5 for the
    reference)."""
    def row(implementation, operation, block, mode, grid, ms):
        return (f"05_streams,{implementation},{operation},{n},{block},{mode},{grid},20,{ms},{ms * 0.98},{ms * 1.05},"
                f"{8 * n},{2e3 * n},{8 * n / ms / 1e6},1,1,3000,{GPU},2026-11-22T00:00:00Z")
    lines = []
    if stages:
        lines += [row("cudaMemcpy", "h2d_pinned", "", "", "", 2.0), row("baseline", "transform", "", "own", "", 2.1),
                  row("cudaMemcpy", "d2h_pinned", "", "", "", 2.2)]
    for name in implementations:
        for streams in (1, 4):
            for chunks in (1, 4, 16):
                ms = 6.5 if streams == 1 or chunks == 1 else {4: 3.5, 16: 2.5}[chunks]
                lines.append(row(name, "process", streams, "pipeline", chunks,
                                 ms * (1.1 if name == "student" and ms < 3 else 1.0)))
    return lines


def timeline_rows(implementation, chunks=4):
    """A timeline of one call of process with 2 streams: `chunks` chunks, each copied in, transformed
    and copied out in 1 ms steps, one step behind the chunk before; the call returns at the end."""
    common = f"05_streams,{implementation},process,1000,2,{chunks},8,"
    rows = [common + f"call,process,,0,{chunks + 2.1},0,{GPU},2026-11-22T00:00:00Z"]
    for c in range(chunks):
        for step, (kind, name) in enumerate((("h2d", "cudaMemcpyAsync"), ("kernel", "transform_kernel"),
                                              ("d2h", "cudaMemcpyAsync"))):
            copied = 0 if kind == "kernel" else 4000
            rows.append(common + f"{kind},{name},{c % 2 + 1},{c + step},{c + step + 1},{copied},{GPU},"
                        "2026-11-22T00:00:00Z")
    return rows


def monte_carlo_rows(implementations=("student", "reference"), baselines=True, histograms=True, seeds=4,
                     sizes=(100, 10 ** 4, 10 ** 6, 10 ** 8, 10 ** 9)):
    """A SYNTHETIC lesson 07 sweep as CSV lines (no header), made up here, not measured: for each
    implementation, count_inside_circle at `sizes` x `seeds` seeds, its count a binomial draw
    (normal approximation, a fixed random.Random) and its time 5 us + N / rate (student 2e10
    points/s, reference 4e10); with `baselines`, the host API (1e10 points/s after 10 us) and the
    CPU (one thread 2.5e8 points/s up to 1e8, all threads 4e9 after 100 us); with `histograms`,
    histogram and global_atomics_histogram at 2^26 values for 1, 16, 256 and 4096 bins (global
    atomics 0.2 + 40 / bins ms, the student's 0.2 + 2 / bins, the reference's 0.15 + 1 / bins)."""
    draw = random.Random(7)
    p = math.pi / 4

    def row(implementation, operation, n, seed, bins, ms, inside, nbytes=0):
        gbps = nbytes / (ms * 1e6)
        return (f"07_monte_carlo,{implementation},{operation},{n},{seed},own,{bins},20,{ms:.6g},{ms * 0.98:.6g},"
                f"{ms * 1.05:.6g},{nbytes},0,{gbps:.6g},0,{gbps / 30:.6g},3000,{GPU},2026-11-22T00:00:00Z,{inside}")

    def count(n):
        return min(n, max(0, round(n * p + draw.gauss(0, 1) * math.sqrt(n * p * (1 - p)))))
    lines = []
    for n in sizes:
        for name, rate in (("student", 2e10), ("reference", 4e10)):
            if name in implementations:
                lines += [row(name, "count_inside_circle", n, s, "", 0.005 + n / rate * 1e3, count(n))
                          for s in range(1, seeds + 1)]
        if baselines:
            lines.append(row("baseline", "host_api_pi", n, "", "", 0.01 + n / 1e10 * 1e3, count(n), 16 * n))
            if n <= 10 ** 8:
                lines.append(row("CPU", "cpu_one_thread", n, 1, "", n / 2.5e8 * 1e3, count(n)))
            lines.append(row("CPU", "cpu_all_threads", n, 1, "", 0.1 + n / 4e9 * 1e3, count(n)))
    if histograms:
        for bins in (1, 16, 256, 4096):
            for name, ms in (("student", 0.2 + 2 / bins), ("reference", 0.15 + 1 / bins)):
                if name in implementations:
                    lines.append(row(name, "histogram", HISTOGRAM_N, "", bins, ms, "", 4 * HISTOGRAM_N))
            if baselines:
                lines.append(row("baseline", "global_atomics_histogram", HISTOGRAM_N, "", bins, 0.2 + 40 / bins, "",
                                 4 * HISTOGRAM_N))
    return lines


def sample_lines():
    return SAMPLE.read_text().splitlines()


class CsvFile:
    """A temporary CSV with the given lines."""

    def __init__(self, lines):
        self.dir = tempfile.TemporaryDirectory()
        self.path = Path(self.dir.name) / "sweep.csv"
        self.path.write_text("\n".join(lines) + "\n")

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        self.dir.cleanup()


class SchemaTest(unittest.TestCase):
    def test_sample_reads_with_typed_values(self):
        rows = read_sweep(SAMPLE)
        self.assertGreater(len(rows), 100)
        kernel = next(r for r in rows if r["operation"] == "multiply_add")
        self.assertIsInstance(kernel["n"], int)
        self.assertIsInstance(kernel["block"], int)
        self.assertEqual(kernel["bytes"], 12.0 * kernel["n"])
        self.assertAlmostEqual(kernel["gbps"], kernel["bytes"] / kernel["median_ms"] / 1e6, delta=kernel["gbps"] * 1e-4)
        transfer = next(r for r in rows if r["operation"] == "h2d_pinned")
        self.assertIsNone(transfer["block"])
        self.assertEqual({r["implementation"] for r in rows}, {"student", "reference", "cudaMemcpy"})

    def test_sample_covers_what_the_figures_need(self):
        rows = read_sweep(SAMPLE)
        self.assertEqual({r["operation"] for r in rows},
                         {"multiply_add", "h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned"})
        self.assertEqual({r["grid_mode"] for r in rows if r["block"]}, {"cover", "wave"})
        self.assertEqual(len({r["n"] for r in rows}), 9)

    def test_sweep_program_writes_the_schema_header(self):
        if not SWEEP_PROGRAM:
            self.skipTest("WORKBOOK_SWEEP_PROGRAM not set (ctest sets it)")
        out = subprocess.run([SWEEP_PROGRAM, "--print-header"], stdout=subprocess.PIPE, text=True, check=True).stdout
        self.assertEqual(out.strip().split(","), COLUMNS)

    def test_sweep_program_rejects_bad_arguments(self):
        if not SWEEP_PROGRAM:
            self.skipTest("WORKBOOK_SWEEP_PROGRAM not set (ctest sets it)")
        for args, message in ((["--sizes", "1e4,abc"], "not 'abc'"), (["--grids", "diagonal"], "unknown grid mode"),
                              (["--blocks", "0"], "whole numbers from 1"), (["--frobnicate"], "unknown argument"),
                              (["--skip"], "--skip needs a value")):
            p = subprocess.run([SWEEP_PROGRAM] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr)

    def test_sweep_program_takes_skip_and_explains_it(self):
        if not SWEEP_PROGRAM:
            self.skipTest("WORKBOOK_SWEEP_PROGRAM not set (ctest sets it)")
        p = subprocess.run([SWEEP_PROGRAM, "--skip", "multiply_add,h2d_pinned", "--skip", "d2h_pinned",
                            "--print-header"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip().split(","), COLUMNS)
        usage = subprocess.run([SWEEP_PROGRAM, "--help"], stdout=subprocess.PIPE, text=True).stdout
        self.assertIn("--skip OP", usage)
        self.assertIn("# measuring OP", usage)

    def reject(self, lines, *fragments):
        with CsvFile(lines) as path:
            with self.assertRaises(CsvError) as caught:
                read_sweep(path)
        for fragment in fragments:
            self.assertIn(fragment, str(caught.exception))

    def test_own_launch_rows_may_leave_block_and_grid_empty(self):
        rows = read_sweep(MATMUL_SAMPLE)
        cublas = next(r for r in rows if r["operation"] == "cublas_fp32")
        self.assertEqual((cublas["block"], cublas["grid"], cublas["grid_mode"]), (None, None, "own"))
        tiled = next(r for r in rows if r["operation"] == "matmul_tiled")
        self.assertEqual(tiled["block"], 1024)
        lines = MATMUL_SAMPLE.read_text().splitlines()
        naive = next(l for l in lines if ",matmul_naive," in l).split(",")
        naive[COLUMNS.index("block")] = ""
        self.reject([lines[0], ",".join(naive)], "line 2", "column block")

    def test_rejects_a_wrong_header(self):
        lines = sample_lines()
        self.reject([lines[0].replace("median_ms", "time")] + lines[1:], "line 1", "missing median_ms",
                    "unexpected time")

    def test_rejects_a_value_that_is_not_a_number(self):
        lines = sample_lines()
        fields = lines[3].split(",")
        fields[COLUMNS.index("median_ms")] = "fast"
        self.reject(lines[:3] + [",".join(fields)], "line 4", "median_ms", "'fast'")

    def test_rejects_a_short_row(self):
        lines = sample_lines()
        self.reject(lines[:2] + [lines[2].rsplit(",", 2)[0]], "line 3", "17 fields, expected 19")

    def test_rejects_inconsistent_times(self):
        lines = sample_lines()
        fields = lines[1].split(",")
        fields[COLUMNS.index("min_ms")] = "9"
        self.reject([lines[0], ",".join(fields)], "line 2", "min_ms <= median_ms")

    def test_rejects_an_empty_file_and_a_missing_one(self):
        self.reject([""], "empty")
        with self.assertRaises(CsvError) as caught:
            read_sweep(Path("/nonexistent/sweep.csv"))
        self.assertIn("no such file", str(caught.exception))

    def test_rejects_rows_from_two_gpus(self):
        lines = sample_lines()
        other = lines[2].replace("NVIDIA H100 80GB HBM3", "NVIDIA H200")
        self.reject(lines[:2] + [other], "several GPUs")

    def test_rejects_a_file_without_kernel_rows(self):
        lines = sample_lines()
        self.reject([lines[0]] + [l for l in lines[1:] if ",cudaMemcpy," in l], "no kernel measurements")

    def test_notes_are_not_rows_and_left_out_reads_them(self):
        lines = sample_lines()
        note = "# left out: student multiply_add: crashed (SIGSEGV) while measuring n=1000000 block=256 grid=cover"
        with CsvFile(lines + [note, "# another note"]) as path:
            self.assertEqual(len(read_sweep(path)), len(lines) - 1)
            self.assertEqual(left_out(path), [{"implementation": "student", "operation": "multiply_add",
                                               "why": "crashed (SIGSEGV) while measuring n=1000000 block=256 "
                                                      "grid=cover"}])
        with CsvFile(["# a note first", lines[0], lines[1].rsplit(",", 2)[0]]) as path:
            with self.assertRaises(CsvError) as caught:
                read_sweep(path)
            self.assertIn("line 3", str(caught.exception))  # counted as in the file, notes included
            self.assertEqual(left_out(path), [])


class StreamsSchemaTest(unittest.TestCase):
    """Lesson 05's rows in the sweep CSV, and its timeline CSV."""

    def test_pipeline_rows_name_their_streams_and_chunks(self):
        self.assertEqual(STREAMS_COLUMNS[4:7], ["streams", "grid_mode", "chunks"])
        with CsvFile([",".join(STREAMS_COLUMNS)] + streams_rows()) as path:
            rows = read_sweep(path)
        process = [r for r in rows if r["operation"] == "process"]
        self.assertEqual({(r["streams"], r["chunks"]) for r in process},
                         {(s, c) for s in (1, 4) for c in (1, 4, 16)})
        self.assertNotIn("block", process[0])
        self.assertEqual({r["grid_mode"] for r in process}, {"pipeline"})
        transform = next(r for r in rows if r["operation"] == "transform")
        self.assertEqual((transform["implementation"], transform["streams"], transform["chunks"]),
                         ("baseline", None, None))

    def test_a_pipeline_row_without_chunks_is_rejected(self):
        lines = streams_rows()
        fields = lines[-1].split(",")
        fields[STREAMS_COLUMNS.index("chunks")] = ""
        with CsvFile([",".join(STREAMS_COLUMNS)] + lines[:-1] + [",".join(fields)]) as path:
            with self.assertRaises(CsvError) as caught:
                read_sweep(path)
        self.assertIn(f"line {len(lines) + 1}", str(caught.exception))
        self.assertIn("column chunks", str(caught.exception))

    def test_pipelines_under_a_block_and_grid_header_are_from_an_older_sweep(self):
        with CsvFile([",".join(COLUMNS)] + streams_rows()) as path:
            with self.assertRaises(CsvError) as caught:
                read_sweep(path)
        self.assertIn("an older ./sweep 05 wrote it; run ./sweep 05 again", str(caught.exception))

    def test_a_header_that_mixes_the_axis_names_is_rejected(self):
        mixed = [c if c != "grid" else "chunks" for c in COLUMNS]  # block with chunks: no lesson's header
        with CsvFile([",".join(mixed)] + streams_rows()) as path:
            with self.assertRaises(CsvError) as caught:
                read_sweep(path)
        self.assertIn("is not the sweep header", str(caught.exception))

    def test_the_bound_the_sequential_time_and_the_best_pipelines(self):
        with CsvFile([",".join(STREAMS_COLUMNS)] + streams_rows()) as path:
            rows = read_sweep(path)
        n = overlap.pipeline_n(rows)
        stages = overlap.stage_ms(rows, n)
        self.assertEqual(overlap.bound_ms(stages), 2.2)
        self.assertAlmostEqual(overlap.sequential_ms(stages), 6.3)
        self.assertEqual(overlap.configuration(overlap.best(rows, "reference", n)), "4 streams, 16 chunks")
        self.assertEqual(overlap.describe_best(overlap.best(rows, "reference", n), 2.2),
                         "4 streams, 16 chunks: 2.5 ms, 88% of the bound")
        self.assertIsNone(overlap.bound_ms({"h2d_pinned": 1.0, "transform": 2.0}))  # D2H not timed: no bound
        self.assertEqual(overlap.union_ms([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]), 4)

    def test_a_timeline_reads_with_typed_values(self):
        lines = [",".join(TIMELINE_COLUMNS)] + timeline_rows("student") + timeline_rows("reference")
        with CsvFile(lines) as path:
            self.assertTrue(is_timeline(path))
            rows = read_timeline(path)
        self.assertEqual(len(rows), 2 * (1 + 3 * 4))
        call = rows[0]
        self.assertEqual((call["kind"], call["stream"], call["start_ms"], call["end_ms"]), ("call", None, 0.0, 6.1))
        self.assertEqual({r["stream"] for r in rows if r["kind"] != "call"}, {1, 2})
        self.assertFalse(is_timeline(SAMPLE))

    def reject_timeline(self, lines, *fragments):
        with CsvFile(lines) as path:
            with self.assertRaises(CsvError) as caught:
                read_timeline(path)
        for fragment in fragments:
            self.assertIn(fragment, str(caught.exception))

    def test_a_malformed_timeline_is_rejected_with_the_line(self):
        header = ",".join(TIMELINE_COLUMNS)
        good = timeline_rows("student")
        self.reject_timeline([header.replace("start_ms", "begin")] + good, "line 1", "missing start_ms",
                             "not the timeline header")
        self.reject_timeline([header, good[0], good[1].replace(",h2d,", ",upload,")], "line 3", "kind 'upload'")
        backwards = good[1].split(",")
        backwards[TIMELINE_COLUMNS.index("end_ms")] = "-1"
        self.reject_timeline([header, good[0], ",".join(backwards)], "line 3", "before it starts")
        no_stream = good[2].split(",")
        no_stream[TIMELINE_COLUMNS.index("stream")] = ""
        self.reject_timeline([header, good[0], ",".join(no_stream)], "line 3", "column stream")
        self.reject_timeline([header] + good[1:], "0 rows of kind 'call'")
        self.reject_timeline([header] + good + [good[1].replace(GPU, "NVIDIA H200")], "several GPUs")
        self.reject_timeline([header, good[0], good[1].rsplit(",", 3)[0]], "line 3", "12 fields, expected 15")
        with CsvFile([header] + good) as path:  # a timeline is not a sweep CSV, and says so
            with self.assertRaises(CsvError) as caught:
                read_sweep(path)
            self.assertIn("this is a timeline", str(caught.exception))

    def test_the_sweep_program_prints_the_timeline_columns(self):
        """05_streams.cu writes the timeline's header itself: it must be TIMELINE_COLUMNS."""
        source = STREAMS_SOURCE.read_text()
        header = source.split("kTimelineHeader =\n", 1)[1].split(";", 1)[0].strip().strip('"')
        self.assertEqual(header.split(","), TIMELINE_COLUMNS)

    def test_the_streams_program_has_its_own_options_and_starts_without_a_gpu(self):
        if not STREAMS_PROGRAM:
            self.skipTest("WORKBOOK_STREAMS_SWEEP_PROGRAM not set (ctest sets it)")
        out = subprocess.run([STREAMS_PROGRAM, "--print-header", "--chunks", "4,16", "--work", "12"],
                             stdout=subprocess.PIPE, text=True, check=True).stdout
        self.assertEqual(out.strip().split(","), STREAMS_COLUMNS)  # the axes by their names, as sweep_schema has them
        usage = subprocess.run([STREAMS_PROGRAM, "--help"], stdout=subprocess.PIPE, text=True).stdout
        for text in ("--chunks", "--work W", "--streams    number of streams (default 1, 2, 3, 4, 8)", "# timeline",
                     "--skip OP", "[--streams B,B,...]", "every size x number of streams x grid mode"):
            self.assertIn(text, usage)
        self.assertNotIn("--blocks", usage)  # lesson 05 has no block size to sweep
        out = subprocess.run([STREAMS_PROGRAM, "--print-header", "--streams", "1,4"], stdout=subprocess.PIPE,
                             text=True, check=True).stdout
        self.assertEqual(out.strip().split(","), STREAMS_COLUMNS)
        for args, message in ((["--chunks", "0"], "--chunks wants whole numbers"), (["--work"], "--work needs a value"),
                              (["--chunks", "4,x"], "not 'x'"), (["--streams", "0"], "--streams wants whole numbers"),
                              (["--blocks", "1,4"], "lesson 05 sweeps streams and chunks, not block sizes: --streams")):
            p = subprocess.run([STREAMS_PROGRAM] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr)
        # CUPTI is linked in (the tracer), yet without a GPU it starts and says why it cannot run.
        # Every GPU hidden, here as on a machine without one: on a GPU machine the program would
        # otherwise sweep for real, outside the per-GPU lock, beside the gradings' timed phases.
        p = subprocess.run([STREAMS_PROGRAM, "--sizes", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=NO_GPU)
        self.assertEqual(p.returncode, 77, p.stderr)
        self.assertIn("needs a GPU", p.stderr)


class MonteCarloSchemaTest(unittest.TestCase):
    """Lesson 07's rows: its axes are seed and bins, and the count of a pi estimate has a column of its
    own after date, which no other lesson's header has (their files read as before)."""

    def test_the_header_adds_inside_after_date_and_no_other_kind_changes(self):
        self.assertEqual(MONTE_CARLO_COLUMNS, [{"block": "seed", "grid": "bins"}.get(c, c) for c in COLUMNS]
                         + ["inside"])
        for kind in ("bandwidth", "gflops", "reduction", "grid"):
            self.assertEqual(columns_for(kind), COLUMNS)
        self.assertEqual(len(STREAMS_COLUMNS), len(COLUMNS))
        for sample in sorted((BENCH / "samples").glob("*.csv")):  # every file written before still reads
            (read_timeline if is_timeline(sample) else read_sweep)(sample)

    def test_rows_read_with_their_seed_bins_and_count(self):
        with CsvFile([",".join(MONTE_CARLO_COLUMNS)] + monte_carlo_rows()) as path:
            rows = read_sweep(path)
        pi = [r for r in rows if r["operation"] == "count_inside_circle"]
        self.assertEqual({r["seed"] for r in pi}, {1, 2, 3, 4})
        self.assertTrue(all(isinstance(r["inside"], int) and 0 <= r["inside"] <= r["n"] for r in pi))
        histogram = next(r for r in rows if r["operation"] == "histogram")
        self.assertEqual((histogram["seed"], histogram["bins"], histogram["inside"]), (None, 1, None))
        host_api = next(r for r in rows if r["operation"] == "host_api_pi")
        self.assertEqual((host_api["implementation"], host_api["seed"]), ("baseline", None))
        self.assertNotIn("block", histogram)

    def reject(self, column, value, *fragments):
        lines = monte_carlo_rows()
        fields = lines[0].split(",")
        fields[MONTE_CARLO_COLUMNS.index(column)] = value
        with CsvFile([",".join(MONTE_CARLO_COLUMNS), ",".join(fields)] + lines[1:]) as path:
            with self.assertRaises(CsvError) as caught:
                read_sweep(path)
        for fragment in ("line 2",) + fragments:
            self.assertIn(fragment, str(caught.exception))

    def test_a_count_must_be_a_whole_number_no_larger_than_n(self):
        self.reject("inside", "78.5", "column inside", "not a whole number")
        self.reject("inside", "-1", "column inside", "at least 0")
        self.reject("inside", "101", "more than the n = 100 points drawn")

    def test_a_lesson_07_file_without_its_column_inside_is_rejected(self):
        header = MONTE_CARLO_COLUMNS[:-1]
        with CsvFile([",".join(header)] + [l.rsplit(",", 1)[0] for l in monte_carlo_rows()]) as path:
            with self.assertRaises(CsvError) as caught:
                read_sweep(path)
        self.assertIn("missing inside", str(caught.exception))

    def test_the_error_and_the_rate_of_pi(self):
        self.assertAlmostEqual(sweep_schema.pi_standard_error(10 ** 6),
                               4 * math.sqrt(math.pi / 4 * (1 - math.pi / 4) / 10 ** 6))
        self.assertAlmostEqual(sweep_schema.pi_standard_error(1) * 1e3, sweep_schema.pi_standard_error(10 ** 6) * 1e6)
        self.assertAlmostEqual(sweep_schema.rms([3.0, -4.0]), math.sqrt(12.5))
        rows = [{"implementation": "student", "operation": "count_inside_circle", "n": 1000, "inside": inside,
                 "median_ms": ms} for inside, ms in ((785, 0.02), (790, 0.01), (780, 0.04))]
        errors = sweep_schema.pi_errors(rows, "student")
        self.assertEqual(list(errors), [1000])
        self.assertAlmostEqual(errors[1000][1], 3.16 - math.pi)
        self.assertEqual(sweep_schema.pi_errors(rows, "reference"), {})
        # The seeds' median time is 0.02 ms: 1000 points in 2e-5 s.
        self.assertAlmostEqual(sweep_schema.points_per_second(rows, "student", "count_inside_circle")[1000], 5e7)
        self.assertEqual(sweep_schema.median_row(rows[:2])["median_ms"], 0.01)  # the lower middle of two

    def test_summary_of_pi_and_the_histogram(self):
        with CsvFile([",".join(MONTE_CARLO_COLUMNS)] + monte_carlo_rows()) as path:
            lines = sweep_cli.summarize(path, "monte_carlo")
        text = "\n".join(lines)
        self.assertTrue(lines[0].startswith("  student    pi at N = 1e9: 2e+10 points/s (2x the cuRAND host API); "
                                            "RMS error over 4 seeds"), lines[0])
        self.assertIn("(standard error 5.2e-05)", lines[0])
        self.assertTrue(lines[1].startswith("  reference  pi at N = 1e9: 4e+10 points/s (4x the cuRAND host API)"))
        self.assertIn("cuRAND host API    1e+10 points/s at N = 1e9 (host_api_pi)", text)
        self.assertIn("CPU, one thread    2.5e+08 points/s at N = 1e8 (cpu_one_thread)", text)
        self.assertIn("histogram of n = 6.71e7 values into 256 bins: student 0.208 ms, reference 0.154 ms, "
                      "global atomics 0.356 ms", text)

    def test_a_rerun_keeps_one_row_per_seed(self):
        lines = monte_carlo_rows(("student",), baselines=False, histograms=False)
        keys = [sweep_cli.row_key(line, MONTE_CARLO_COLUMNS) for line in lines]
        self.assertEqual(len(set(keys)), len(lines))  # each seed its own measurement
        again = lines[0].replace("2026-11-22T00:00:00Z", "2026-11-22T00:09:00Z")
        self.assertEqual(sweep_cli.row_key(again, MONTE_CARLO_COLUMNS), keys[0])

    def test_the_sweep_program_header_and_options(self):
        if not MONTE_CARLO_PROGRAM:
            self.skipTest("WORKBOOK_MONTE_CARLO_SWEEP_PROGRAM not set (ctest sets it)")
        header = subprocess.run([MONTE_CARLO_PROGRAM, "--seeds", "1,2", "--bins", "4,16", "--print-header"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(header.returncode, 0, header.stderr)
        self.assertEqual(header.stdout.strip().split(","), MONTE_CARLO_COLUMNS)
        usage = subprocess.run([MONTE_CARLO_PROGRAM, "--help"], stdout=subprocess.PIPE, text=True).stdout
        for text in ("--seeds", "--bins", "xoshiro256**", "--skip OP"):
            self.assertIn(text, usage)
        for args, message in ((["--bins", "0"], "--bins wants whole numbers from 1 to 4096"),
                              (["--bins", "5000"], "not '5000'"), (["--blocks", "256"], "no block size to sweep"),
                              (["--seeds", "x"], "not 'x'")):
            p = subprocess.run([MONTE_CARLO_PROGRAM] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr)
        p = subprocess.run([MONTE_CARLO_PROGRAM, "--sizes", "1e3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=NO_GPU)  # every GPU hidden: see the streams program's test
        self.assertEqual(p.returncode, 77, p.stderr)
        self.assertIn("needs a GPU", p.stderr)


class SweepOptionsTest(unittest.TestCase):
    """./sweep passes each lesson the options of its own axes, named for what they are."""

    def options(self, argv, kind, kinds):
        return sweep_cli.sweep_options(sweep_cli.parse_args(argv, ROOT), kind, kinds)

    def test_each_lesson_gets_its_own_axes(self):
        argv = ["02", "05", "--sizes", "1e6", "--blocks", "128,256", "--grids", "wave", "--streams", "1,4",
                "--chunks", "8", "--samples", "5"]
        kinds = ["bandwidth", "streams"]
        self.assertEqual(self.options(argv, "bandwidth", kinds),
                         ["--sizes", "1e6", "--samples", "5", "--blocks", "128,256", "--grids", "wave"])
        self.assertEqual(self.options(argv, "streams", kinds),
                         ["--sizes", "1e6", "--samples", "5", "--streams", "1,4", "--chunks", "8"])
        self.assertEqual(self.options(["03", "--blocks", "128"], "gflops", ["gflops"]), ["--blocks", "128"])

    def test_an_axis_no_lesson_here_has_is_refused_naming_theirs(self):
        with self.assertRaisesRegex(ValueError, r"--blocks is not an axis of the lessons swept here; theirs: "
                                                r"--chunks, --streams \(lesson 05 sweeps streams and chunks"):
            self.options(["05", "--blocks", "1,4"], "streams", ["streams"])
        with self.assertRaisesRegex(ValueError, r"--streams is not an axis of the lessons swept here; theirs: "
                                                r"--blocks, --grids$"):
            self.options(["02", "--streams", "4"], "bandwidth", ["bandwidth"])

    def test_the_refusal_reaches_the_command_line(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), mock.patch.object(sweep_cli.build, "prepare") as prepare:
            code = sweep_cli.main(["05", "--blocks", "1,4", "--no-build"], ROOT)
        self.assertEqual(code, sweep_cli.EXIT_USAGE)
        prepare.assert_not_called()
        self.assertIn("--blocks is not an axis", err.getvalue())


def fake_program(directory, body):
    """A stand-in sweep program: a Python script that prints what `body` prints."""
    path = Path(directory) / "fake_sweep"
    path.write_text(f"#!{sys.executable}\nimport sys\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)


@contextlib.contextmanager
def silence_limit(seconds):
    """./sweep's silence limit (300 s) cut to seconds, so that a hang takes that long."""
    old, sweep_cli.SILENCE_LIMIT_S = sweep_cli.SILENCE_LIMIT_S, seconds
    try:
        yield
    finally:
        sweep_cli.SILENCE_LIMIT_S = old


@contextlib.contextmanager
def quiet():
    """./sweep's messages about what it left out are not the test's output."""
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull), contextlib.redirect_stderr(devnull):
        yield


# A stand-in for lesson 03's sweep program that behaves like it (announces each check and
# measurement, honours --skip and --no-transfers; rows from the sample, the run's number in
# the date column) but fails as told, as the student only (the reference is right): `how` is
# "signal" (SIGSEGV), "cuda" (exit 1 with a CUDA error on stderr) or "hang"; in `op` (one
# function, or "every"); in `phase` "check" or "measure" (at size n). It appends its
# arguments to `log`, one run a line; with ignore_skip it ignores --skip.
FAKE_MATMUL = """
import os, resource, signal, time
args = sys.argv[1:]
implementation = args[args.index("--implementation") + 1]
skip = set() if IGNORE_SKIP else {op for i, a in enumerate(args) if a == "--skip" for op in args[i + 1].split(",")}
with open(LOG, "a") as log:
    log.write(" ".join(args) + "\\n")
run = len(open(LOG).read().splitlines())
lines = open(SAMPLE).read().splitlines()
header, rows = lines[0], [l.split(",") for l in lines[1:]]
ops = [op for op in ("matmul_naive", "matmul_tiled", "matmul_cublas", "matmul_challenge") if op not in skip]
baselines = [] if "--no-transfers" in args else [op for op in ("cublas_fp32", "cublas_tf32") if op not in skip]
sizes = sorted({int(r[3]) for r in rows})

def maybe_fail(op, phase, n=None):
    if OP not in (op, "every") or (phase, n) != (PHASE, N) or implementation != "student":
        return
    if HOW == "signal":
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
        os.kill(os.getpid(), signal.SIGSEGV)
    if HOW == "cuda":
        sys.stderr.write("fake_sweep: matmul_challenge (student) is not timed: cudaErrorIllegalAddress\\n")
        sys.stderr.write(sys.argv[0] + ": 03_matmul.cu:107: cudaDeviceSynchronize() failed: "
                         "cudaErrorIllegalAddress (an illegal memory access was encountered)\\n")
        sys.exit(1)
    time.sleep(60)

for op in ops:
    print("# checking", op, flush=True)
    maybe_fail(op, "check")
print("# planned", len(sizes) * (len(ops) + len(baselines)))
print(header, flush=True)
for n in sizes:
    for op in ops + baselines:
        print(f"# measuring {op} n={n}" + ("" if op in baselines else " block=256 grid=2d"), flush=True)
        maybe_fail(op, "measure", n)
        row = next(r for r in rows if r[2] == op and int(r[3]) == n)
        row = row[:1] + ["cuBLAS" if op in baselines else implementation] + row[2:-1] + [f"2026-11-21T00:00:0{run}Z"]
        print(",".join(row), flush=True)
"""


def fake_matmul(directory, how, op, phase, n=None, ignore_skip=False):
    """FAKE_MATMUL failing as told; returns (program, log of its runs)."""
    log = Path(directory) / "runs.log"
    settings = (f"HOW, OP, PHASE, N, IGNORE_SKIP = {(how, op, phase, n, ignore_skip)!r}\n"
                f"LOG, SAMPLE = {str(log)!r}, {str(MATMUL_SAMPLE)!r}\n")
    return fake_program(directory, settings + FAKE_MATMUL), log


class RunSweepTest(unittest.TestCase):
    def test_collects_rows_and_passes_the_implementation(self):
        rows = sample_lines()[1:4]
        with tempfile.TemporaryDirectory() as d:
            program = fake_program(d, f"""
                assert sys.argv[1:3] == ["--implementation", "student"], sys.argv
                print("# checking multiply_add")
                print("# planned 3")
                print({",".join(COLUMNS)!r})
                for row in {rows!r}:
                    print("# measuring multiply_add n=10000 block=32 grid=cover")
                    print(row)
                """)
            run = sweep_cli.run_sweep(program, "student", [], {})
        self.assertEqual(run.code, 0, run.errors)
        self.assertEqual(run.rows, rows)
        self.assertEqual(run.marker, "# measuring multiply_add n=10000 block=32 grid=cover")
        self.assertFalse(run.hung)

    def test_a_wrong_header_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            program = fake_program(d, """
                print("# planned 1")
                print("n,time")
                """)
            run = sweep_cli.run_sweep(program, "student", [], {})
        self.assertNotEqual(run.code, 0)
        self.assertEqual(run.rows, [])
        self.assertIn("unexpected CSV header", run.errors)

    def test_an_incorrect_kernel_is_reported_with_its_reason(self):
        with tempfile.TemporaryDirectory() as d:
            program = fake_program(d, """
                sys.stderr.write("multiply_add (student) gives wrong results\\n")
                sys.exit(5)
                """)
            run = sweep_cli.run_sweep(program, "student", [], {})
        self.assertEqual(run.code, sweep_cli.EXIT_INCORRECT)
        self.assertIn("wrong results", run.errors)

    def test_pass_and_timeline_lines_are_gathered(self):
        timeline = timeline_rows("student")
        with tempfile.TemporaryDirectory() as d:
            program = fake_program(d, f"""
                print("# checking process")
                print("# pass --work 187")
                print("# planned 1")
                print({",".join(COLUMNS)!r})
                print({streams_rows()[-1]!r})
                print("# measuring process_timeline n=1048576 streams=4 grid=pipeline chunks=16")
                for line in [{",".join(TIMELINE_COLUMNS)!r}] + {timeline!r}:
                    print("# timeline " + line)
                """)
            run = sweep_cli.run_sweep(program, "student", [], {})
        self.assertEqual(run.code, 0, run.errors)
        self.assertEqual(run.rows, [streams_rows()[-1]])
        self.assertEqual(run.passes, ("--work", "187"))
        self.assertEqual(run.timeline, tuple(timeline))

    def test_a_timeline_with_a_wrong_header_is_left_out(self):
        with tempfile.TemporaryDirectory() as d:
            program = fake_program(d, f"""
                print({",".join(COLUMNS)!r})
                print({streams_rows()[-1]!r})
                print("# timeline lesson,start,end")
                print("# timeline 05_streams,0,1")
                """)
            run = sweep_cli.run_sweep(program, "student", [], {})
        self.assertEqual((run.code, run.rows, run.timeline), (0, [streams_rows()[-1]], ()))
        self.assertIn("unexpected timeline header", run.errors)

    def test_process_rows_that_differ_in_chunks_are_different_measurements(self):
        rows = streams_rows(("student",), stages=False)
        self.assertEqual(len({sweep_cli.row_key(r) for r in rows}), len(rows))

    def test_streams_summary_states_the_bound_and_each_best_fraction(self):
        with CsvFile([",".join(STREAMS_COLUMNS)] + streams_rows()) as path:
            lines = sweep_cli.summarize(path, "streams")
        text = "\n".join(lines)
        self.assertIn("overlap bound max(H2D, kernel, D2H) 2.2 ms; sequential H2D + kernel + D2H 6.3 ms", text)
        self.assertIn("H2D 2 ms, kernel 2.1 ms, D2H 2.2 ms", text)
        self.assertIn("student    best: 4 streams, 16 chunks: 2.75 ms, 80% of the bound, 2.29x faster than "
                      "sequential", text)
        self.assertIn("reference  best: 4 streams, 16 chunks: 2.5 ms, 88% of the bound", text)
        with CsvFile([",".join(STREAMS_COLUMNS)] + streams_rows(stages=False)) as path:
            self.assertIn("no overlap bound", "\n".join(sweep_cli.summarize(path, "streams")))

    def test_a_silent_program_is_stopped(self):
        with silence_limit(1), tempfile.TemporaryDirectory() as d:
            program = fake_program(d, """
                import time
                print("# planned 1", flush=True)
                time.sleep(60)
                """)
            run = sweep_cli.run_sweep(program, "student", [], {})
        self.assertTrue(run.hung)
        self.assertIn("no output for 1 s", run.errors)

    def test_matmul_summary_in_gflops_against_cublas(self):
        lines = sweep_cli.summarize(MATMUL_SAMPLE, "gflops")
        self.assertTrue(lines[0].strip().startswith("student"))
        self.assertIn("matmul_tiled", lines[0])
        self.assertIn("of cuBLAS FP32", lines[0])
        self.assertTrue(lines[-1].strip().startswith("cuBLAS"))
        self.assertIn("cublas_tf32", lines[-1])

    def test_grid_summary_against_the_copy_of_the_same_grid(self):
        lines = sweep_cli.summarize(BENCH / "samples" / "06_debugging_profiling_h100.csv", "grid")
        self.assertEqual(lines[0].split()[:6], ["student", "at", "n", "=", "8192:", "transpose_naive"])
        self.assertIn("transpose_padded 1637 GB/s (56%)", lines[0])
        self.assertNotIn("heat_step_fast", lines[0])  # the sample's student left the challenge undone
        self.assertIn("transpose_padded 2701 GB/s (92%)", lines[1])
        self.assertIn("field_strength_as_given 367 GB/s (12%)", lines[2])
        self.assertEqual(lines[-1], "  copy of the same grid, device to device: 2944 GB/s")

    def test_reduction_summary_against_cub_with_the_crossover(self):
        lines = sweep_cli.summarize(REDUCTION_SAMPLE, "reduction")
        self.assertEqual(lines[0].split()[:6], ["student", "at", "n", "=", "1e9:", "reduce_block"])
        self.assertIn("reduce_sum 2306 GB/s (75% of CUB)", lines[0])
        self.assertNotIn("reduce_sum_challenge", lines[0])  # the sample's student left it undone
        self.assertIn("reduce_sum_challenge 3017 GB/s (98% of CUB)", lines[1])
        text = "\n".join(lines)
        self.assertIn("CUB, kernel alone", text)
        self.assertIn("4.1 GB/s at n = 1e8 (cpu_one_thread)", text)
        self.assertIn("the GPU kernel (cub_sum) beats the fastest CPU from n = 3.16e4 on", text)
        self.assertIn("your reduce_sum beats the fastest CPU from n = 1e4 on", text)
        self.assertIn("(gpu_with_transfer) does not beat the fastest CPU from any n on, up to n = 1e8; faster only "
                      "at n = 1e5, 3.16e5, 1e6", text)

    def test_reduction_sample_is_marked_and_reads(self):
        """The sample, from a sweep on an H100, has every row the figures draw."""
        self.assertIn("NVIDIA H100", REDUCTION_SAMPLE.read_text().splitlines()[1])
        rows = read_sweep(REDUCTION_SAMPLE)
        self.assertEqual({(r["implementation"], r["operation"]) for r in rows},
                         {("student", "reduce_block"), ("student", "reduce_sum"), ("student", "norm_l2_cub"),
                          ("reference", "reduce_block"), ("reference", "reduce_sum"), ("reference", "norm_l2_cub"),
                          ("reference", "reduce_sum_challenge"), ("CUB", "cub_sum"), ("CUB", "gpu_with_transfer"),
                          ("CPU", "cpu_one_thread"), ("CPU", "cpu_all_threads")})
        for r in rows:  # numbers are written with 6 significant digits, as the sweep program writes them
            self.assertAlmostEqual(r["bytes"], 4.0 * r["n"], delta=4e-5 * r["n"])
            self.assertAlmostEqual(r["flops"], 1.0 * r["n"], delta=1e-5 * r["n"])
            self.assertEqual(r["block"] is None, r["grid_mode"] == "own")

    def test_summary_names_the_best_configuration(self):
        lines = sweep_cli.summarize(SAMPLE, "bandwidth")
        self.assertTrue(lines[0].strip().startswith("student"))
        self.assertIn("% of the copy bandwidth", lines[0])
        self.assertTrue(lines[1].strip().startswith("reference"))
        self.assertIn("h2d_pinned", lines[2])


class LeftOutTest(unittest.TestCase):
    """A function that crashes or hangs loses only its own rows."""

    def sweep(self, how, op, phase, n=None, ignore_skip=False):
        """Sweeps the student with FAKE_MATMUL, writes the CSV; returns (swept, runs, rows, notes, csv text)."""
        with tempfile.TemporaryDirectory() as d:
            program, log = fake_matmul(d, how, op, phase, n, ignore_skip)
            with quiet():
                swept = sweep_cli.sweep_implementation(program, "student", [], {})
            runs = log.read_text().splitlines()
            csv = Path(d) / "03_matmul.csv"
            sweep_cli.write_csv(csv, swept.rows, swept.left_out)
            rows, notes, text = read_sweep(csv), left_out(csv), csv.read_text()
            self.assertTrue(sweep_cli.summarize(csv, "gflops"))
            if PLOT_PYTHON:  # ./plot draws it, and names what was left out
                p = subprocess.run([PLOT_PYTHON, str(ROOT / "plot"), str(csv), "--out", d, "--format", "svg"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("leaves out student", p.stdout)
                self.assertIn("left out: student", (Path(d) / "03_matmul_gflops_vs_n.svg").read_text())
        keys = [(r["implementation"], r["operation"], r["n"], r["block"], r["grid_mode"]) for r in rows]
        self.assertEqual(len(keys), len(set(keys)), "a measurement appears twice")
        return swept, runs, rows, notes, text

    def sizes(self, rows, operation):
        return sorted(r["n"] for r in rows if r["operation"] == operation)

    def test_a_crash_by_a_signal_while_measuring(self):
        swept, runs, rows, notes, text = self.sweep("signal", "matmul_tiled", "measure", 1024)
        self.assertEqual(swept.code, 0)
        self.assertEqual(len(runs), 2)
        self.assertIn("--skip matmul_tiled", runs[1])
        self.assertNotIn("--no-transfers", runs[1])  # the baselines after the crash are timed too
        all_sizes = [128, 256, 512, 1024, 2048, 4096, 8192]
        for operation in ("matmul_naive", "matmul_cublas", "matmul_challenge", "cublas_fp32", "cublas_tf32"):
            self.assertEqual(self.sizes(rows, operation), all_sizes, operation)
        self.assertEqual(self.sizes(rows, "matmul_tiled"), [128, 256, 512])  # those measured before the crash
        # The first measurement of each is kept: the rows of the first run come from it.
        naive = next(r for r in rows if r["operation"] == "matmul_naive" and r["n"] == 128)
        self.assertTrue(naive["date"].endswith("01Z"))
        self.assertEqual(notes, [{"implementation": "student", "operation": "matmul_tiled",
                                  "why": "crashed (SIGSEGV) while measuring n=1024 block=256 grid=2d"}])
        self.assertTrue(text.rstrip().endswith(
            "# left out: student matmul_tiled: crashed (SIGSEGV) while measuring n=1024 block=256 grid=2d"))

    def test_a_cuda_error_while_checking(self):
        swept, runs, rows, notes, _ = self.sweep("cuda", "matmul_challenge", "check")
        self.assertEqual(swept.code, 0)
        self.assertEqual([r.split("--skip ")[1:] for r in runs], [[], ["matmul_challenge"]])
        self.assertEqual(self.sizes(rows, "matmul_challenge"), [])
        self.assertEqual(len(self.sizes(rows, "matmul_naive")), 7)
        self.assertEqual(len(notes), 1)
        self.assertEqual(notes[0]["operation"], "matmul_challenge")
        self.assertEqual(notes[0]["why"], "crashed (exit 1: 03_matmul.cu:107: cudaDeviceSynchronize() failed: "
                                          "cudaErrorIllegalAddress (an illegal memory access was encountered)) "
                                          "while checking its results")

    def test_a_hang(self):
        with silence_limit(1):
            swept, runs, rows, notes, _ = self.sweep("hang", "matmul_naive", "measure", 512)
        self.assertEqual(swept.code, 0)
        self.assertIn("--skip matmul_naive", runs[1])
        self.assertEqual(self.sizes(rows, "matmul_naive"), [128, 256])
        self.assertEqual(len(self.sizes(rows, "matmul_tiled")), 7)
        self.assertEqual([(n["operation"], n["why"]) for n in notes],
                         [("matmul_naive", "hung: no output for 1 s while measuring n=512 block=256 grid=2d")])

    def test_two_functions_crash_one_after_the_other(self):
        with tempfile.TemporaryDirectory() as d:
            # Every function crashes in its check: each run gets one further, then only the
            # cuBLAS baselines are left.
            program, log = fake_matmul(d, "cuda", "every", "check")
            with quiet():
                swept = sweep_cli.sweep_implementation(program, "student", [], {})
            runs = log.read_text().splitlines()
        self.assertEqual([r.split("--skip ")[1:] for r in runs],
                         [[], ["matmul_naive"], ["matmul_naive,matmul_tiled"],
                          ["matmul_naive,matmul_tiled,matmul_cublas"],
                          ["matmul_naive,matmul_tiled,matmul_cublas,matmul_challenge"]])
        self.assertEqual([e.operation for e in swept.left_out],
                         ["matmul_naive", "matmul_tiled", "matmul_cublas", "matmul_challenge"])
        self.assertEqual(swept.code, 0)
        self.assertEqual({row.split(",")[2] for row in swept.rows}, {"cublas_fp32", "cublas_tf32"})

    def test_no_progress_stops_the_loop(self):
        # A program that crashes in the same function whatever --skip says: run twice, no more.
        swept, runs, rows, notes, _ = self.sweep("cuda", "matmul_tiled", "measure", 1024, ignore_skip=True)
        self.assertEqual(len(runs), 2)
        self.assertIn("--skip matmul_tiled", runs[1])
        self.assertEqual(swept.code, 1)
        self.assertEqual([n["operation"] for n in notes], ["matmul_tiled", sweep_cli.REST])
        self.assertIn("although --skip matmul_tiled was given", notes[1]["why"])
        self.assertEqual(self.sizes(rows, "matmul_naive"), [128, 256, 512, 1024])  # what came before, once

    def test_a_crash_before_any_announcement_stops_at_once(self):
        with tempfile.TemporaryDirectory() as d:
            program = fake_program(d, """
                sys.stderr.write("cublasCreate failed\\n")
                sys.exit(1)
                """)
            with quiet():
                swept = sweep_cli.sweep_implementation(program, "student", [], {})
        self.assertEqual(swept.code, 1)
        self.assertEqual(swept.rows, [])
        self.assertEqual(swept.left_out, [sweep_cli.LeftOut(
            "student", sweep_cli.REST, "crashed (exit 1: cublasCreate failed) before its first check or measurement")])

    def test_the_whole_sweep_writes_the_rest_and_exits_1(self):
        """./sweep 03 end to end (the build and the GPU stood in for): the student's crashed
        function is noted, everything else is in the CSV once, and the exit status is 1."""
        with tempfile.TemporaryDirectory() as d:
            program, log = fake_matmul(d, "cuda", "matmul_challenge", "check")
            index = {"trees": {name: {"sweeps": {"03_matmul": program}} for name in ("mine", "solutions")}}
            device = subprocess.CompletedProcess([], 0, stdout=b'{"name": "NVIDIA H200", "copy_bandwidth_gbps": 4255}')
            out = io.StringIO()
            with mock.patch.object(sweep_cli.build, "prepare", return_value=(index, "mine")), \
                    mock.patch.object(sweep_cli, "query_device", return_value=device), \
                    contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                code = sweep_cli.main(["03", "--no-build", "--tree", d, "--out", d], root=ROOT)
            runs = log.read_text().splitlines()
            csv = Path(d) / "03_matmul.csv"
            rows, notes = read_sweep(csv), left_out(csv)
        self.assertEqual(code, sweep_cli.EXIT_PARTIAL)
        self.assertEqual(len(runs), 3)  # student, student again without the challenge, reference
        self.assertIn("--skip matmul_challenge", runs[1])
        self.assertIn("--implementation reference", runs[2])
        self.assertIn("--no-transfers", runs[2])  # the baselines are timed once
        keys = [(r["implementation"], r["operation"], r["n"]) for r in rows]
        self.assertEqual(len(keys), len(set(keys)))
        by_function = {(i, o) for i, o, _ in keys}
        self.assertEqual(by_function, {("student", "matmul_naive"), ("student", "matmul_tiled"),
                                       ("student", "matmul_cublas"), ("reference", "matmul_naive"),
                                       ("reference", "matmul_tiled"), ("reference", "matmul_cublas"),
                                       ("reference", "matmul_challenge"), ("cuBLAS", "cublas_fp32"),
                                       ("cuBLAS", "cublas_tf32")})
        self.assertEqual(len(keys), 9 * 7)
        self.assertEqual([(n["implementation"], n["operation"]) for n in notes], [("student", "matmul_challenge")])
        self.assertIn("Left out", out.getvalue())
        self.assertIn("student matmul_challenge: crashed (exit 1:", out.getvalue())

    def test_no_reference_where_solutions_lacks_the_lesson(self):
        """A student release with other lessons' solutions published: the student's code is swept
        alone, and nothing is said about a missing reference program."""
        with tempfile.TemporaryDirectory() as d:
            program, log = fake_matmul(d, "cuda", "matmul_challenge", "check")
            index = {"trees": {"mine": {"sweeps": {"03_matmul": program}},
                               "solutions": {"sweeps": {"01_vector_add": program}}}}
            device = subprocess.CompletedProcess([], 0, stdout=b'{"name": "NVIDIA H200", "copy_bandwidth_gbps": 4255}')
            err = io.StringIO()
            with mock.patch.object(sweep_cli.build, "prepare", return_value=(index, "mine")), \
                    mock.patch.object(sweep_cli, "query_device", return_value=device), \
                    contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                sweep_cli.main(["03", "--no-build", "--tree", d, "--out", d], root=ROOT)
            runs = log.read_text().splitlines()
            rows = read_sweep(Path(d) / "03_matmul.csv")
        self.assertEqual(len(runs), 2)  # student, student again without the crashed challenge
        self.assertFalse([r for r in runs if "--implementation reference" in r])
        self.assertNotIn("reference", {r["implementation"] for r in rows})
        self.assertNotIn("no sweep program", err.getvalue())

    def test_a_run_after_a_crash_keeps_the_first_calibration(self):
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "runs.log"
            program = fake_program(d, f"""
                args = sys.argv[1:]
                open({str(log)!r}, "a").write(" ".join(args) + "\\n")
                if "--work" not in args:
                    print("# pass --work 187", flush=True)
                print({",".join(COLUMNS)!r})
                if "--skip" not in args:
                    print("# measuring process n=1048576 streams=4 grid=pipeline chunks=16", flush=True)
                    sys.exit(1)
                print({streams_rows()[-1]!r})
                """)
            with quiet():
                swept = sweep_cli.sweep_implementation(program, "student", [], {})
            runs = log.read_text().splitlines()
        self.assertEqual(len(runs), 2)
        self.assertNotIn("--work", runs[0])
        self.assertIn("--work 187", runs[1])
        self.assertEqual((swept.code, swept.passes), (0, ("--work", "187")))

    def test_known_exits_are_not_crashes(self):
        for code in (2, 5, 77):
            with tempfile.TemporaryDirectory() as d:
                program = fake_program(d, f"""
                    print("# checking multiply_add", flush=True)
                    sys.exit({code})
                    """)
                with quiet():
                    swept = sweep_cli.sweep_implementation(program, "student", [], {})
            self.assertEqual((swept.code, swept.left_out), (code, []))


# A stand-in for lesson 05's sweep program: the student's run calibrates ("# pass --work 187") and
# times the stages; every run times process and prints a timeline; the arguments of each run go
# to `log`.
FAKE_STREAMS = """
args = sys.argv[1:]
implementation = args[args.index("--implementation") + 1]
open(LOG, "a").write(" ".join(args) + "\\n")
if "--work" not in args:
    print("# pass --work 187")
print(HEADER)
for row in ROWS:
    fields = row.split(",")
    if fields[1] in ("student", "reference") and fields[1] != implementation:
        continue
    if fields[1] not in ("student", "reference") and "--no-transfers" in args:
        continue
    print(row)
if TIMELINE:
    for line in [TIMELINE_HEADER] + [l.replace(",student,", "," + implementation + ",") for l in TIMELINE]:
        print("# timeline " + line)
"""


class StreamsSweepTest(unittest.TestCase):
    """./sweep 05 end to end, the build and the GPU stood in for."""

    def sweep(self, directory, timeline=True):
        log = Path(directory) / "runs.log"
        settings = (f"LOG, HEADER, ROWS = {str(log)!r}, {','.join(STREAMS_COLUMNS)!r}, {streams_rows()!r}\n"
                    f"TIMELINE_HEADER, TIMELINE = {','.join(TIMELINE_COLUMNS)!r}, "
                    f"{timeline_rows('student') if timeline else []!r}\n")
        program = fake_program(directory, settings + FAKE_STREAMS)
        index = {"trees": {name: {"sweeps": {"05_streams": program}} for name in ("mine", "solutions")}}
        device = subprocess.CompletedProcess([], 0, stdout=b'{"name": "NVIDIA H100 80GB HBM3", '
                                                           b'"copy_bandwidth_gbps": 3000}')
        out = io.StringIO()
        with mock.patch.object(sweep_cli.build, "prepare", return_value=(index, "mine")), \
                mock.patch.object(sweep_cli, "query_device", return_value=device), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = sweep_cli.main(["05", "--no-build", "--tree", directory, "--out", directory], root=ROOT)
        return code, log.read_text().splitlines(), out.getvalue()

    def test_the_timeline_file_the_calibration_and_the_summary(self):
        with tempfile.TemporaryDirectory() as d:
            code, runs, out = self.sweep(d)
            rows = read_sweep(Path(d) / "05_streams.csv")
            timeline = read_timeline(Path(d) / "05_streams_timeline.csv")
        self.assertEqual(code, sweep_cli.EXIT_OK, out)
        self.assertEqual(len(runs), 2)
        self.assertIn("--implementation student", runs[0])
        self.assertNotIn("--work", runs[0])
        self.assertIn("--implementation reference", runs[1])
        self.assertIn("--work 187", runs[1])  # the student's calibration: one kernel for both
        self.assertIn("--no-transfers", runs[1])
        self.assertEqual(len(rows), len(streams_rows()))
        self.assertEqual({r["implementation"] for r in timeline}, {"student", "reference"})
        self.assertEqual(len(timeline), 2 * len(timeline_rows("student")))
        self.assertIn("05_streams_timeline.csv (26 records", out)
        self.assertIn("overlap bound max(H2D, kernel, D2H) 2.2 ms", out)
        self.assertIn("student    best: 4 streams, 16 chunks", out)
        self.assertIn("reference  best: 4 streams, 16 chunks: 2.5 ms, 88% of the bound", out)
        self.assertIn("(the timeline beside it too)", out)

    def test_a_sweep_without_a_timeline_removes_an_old_one(self):
        with tempfile.TemporaryDirectory() as d:
            stale = Path(d) / "05_streams_timeline.csv"
            stale.write_text("an older sweep's\n")
            code, _, out = self.sweep(d, timeline=False)
            self.assertEqual(code, sweep_cli.EXIT_OK, out)
            self.assertFalse(stale.exists())
            self.assertNotIn("timeline", out)


# A stand-in for lesson 07's sweep program: the rows of monte_carlo_rows() of its implementation,
# the baselines unless --no-transfers; the arguments of each run go to `log`.
FAKE_MONTE_CARLO = """
args = sys.argv[1:]
implementation = args[args.index("--implementation") + 1]
open(LOG, "a").write(" ".join(args) + "\\n")
print("# checking count_inside_circle")
print(HEADER)
for row in ROWS:
    owner = row.split(",")[1]
    if owner == implementation or (owner not in ("student", "reference") and "--no-transfers" not in args):
        print(row)
"""


class MonteCarloSweepTest(unittest.TestCase):
    """./sweep 07 end to end, the build and the GPU stood in for: the header with its column inside is
    accepted, each seed's row kept, the baselines timed once, and the summary printed."""

    def test_the_csv_and_the_summary(self):
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "runs.log"
            settings = (f"LOG, HEADER, ROWS = {str(log)!r}, {','.join(MONTE_CARLO_COLUMNS)!r}, "
                        f"{monte_carlo_rows()!r}\n")
            program = fake_program(d, settings + FAKE_MONTE_CARLO)
            index = {"trees": {name: {"sweeps": {"07_monte_carlo": program}} for name in ("mine", "solutions")}}
            device = subprocess.CompletedProcess([], 0, stdout=b'{"name": "NVIDIA H100 80GB HBM3", '
                                                               b'"copy_bandwidth_gbps": 3000}')
            out = io.StringIO()
            with mock.patch.object(sweep_cli.build, "prepare", return_value=(index, "mine")), \
                    mock.patch.object(sweep_cli, "query_device", return_value=device), \
                    contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                code = sweep_cli.main(["07", "--no-build", "--tree", d, "--out", d], root=ROOT)
            runs = log.read_text().splitlines()
            csv = Path(d) / "07_monte_carlo.csv"
            self.assertEqual(csv.read_text().splitlines()[0], ",".join(MONTE_CARLO_COLUMNS))
            rows = read_sweep(csv)
        self.assertEqual(code, sweep_cli.EXIT_OK, out.getvalue())
        self.assertEqual(len(runs), 2)
        self.assertIn("--no-transfers", runs[1])
        self.assertEqual(len(rows), len(monte_carlo_rows()))
        self.assertEqual(len([r for r in rows if r["operation"] == "count_inside_circle"]), 2 * 5 * 4)
        self.assertIn("student    pi at N = 1e9", out.getvalue())
        self.assertIn("Figures: ./plot", out.getvalue())


class UntouchedLabelTest(unittest.TestCase):
    """./sweep says "not implemented yet" of a left-out function only while its task's code is
    the untouched skeleton (grader/driver/skeleton.py), as ./grade does."""

    SKELETONS = {"09_x": {"4": {"file": "x.cu", "function": "challenge", "body": "(void)a;"}}}
    ERRORS = "sweep_09_x: challenge (student) is not timed: it wrote nothing to *out\nother line\n"

    def label(self, source: str) -> str:
        with tempfile.TemporaryDirectory() as tree:
            (Path(tree) / "09_x").mkdir()
            (Path(tree) / "09_x" / "x.cu").write_text(source)
            return sweep_cli.label_untouched(self.ERRORS, Path(tree), "09_x", self.SKELETONS)

    def test_the_skeleton_is_not_implemented_yet(self):
        text = self.label("void challenge(int a) {\n  // TODO(task 4): the challenge\n  (void)a;\n}\n")
        self.assertIn("challenge (student) is not timed: not implemented yet (TODO(task 4) is untouched)", text)
        self.assertIn("other line", text)

    def test_code_of_the_students_keeps_the_facts(self):
        text = self.label("void challenge(int a) {\n  // TODO(task 4): the challenge\n  (void)a; return;\n}\n")
        self.assertEqual(text, self.ERRORS)
        # A function the record does not know is left as the program said it.
        self.assertEqual(sweep_cli.label_untouched(self.ERRORS, Path("/nonexistent"), "09_x", {}), self.ERRORS)


class CommandLineTest(unittest.TestCase):
    def test_a_lesson_without_a_sweep_is_a_usage_error(self):
        p = subprocess.run([sys.executable, str(ROOT / "sweep"), "01"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("has no sweep", p.stderr)
        self.assertIn("02_multiply_add", p.stderr)


if __name__ == "__main__":
    unittest.main()
