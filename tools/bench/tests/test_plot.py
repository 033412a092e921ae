"""The plot tool on the checked-in sample sweep: every figure is written, in both formats,
non-empty; functions that ./sweep left out are named on the figures; a malformed CSV is
rejected with a message and exit 2; a Python without matplotlib gets a one-line install
hint per interpreter tried and exit 3; a Python without it hands over to one with it. Run by
the python3 that has matplotlib."""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SAMPLE = HERE.parent / "samples" / "02_multiply_add_h200.csv"
MATMUL_SAMPLE = HERE.parent / "samples" / "03_matmul_h200.csv"
FIGURES = ("time_vs_n", "bandwidth_vs_block", "student_vs_reference", "kernel_vs_transfer")
MAGIC = {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<?xml"}


def plot(*args, env=None):
    return subprocess.run([sys.executable, str(ROOT / "plot")] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env)


class PlotTest(unittest.TestCase):
    def check_figures(self, fmt):
        with tempfile.TemporaryDirectory() as out:
            p = plot(SAMPLE, "--out", out, "--format", fmt)
            self.assertEqual(p.returncode, 0, p.stderr)
            for name in FIGURES:
                for ext in ("png", fmt):
                    path = Path(out) / f"02_multiply_add_{name}.{ext}"
                    self.assertTrue(path.exists(), f"{path.name} was not written")
                    data = path.read_bytes()
                    self.assertGreater(len(data), 10_000, f"{path.name} is nearly empty")
                    self.assertTrue(data.startswith(MAGIC[ext]), f"{path.name} is not a {ext} file")
                    if ext == "svg":
                        self.assertIn(b"NVIDIA H200", data)  # the GPU's name is on the figure

    def test_every_figure_as_png_and_pdf(self):
        self.check_figures("pdf")

    def test_every_figure_as_png_and_svg(self):
        self.check_figures("svg")

    def test_default_output_is_beside_the_csv(self):
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "sweep.csv"
            csv.write_text(SAMPLE.read_text())
            p = plot(csv)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(list((Path(d) / "figures").glob("*.png"))), len(FIGURES))

    def test_without_transfer_rows_the_other_figures_are_still_drawn(self):
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "sweep.csv"
            csv.write_text("\n".join(l for l in SAMPLE.read_text().splitlines() if ",cudaMemcpy," not in l) + "\n")
            p = plot(csv, "--out", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no transfer rows", p.stdout)
            self.assertEqual(len(list(Path(d).glob("*.png"))), len(FIGURES) - 1)

    def test_matmul_figures_from_its_sample(self):
        """Lesson 03 (rows for cuBLAS FP32): GFLOP/s figures, not bandwidth ones."""
        with tempfile.TemporaryDirectory() as out:
            p = plot(MATMUL_SAMPLE, "--out", out, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            written = sorted(path.name for path in Path(out).iterdir())
            self.assertEqual(written, [f"03_matmul_{name}.{ext}" for name in ("fraction_of_cublas", "gflops_vs_n")
                                       for ext in ("png", "svg")])
            svg = (Path(out) / "03_matmul_gflops_vs_n.svg").read_text()
            for text in ("cuBLAS FP32", "cuBLAS TF32", "matmul_tiled", "GFLOP/s", "NVIDIA H200"):
                self.assertIn(text, svg)
            self.assertIn("of cuBLAS FP32", (Path(out) / "03_matmul_fraction_of_cublas.svg").read_text())

    def test_matmul_without_cublas_rows_still_draws_gflops_vs_n(self):
        with tempfile.TemporaryDirectory() as d:
            lines = MATMUL_SAMPLE.read_text().splitlines()
            csv = Path(d) / "sweep.csv"
            # Without the FP32 rows it is no longer recognised as compute-bound: keep them at
            # small N only, so the largest N has no FP32 row.
            largest = max(int(l.split(",")[3]) for l in lines[1:])
            csv.write_text("\n".join(l for l in lines if not (",cuBLAS," in l and f",{largest}," in l)) + "\n")
            p = plot(csv, "--out", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no fraction_of_cublas figure", p.stdout)
            self.assertEqual([f.name for f in Path(d).glob("*.png")], ["03_matmul_gflops_vs_n.png"])

    def test_a_sweep_that_left_functions_out(self):
        """./sweep notes after the rows what crashed or hung: the figures are drawn and name it."""
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "sweep.csv"
            csv.write_text(MATMUL_SAMPLE.read_text() + "# left out: student matmul_challenge: crashed (exit 1: "
                           "cudaErrorIllegalAddress (an illegal memory access was encountered)) while checking its "
                           "results\n")
            p = plot(csv, "--out", d, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("leaves out student matmul_challenge", p.stdout)
            for name in ("gflops_vs_n", "fraction_of_cublas"):
                self.assertIn("left out: student matmul_challenge (crashed)",
                              (Path(d) / f"03_matmul_{name}.svg").read_text())

    def test_malformed_csv_is_rejected_with_a_message(self):
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "broken.csv"
            lines = SAMPLE.read_text().splitlines()
            csv.write_text("\n".join(lines[:5] + ["02_multiply_add,student,multiply_add,abc"]) + "\n")
            p = plot(csv, "--out", d)
            self.assertEqual(p.returncode, 2)
            self.assertIn("line 6", p.stderr)
            self.assertEqual(list(Path(d).glob("*.png")), [])
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_missing_matplotlib_names_every_interpreter_tried_and_its_fix(self):
        with tempfile.TemporaryDirectory() as d:
            blocker = Path(d) / "matplotlib"  # hides matplotlib from every interpreter started with it
            blocker.mkdir()
            (blocker / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
            env = dict(os.environ, PYTHONPATH=d, WORKBOOK_PLOT_PYTHONS="/usr/bin/python3")
            p = plot(SAMPLE, "--out", d, env=env)
            self.assertEqual(list(Path(d).glob("*.png")), [])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(f"{sys.executable}: install it with: ", p.stderr)
        if os.path.exists("/usr/bin/python3"):  # the system's Python gets the system's package
            self.assertIn("/usr/bin/python3: install it with: sudo apt install python3-matplotlib", p.stderr)
        if not sys.executable.startswith("/usr/bin/"):
            self.assertIn(f"{sys.executable} -m pip install matplotlib", p.stderr)

    def test_a_python_without_matplotlib_hands_over_to_one_with_it(self):
        # python3 -S leaves out site-packages, where matplotlib lives: ./plot must find this
        # interpreter (given as the one to try) and draw the figures with it.
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest(f"{sys.executable} has no matplotlib to hand over to")
        with tempfile.TemporaryDirectory() as d:
            other = Path(d) / "python-with-matplotlib"  # this interpreter under another name
            other.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
            other.chmod(0o755)
            env = dict(os.environ, WORKBOOK_PLOT_PYTHONS=str(other))
            p = subprocess.run([sys.executable, "-S", str(ROOT / "plot"), str(SAMPLE), "--out", d], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertGreater(len(list(Path(d).glob("*.png"))), 0)

    def test_help_needs_no_matplotlib(self):
        with tempfile.TemporaryDirectory() as d:
            blocker = Path(d) / "matplotlib"
            blocker.mkdir()
            (blocker / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
            p = plot("--help", env=dict(os.environ, PYTHONPATH=d))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("usage", p.stdout)


if __name__ == "__main__":
    unittest.main()
