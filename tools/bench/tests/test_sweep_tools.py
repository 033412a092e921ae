"""Host-only tests of the sweep tooling: the CSV schema and reader, the sweep program's
command line, and ./sweep's handling of a sweep program's output (with stand-in programs)."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parents[1]
sys.path[:0] = [str(BENCH), str(ROOT / "grader")]

import sweep_cli  # noqa: E402
from sweep_schema import COLUMNS, CsvError, read_sweep  # noqa: E402

SAMPLE = BENCH / "samples" / "02_multiply_add_h200.csv"
MATMUL_SAMPLE = BENCH / "samples" / "03_matmul_h200.csv"
# The sweep program built by CMake (ctest passes it); the tests that run it skip without it.
SWEEP_PROGRAM = os.environ.get("WORKBOOK_SWEEP_PROGRAM")


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
                              (["--blocks", "0"], "whole numbers from 1"), (["--frobnicate"], "unknown argument")):
            p = subprocess.run([SWEEP_PROGRAM] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr)

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
        other = lines[2].replace("NVIDIA H200", "NVIDIA H100 80GB HBM3")
        self.reject(lines[:2] + [other], "several GPUs")

    def test_rejects_a_file_without_kernel_rows(self):
        lines = sample_lines()
        self.reject([lines[0]] + [l for l in lines[1:] if ",cudaMemcpy," in l], "no kernel measurements")


def fake_program(directory, body):
    """A stand-in sweep program: a Python script that prints what `body` prints."""
    path = Path(directory) / "fake_sweep"
    path.write_text(f"#!{sys.executable}\nimport sys\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)


class RunSweepTest(unittest.TestCase):
    def test_collects_rows_and_passes_the_implementation(self):
        rows = sample_lines()[1:4]
        with tempfile.TemporaryDirectory() as d:
            program = fake_program(d, f"""
                assert sys.argv[1:3] == ["--implementation", "student"], sys.argv
                print("# planned 3")
                print({",".join(COLUMNS)!r})
                for row in {rows!r}:
                    print(row)
                """)
            code, got, errors = sweep_cli.run_sweep(program, "student", [], {})
        self.assertEqual(code, 0, errors)
        self.assertEqual(got, rows)

    def test_a_wrong_header_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            program = fake_program(d, """
                print("# planned 1")
                print("n,time")
                """)
            code, got, errors = sweep_cli.run_sweep(program, "student", [], {})
        self.assertNotEqual(code, 0)
        self.assertEqual(got, [])
        self.assertIn("unexpected CSV header", errors)

    def test_an_incorrect_kernel_is_reported_with_its_reason(self):
        with tempfile.TemporaryDirectory() as d:
            program = fake_program(d, """
                sys.stderr.write("multiply_add (student) gives wrong results\\n")
                sys.exit(5)
                """)
            code, got, errors = sweep_cli.run_sweep(program, "student", [], {})
        self.assertEqual(code, sweep_cli.EXIT_INCORRECT)
        self.assertIn("wrong results", errors)

    def test_a_silent_program_is_stopped(self):
        old = sweep_cli.SILENCE_LIMIT_S
        sweep_cli.SILENCE_LIMIT_S = 1
        try:
            with tempfile.TemporaryDirectory() as d:
                program = fake_program(d, """
                    import time
                    print("# planned 1", flush=True)
                    time.sleep(60)
                    """)
                code, _, errors = sweep_cli.run_sweep(program, "student", [], {})
        finally:
            sweep_cli.SILENCE_LIMIT_S = old
        self.assertEqual(code, 124)
        self.assertIn("no measurement", errors)

    def test_matmul_summary_in_gflops_against_cublas(self):
        lines = sweep_cli.summarize(MATMUL_SAMPLE)
        self.assertTrue(lines[0].strip().startswith("student"))
        self.assertIn("matmul_tiled", lines[0])
        self.assertIn("of cuBLAS FP32", lines[0])
        self.assertTrue(lines[-1].strip().startswith("cuBLAS"))
        self.assertIn("cublas_tf32", lines[-1])

    def test_summary_names_the_best_configuration(self):
        lines = sweep_cli.summarize(SAMPLE)
        self.assertTrue(lines[0].strip().startswith("student"))
        self.assertIn("% of the copy bandwidth", lines[0])
        self.assertTrue(lines[1].strip().startswith("reference"))
        self.assertIn("h2d_pinned", lines[2])


class CommandLineTest(unittest.TestCase):
    def test_a_lesson_without_a_sweep_is_a_usage_error(self):
        p = subprocess.run([sys.executable, str(ROOT / "sweep"), "01"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("has no sweep", p.stderr)
        self.assertIn("02_multiply_add", p.stderr)


if __name__ == "__main__":
    unittest.main()
