"""The plot tool on the checked-in sample sweeps: every figure is written, in both formats,
non-empty; functions that ./sweep left out are named on the figures; lesson 04's crossover
(where the GPU overtakes the CPU) is computed right and marked; lesson 05's time against
chunks (with the overlap bound) and its timeline are drawn from its two samples, the timeline
also when it lies beside the sweep CSV; lesson 07's three figures (pi's error and points per
second against N, the histogram against its bins) from its H100 sample and synthetic sweeps, and
which are left out when rows are missing; a malformed CSV or timeline is rejected
with a message and exit 2; a Python without matplotlib gets a one-line install hint per
interpreter tried and exit 3; a Python without it hands over to one with it. Run by the
python3 that has matplotlib."""
import csv as csvlib
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
import crossover  # noqa: E402
import overlap  # noqa: E402
from sweep_schema import COLUMNS, TIMELINE_COLUMNS, columns_for, read_sweep, read_timeline  # noqa: E402
from test_sweep_tools import monte_carlo_rows  # noqa: E402  (a synthetic lesson 07 sweep)

SAMPLE = HERE.parent / "samples" / "02_multiply_add_h100.csv"
MATMUL_SAMPLE = HERE.parent / "samples" / "03_matmul_h100.csv"
REDUCTION_SAMPLE = HERE.parent / "samples" / "04_reduction_h100.csv"
REDUCTION_FIGURES = ("fraction_of_cub", "gbps_vs_n", "time_vs_n")
GRID_SAMPLE = HERE.parent / "samples" / "06_debugging_profiling_h100.csv"
GRID_FIGURES = ("fraction_of_copy", "gbps_vs_n")
MONTE_CARLO_SAMPLE = HERE.parent / "samples" / "07_monte_carlo_h100.csv"
# Lesson 05's samples, from one ./sweep 05 on an H100 (its CSV and its timeline).
STREAMS_SAMPLE = HERE.parent / "samples" / "05_streams_h100.csv"
STREAMS_TIMELINE_SAMPLE = HERE.parent / "samples" / "05_streams_timeline_h100.csv"
STREAMS_FIGURES = ("time_vs_chunks", "timeline")
FIGURES = ("time_vs_n", "bandwidth_vs_block", "student_vs_reference", "kernel_vs_transfer")
MAGIC = {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<?xml"}


def svg_text(path):
    """The text on an SVG figure, in order: matplotlib writes each line of a label as a comment
    before its glyphs, so a label wrapped over lines reads back as one line here."""
    return " ".join(" ".join(c.split()) for c in re.findall(r"<!-- (.*?) -->", Path(path).read_text(), re.S))


def plot(*args, env=None):
    return subprocess.run([sys.executable, str(ROOT / "plot")] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env)


def manifest_with(directory, **sweeps):
    """The real manifest with each slug's "sweep" replaced (None: taken out), written into `directory`."""
    import json
    data = json.loads((ROOT / "lessons" / "manifest.json").read_text())
    for lesson in data["lessons"]:
        if lesson["slug"] in sweeps:
            if sweeps[lesson["slug"]] is None:
                lesson.pop("sweep", None)
            else:
                lesson["sweep"] = sweeps[lesson["slug"]]
    path = Path(directory) / "manifest.json"
    path.write_text(json.dumps(data))
    return path


class DeclaredFiguresTest(unittest.TestCase):
    """./plot draws what the manifest's "sweep" names, and nothing it would have to guess."""

    def test_the_manifest_names_only_figures_plot_can_draw(self):
        sys.path.insert(0, str(ROOT / "grader"))
        import plot as plot_module
        from driver.manifest import SWEEP_FIGURES
        self.assertEqual(set(plot_module.KINDS), set(SWEEP_FIGURES))
        for kind, names in SWEEP_FIGURES.items():
            for name in names:
                if name != plot_module.TIMELINE:
                    self.assertTrue(callable(getattr(plot_module.KINDS[kind], name, None)), f"{kind}: {name}")
        self.assertLessEqual(set(plot_module.NOT_DRAWN), {n for names in SWEEP_FIGURES.values() for n in names})

    def test_only_the_declared_figures_are_drawn_in_the_declared_order(self):
        with tempfile.TemporaryDirectory() as d:
            manifest = manifest_with(d, **{"02_multiply_add": {"kind": "bandwidth",
                                                                "figures": ["student_vs_reference", "time_vs_n"]}})
            p = plot(SAMPLE, "--out", d, "--manifest", manifest)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sorted(f.name for f in Path(d).glob("*.png")),
                             ["02_multiply_add_student_vs_reference.png", "02_multiply_add_time_vs_n.png"])
            written = [l for l in p.stdout.splitlines() if l.startswith("wrote") and l.endswith(".png")]
            self.assertTrue(written[0].endswith("student_vs_reference.png"), written)

    def test_a_lesson_without_a_sweep_is_an_error_that_says_so(self):
        with tempfile.TemporaryDirectory() as d:
            manifest = manifest_with(d, **{"02_multiply_add": None})
            p = plot(SAMPLE, "--out", d, "--manifest", manifest)
            self.assertEqual(p.returncode, 2)
            self.assertIn("02_multiply_add, whose entry in", p.stderr)
            self.assertIn("declares no \"sweep\"", p.stderr)
            self.assertIn("lessons with a sweep: 03_matmul, 04_reduction, 05_streams", p.stderr)
            self.assertFalse(list(Path(d).glob("*.png")))

    def test_rows_of_a_lesson_the_manifest_does_not_list(self):
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "sweep.csv"
            csv.write_text(SAMPLE.read_text().replace("02_multiply_add,", "09_unknown,"))
            p = plot(csv, "--out", d)
            self.assertEqual(p.returncode, 2)
            self.assertIn("rows of lesson '09_unknown', which", p.stderr)

    def test_a_manifest_naming_a_figure_plot_does_not_draw(self):
        with tempfile.TemporaryDirectory() as d:
            manifest = manifest_with(d, **{"02_multiply_add": {"kind": "bandwidth", "figures": ["gflops_vs_n"]}})
            p = plot(SAMPLE, "--out", d, "--manifest", manifest)
            self.assertEqual(p.returncode, 2)
            self.assertIn("./plot draws no figure 'gflops_vs_n' for a 'bandwidth' sweep", p.stderr)

    def test_the_timeline_beside_the_csv_only_where_declared(self):
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "05_streams.csv"
            csv.write_text(STREAMS_SAMPLE.read_text())
            (Path(d) / "05_streams_timeline.csv").write_text(STREAMS_TIMELINE_SAMPLE.read_text())
            manifest = manifest_with(d, **{"05_streams": {"kind": "streams", "figures": ["time_vs_chunks"]}})
            p = plot(csv, "--out", d, "--manifest", manifest)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sorted(f.name for f in Path(d).glob("*.png")), ["05_streams_time_vs_chunks.png"])
            p = plot(Path(d) / "05_streams_timeline.csv", "--out", d, "--manifest", manifest)  # given itself
            self.assertEqual(p.returncode, 2)
            self.assertIn("names no timeline figure", p.stderr)


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
                        self.assertIn(b"NVIDIA H100", data)  # the GPU's name is on the figure

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
            for text in ("cuBLAS FP32", "cuBLAS TF32", "matmul_tiled", "GFLOP/s", "NVIDIA H100"):
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

    def test_reduction_figures_from_its_sample(self):
        """Lesson 04: time and GB/s against n for every sum, with CUB and the CPU, the crossover
        marked, and the share of CUB at the largest n."""
        with tempfile.TemporaryDirectory() as out:
            p = plot(REDUCTION_SAMPLE, "--out", out, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            written = sorted(path.name for path in Path(out).iterdir())
            self.assertEqual(written, [f"04_reduction_{name}.{ext}" for name in REDUCTION_FIGURES
                                       for ext in ("png", "svg")])
            for name in REDUCTION_FIGURES:
                self.assertGreater((Path(out) / f"04_reduction_{name}.png").stat().st_size, 10_000, name)
            time_svg = svg_text(Path(out) / "04_reduction_time_vs_n.svg")
            gbps_svg = svg_text(Path(out) / "04_reduction_gbps_vs_n.svg")
            for svg in (time_svg, gbps_svg):
                for text in ("reduce_block, student", "reduce_sum, reference", "reduce_sum_challenge, reference",
                             "CUB DeviceReduce::Sum, the kernel alone", "CPU, one thread", "CPU, all threads",
                             "NVIDIA H100 80GB HBM3"):
                    self.assertIn(text, svg)
            # On the H100 sample the GPU kernel (CUB) beats the fastest CPU from 3.16e4 on; with the
            # pageable copy it wins only at 1e5 .. 1e6, where starting the CPU threads still costs
            # more than the copy, and loses from there on.
            self.assertIn("GPU kernel faster than", time_svg)
            self.assertIn("the CPU from n = 3.16e4", time_svg)
            self.assertNotIn("GPU with the copy faster than", time_svg)
            self.assertIn("faster only at n = 1e5, 3.16e5, 1e6", time_svg)
            self.assertIn("device copy bandwidth", gbps_svg)
            fraction = svg_text(Path(out) / "04_reduction_fraction_of_cub.svg")
            for text in ("reduce_sum_challenge", "% of CUB's GB/s at n = 1e9", "timed"):  # "not / timed": no student challenge
                self.assertIn(text, fraction)

    def test_grid_figures_from_its_sample(self):
        """Lesson 06: each function's GB/s against n, the kernel as given and the copy of the same
        grid, and each one's share of the copy at the largest n (the plain student leaves the
        challenge undone)."""
        with tempfile.TemporaryDirectory() as out:
            p = plot(GRID_SAMPLE, "--out", out, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            written = sorted(path.name for path in Path(out).iterdir())
            self.assertEqual(written, [f"06_debugging_profiling_{name}.{ext}" for name in GRID_FIGURES
                                       for ext in ("png", "svg")])
            gbps = svg_text(Path(out) / "06_debugging_profiling_gbps_vs_n.svg")
            for text in ("transpose_naive, student", "transpose_padded, reference", "field_strength_as_given, given",
                         "heat_step_fast, reference", "cudaMemcpy device to device, the same bytes",
                         "NVIDIA H100 80GB HBM3"):
                self.assertIn(text, gbps)
            fraction = svg_text(Path(out) / "06_debugging_profiling_fraction_of_copy.svg")
            for text in ("% of the copy's GB/s at n = 8192", "device-to-device copy", "timed"):  # "not / timed"
                self.assertIn(text, fraction)

    def test_grid_without_the_copy_still_draws_the_bandwidth(self):
        """A lesson 06 sweep run with --no-transfers: no copy, no kernel as given; one figure, and why not the other."""
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "sweep.csv"
            csv.write_text("\n".join(l for l in GRID_SAMPLE.read_text().splitlines()
                                     if ",cudaMemcpy," not in l and ",given," not in l) + "\n")
            p = plot(csv, "--out", d, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no copy rows", p.stdout)
            self.assertEqual(sorted(f.name for f in Path(d).glob("*.png")), ["06_debugging_profiling_gbps_vs_n.png"])

    def test_reduction_without_baselines_still_draws_time_and_bandwidth(self):
        """A lesson 04 sweep run with --no-transfers: no CUB, no CPU; two figures, and why not the third."""
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "sweep.csv"
            csv.write_text("\n".join(l for l in REDUCTION_SAMPLE.read_text().splitlines()
                                     if ",CUB," not in l and ",CPU," not in l) + "\n")
            p = plot(csv, "--out", d, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no cub_sum rows", p.stdout)
            self.assertEqual(sorted(f.name for f in Path(d).glob("*.png")),
                             ["04_reduction_gbps_vs_n.png", "04_reduction_time_vs_n.png"])
            self.assertIn("not compared with the CPU", svg_text(Path(d) / "04_reduction_time_vs_n.svg"))

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
        # The system's Python gets the system's package, unless it is this interpreter under
        # another name (a virtual environment's python is a link to it): then it is listed once.
        if os.path.exists("/usr/bin/python3") and \
                os.path.realpath("/usr/bin/python3") != os.path.realpath(sys.executable):
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


class StreamsPlotTest(unittest.TestCase):
    """Lesson 05: time against chunks between the overlap bound and the sequential time, and
    the timeline of one traced call, from the samples of a GPU run. They come from an H100:
        ./sweep 05 --tree grader/tests/students/plain
        cp sweep-results/05_streams.csv tools/bench/samples/05_streams_h100.csv
        cp sweep-results/05_streams_timeline.csv tools/bench/samples/05_streams_timeline_h100.csv
    and these tests fail, saying so, when either is missing."""

    def setUp(self):
        missing = [p.name for p in (STREAMS_SAMPLE, STREAMS_TIMELINE_SAMPLE) if not p.exists()]
        if missing:
            self.fail(f"no lesson 05 sample ({', '.join(missing)} in tools/bench/samples/): "
                      "./sweep 05 on a GPU writes them (this class's docstring says how)")

    def test_streams_figures_from_its_samples(self):
        with tempfile.TemporaryDirectory() as out:
            p = plot(STREAMS_SAMPLE, STREAMS_TIMELINE_SAMPLE, "--out", out, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            written = sorted(path.name for path in Path(out).iterdir())
            self.assertEqual(written, [f"05_streams_{name}.{ext}" for name in STREAMS_FIGURES
                                       for ext in ("png", "svg")])
            for name in STREAMS_FIGURES:
                self.assertGreater((Path(out) / f"05_streams_{name}.png").stat().st_size, 10_000, name)
            rows = read_sweep(STREAMS_SAMPLE)
            gpu = rows[0]["gpu"]
            n = overlap.pipeline_n(rows)
            bound = overlap.bound_ms(overlap.stage_ms(rows, n))
            self.assertIsNotNone(bound, "the sample has no stage rows: it must come from a sweep with the transfers")
            chunks = svg_text(Path(out) / "05_streams_time_vs_chunks.svg")
            for text in ("overlap bound max(H2D, kernel, D2H)", "sequential H2D + kernel + D2H", "number of chunks",
                         "student, 1 stream", "student, 4 streams", "reference, 4 streams", gpu):
                self.assertIn(text, chunks)
            for name in ("student", "reference"):  # each best fraction of the bound, as overlap.py computes it
                best = overlap.best(rows, name, n)
                self.assertIn(f"best {name}: {overlap.describe_best(best, bound)}", chunks)
            timeline = svg_text(Path(out) / "05_streams_timeline.svg")
            records = read_timeline(STREAMS_TIMELINE_SAMPLE)
            for text in ("copy in", "kernels", "copy out", "stream 1", "student: returned after",
                         "reference: returned after", "time since process was called", gpu):
                self.assertIn(text, timeline)
            first = records[0]
            self.assertIn(f"process with {first['streams']} streams and {first['chunks']} chunks", timeline)

    def test_samples_are_one_gpu_run_with_what_the_figures_need(self):
        rows = read_sweep(STREAMS_SAMPLE)
        operations = {(r["implementation"], r["operation"]) for r in rows}
        for needed in (("student", "process"), ("reference", "process"), ("cudaMemcpy", "h2d_pinned"),
                       ("baseline", "transform"), ("cudaMemcpy", "d2h_pinned")):
            self.assertIn(needed, operations)
        records = read_timeline(STREAMS_TIMELINE_SAMPLE)
        self.assertEqual({r["implementation"] for r in records}, {"student", "reference"})
        self.assertEqual({r["gpu"] for r in records}, {rows[0]["gpu"]})
        for name in ("student", "reference"):
            kinds = [r["kind"] for r in records if r["implementation"] == name]
            chunks = records[0]["chunks"]
            self.assertEqual((kinds.count("h2d"), kinds.count("kernel"), kinds.count("d2h")), (chunks,) * 3, name)

    def test_the_timeline_beside_the_csv_is_drawn_with_it(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "05_streams.csv").write_text(STREAMS_SAMPLE.read_text())
            (Path(d) / "05_streams_timeline.csv").write_text(STREAMS_TIMELINE_SAMPLE.read_text())
            p = plot(Path(d) / "05_streams.csv")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sorted(f.name for f in (Path(d) / "figures").glob("*.png")),
                             [f"05_streams_{name}.png" for name in STREAMS_FIGURES])

    def test_without_the_stages_alone_there_is_no_bound_but_a_figure(self):
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "sweep.csv"
            csv.write_text("\n".join(l for l in STREAMS_SAMPLE.read_text().splitlines()
                                     if ",cudaMemcpy," not in l and ",baseline," not in l) + "\n")
            p = plot(csv, "--out", d, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual([f.name for f in Path(d).glob("*.png")], ["05_streams_time_vs_chunks.png"])
            self.assertIn("no overlap bound", svg_text(Path(d) / "05_streams_time_vs_chunks.svg"))

    def test_a_malformed_timeline_is_rejected_with_a_message(self):
        with tempfile.TemporaryDirectory() as d:
            lines = STREAMS_TIMELINE_SAMPLE.read_text().splitlines()
            fields = next(csvlib.reader([lines[3]]))
            fields[TIMELINE_COLUMNS.index("end_ms")] = "-5"
            path = Path(d) / "05_streams_timeline.csv"
            path.write_text("\n".join(lines[:3] + [",".join(fields)] + lines[4:]) + "\n")
            p = plot(path, "--out", d)
            self.assertEqual(p.returncode, 2)
            self.assertIn("line 4", p.stderr)
            self.assertIn("before it starts", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertEqual(list(Path(d).glob("*.png")), [])


class StreamsFiguresTest(unittest.TestCase):
    """Lesson 05's two figures from a tiny sweep and timeline written here (the samples' tests
    above need a GPU run first)."""

    def test_time_vs_chunks_and_the_timeline(self):
        gpu, date = "NVIDIA H100 80GB HBM3", "2026-11-22T00:00:00Z"
        n = 1 << 20

        def row(implementation, operation, block, mode, grid, ms):
            return (f"05_streams,{implementation},{operation},{n},{block},{mode},{grid},20,{ms},{ms},{ms},{8 * n},"
                    f"{2e3 * n},{8 * n / ms / 1e6},1,1,3000,{gpu},{date}")
        lines = [",".join(columns_for("streams")), row("cudaMemcpy", "h2d_pinned", "", "", "", 2.0),
                 row("baseline", "transform", "", "own", "", 2.0), row("cudaMemcpy", "d2h_pinned", "", "", "", 2.5)]
        for name, slower in (("student", 1.2), ("reference", 1.0)):
            for streams in (1, 4):
                lines += [row(name, "process", streams, "pipeline", c, (6.5 if streams == 1 else 2.5 + 4 / c) * slower)
                          for c in (1, 4, 16)]
        timeline = [",".join(TIMELINE_COLUMNS)]
        for name in ("student", "reference"):
            common = f"05_streams,{name},process,{n},4,16,8,"
            timeline.append(common + f"call,process,,0,18.2,0,{gpu},{date}")
            for c in range(16):
                for step, kind in enumerate(("h2d", "kernel", "d2h")):
                    timeline.append(common + f"{kind},x,{c % 4 + 1},{c + step},{c + step + 1},0,{gpu},{date}")
        timeline.append(f"05_streams,student,process,{n},4,16,8,memset,,1,0,0.5,64,{gpu},{date}")
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "05_streams.csv").write_text("\n".join(lines) + "\n")
            (Path(d) / "05_streams_timeline.csv").write_text("\n".join(timeline) + "\n")
            p = plot(Path(d) / "05_streams.csv", "--out", d, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sorted(f.name for f in Path(d).glob("*.png")),
                             [f"05_streams_{name}.png" for name in STREAMS_FIGURES])
            chunks = svg_text(Path(d) / "05_streams_time_vs_chunks.svg")
            for text in ("overlap bound max(H2D, kernel, D2H): 2.5 ms", "sequential H2D + kernel + D2H: 6.5 ms",
                         "best reference: 4 streams, 16 chunks: 2.75 ms, 91% of the bound",
                         "best student: 4 streams, 16 chunks: 3.3 ms, 76% of the bound", "student, 1 stream"):
                self.assertIn(text, chunks)
            timeline_text = svg_text(Path(d) / "05_streams_timeline.svg")
            # 16 steps of 1 ms for each of 3 lanes, 18 ms in all: 48 ms of work in 18 (the memset is other work).
            self.assertIn("copies in 16 + kernels 16 + copies out 16 = 48 ms of work in a GPU span of 18 ms",
                          timeline_text)
            for text in ("process with 4 streams and 16 chunks", "other copies and memsets", "stream 4"):
                self.assertIn(text, timeline_text)


MONTE_CARLO_FIGURES = ("pi_error_vs_n", "pi_rate_vs_n", "histogram_vs_bins")


def monte_carlo_csv(directory, **kinds_of_rows):
    """A SYNTHETIC lesson 07 sweep (test_sweep_tools.monte_carlo_rows: made up, not measured, for
    the cases the sample does not cover) written to `directory`/07_monte_carlo.csv."""
    path = Path(directory) / "07_monte_carlo.csv"
    path.write_text("\n".join([",".join(columns_for("monte_carlo"))] + monte_carlo_rows(**kinds_of_rows)) + "\n")
    return path


class MonteCarloFiguresTest(unittest.TestCase):
    """Lesson 07's figures, drawn from its H100 sample and from synthetic sweeps (rows left out)."""

    def test_every_figure_from_the_h100_sample(self):
        """The sample: the plain student and the reference at N = 1e2 .. 1e9, 16 seeds each; what the
        figures show is what was measured (the estimates spread as the standard error says, the
        device API faster than the host API at large N, the privatised histogram far faster than
        global atomics at every bins)."""
        rows = read_sweep(MONTE_CARLO_SAMPLE)
        for name in ("student", "reference"):
            pi = [r for r in rows if (r["implementation"], r["operation"]) == (name, "count_inside_circle")]
            self.assertEqual(len(pi), 15 * 16, name)
            big = [r for r in pi if r["n"] == 10 ** 9]
            p = math.pi / 4
            rms = math.sqrt(sum((4 * r["inside"] / r["n"] - math.pi) ** 2 for r in big) / len(big))
            self.assertLess(abs(math.log(rms / (4 * math.sqrt(p * (1 - p) / 10 ** 9)))), math.log(2), name)
            host = next(r for r in rows if r["operation"] == "host_api_pi" and r["n"] == 10 ** 9)
            self.assertLess(big[0]["median_ms"] * 1.4, host["median_ms"], name)
            for histogram in (r for r in rows if (r["implementation"], r["operation"]) == (name, "histogram")):
                atomics = next(r for r in rows if r["operation"] == "global_atomics_histogram"
                               and r["bins"] == histogram["bins"])
                self.assertLess(histogram["median_ms"] * 10, atomics["median_ms"], (name, histogram["bins"]))
        with tempfile.TemporaryDirectory() as out:
            p = plot(MONTE_CARLO_SAMPLE, "--out", out, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sorted(path.name for path in Path(out).iterdir()),
                             sorted(f"07_monte_carlo_{name}.{ext}" for name in MONTE_CARLO_FIGURES
                                    for ext in ("png", "svg")))
            error = svg_text(Path(out) / "07_monte_carlo_pi_error_vs_n.svg")
            for text in ("student: RMS error over 16 seeds (dots: each seed)", "reference: RMS error over 16 seeds",
                         "NVIDIA H100 80GB HBM3"):
                self.assertIn(text, error)
            bins = svg_text(Path(out) / "07_monte_carlo_histogram_vs_bins.svg")
            self.assertIn("one global atomicAdd per value (global_atomics_histogram)", bins)

    def test_every_figure_with_what_it_shows(self):
        with tempfile.TemporaryDirectory() as d:
            p = plot(monte_carlo_csv(d), "--out", d, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sorted(f.name for f in Path(d).glob("*.png")),
                             sorted(f"07_monte_carlo_{name}.png" for name in MONTE_CARLO_FIGURES))
            written = [l for l in p.stdout.splitlines() if l.startswith("wrote") and l.endswith(".png")]
            self.assertEqual([Path(l.split()[-1]).stem for l in written],
                             [f"07_monte_carlo_{name}" for name in MONTE_CARLO_FIGURES])  # the declared order
            for name in MONTE_CARLO_FIGURES:
                self.assertGreater((Path(d) / f"07_monte_carlo_{name}.png").stat().st_size, 10_000, name)
            error = svg_text(Path(d) / "07_monte_carlo_pi_error_vs_n.svg")
            for text in ("student: RMS error over 4 seeds (dots: each seed)", "reference: RMS error over 4 seeds",
                         "standard error 4 sqrt(p(1 - p) / N), p = π/4", "error / standard error",
                         "the error of the estimate against N", "NVIDIA H100 80GB HBM3"):
                self.assertIn(text, error)
            rate = svg_text(Path(d) / "07_monte_carlo_pi_rate_vs_n.svg")
            for text in ("count_inside_circle, student (cuRAND device API)", "count_inside_circle, reference",
                         "cuRAND host API: 2N uniforms into memory, then a counting kernel",
                         "CPU, one thread (xoshiro256**)", "CPU, all threads (xoshiro256** each, std::thread)",
                         "points per second (N / median time)", "with the host's steady clock"):
                self.assertIn(text, rate)
            bins = svg_text(Path(d) / "07_monte_carlo_histogram_vs_bins.svg")
            for text in ("histogram, student", "histogram, reference",
                         "one global atomicAdd per value (global_atomics_histogram)",
                         "reading the 6.71e7 floats at the copy bandwidth (3000 GB/s)", "number of bins",
                         "histogram of n = 6.71e7 energies"):
                self.assertIn(text, bins)

    def test_a_student_whose_functions_were_not_timed(self):
        """The student's count_inside_circle and histogram were wrong (no rows): the figures show the
        reference and the baselines."""
        with tempfile.TemporaryDirectory() as d:
            p = plot(monte_carlo_csv(d, implementations=("reference",)), "--out", d, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(list(Path(d).glob("*.png"))), 3)
            error = svg_text(Path(d) / "07_monte_carlo_pi_error_vs_n.svg")
            self.assertIn("reference: RMS error", error)
            self.assertNotIn("student", error)

    def test_without_rows_for_a_figure_it_says_why_not(self):
        with tempfile.TemporaryDirectory() as d:
            # The reference's run with --no-transfers, and --skip count_inside_circle: histograms only.
            csv = Path(d) / "07_monte_carlo.csv"
            csv.write_text("\n".join([",".join(columns_for("monte_carlo"))] + [
                l for l in monte_carlo_rows(("reference",), baselines=False) if ",histogram," in l]) + "\n")
            p = plot(csv, "--out", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no count_inside_circle rows", p.stdout)
            self.assertIn("no pi_rate_vs_n figure", p.stdout)
            self.assertEqual([f.name for f in Path(d).glob("*.png")], ["07_monte_carlo_histogram_vs_bins.png"])
            # Pi without histograms: the other two.
            monte_carlo_csv(d, histograms=False)
            for old in Path(d).glob("*.png"):
                old.unlink()
            p = plot(Path(d) / "07_monte_carlo.csv", "--out", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no histogram rows", p.stdout)
            self.assertEqual(sorted(f.name for f in Path(d).glob("*.png")),
                             ["07_monte_carlo_pi_error_vs_n.png", "07_monte_carlo_pi_rate_vs_n.png"])


def reduction_csv(path, times):
    """A tiny lesson 04 sweep: `times` maps operation to {n: median ms}."""
    lines = ["# a test's sweep", ",".join(COLUMNS)]
    implementations = {"reduce_sum": "student", "cub_sum": "CUB", "gpu_with_transfer": "CUB"}
    for operation, series in times.items():
        for n, ms in series.items():
            gbps = 4 * n / (ms * 1e6)
            lines.append(f"04_reduction,{implementations.get(operation, 'CPU')},{operation},{n},,own,,5,{ms},{ms},"
                         f"{ms},{4 * n},{n},{gbps},{gbps / 4},{gbps / 30},3000,NVIDIA H100 80GB HBM3,2026-11-22T00:00:00Z")
    Path(path).write_text("\n".join(lines) + "\n")


class CrossoverTest(unittest.TestCase):
    """crossover.py: the smallest n from which the GPU beats the fastest CPU row for good."""

    def test_from_the_first_win_that_lasts(self):
        cpu = {10: 1.0, 100: 10.0, 1000: 100.0, 10000: 1000.0}
        self.assertEqual(crossover.crossover({10: 5.0, 100: 5.0, 1000: 6.0, 10000: 9.0}, cpu), 100)
        self.assertEqual(crossover.crossover({10: 0.5, 100: 5.0, 1000: 6.0, 10000: 9.0}, cpu), 10)  # wins everywhere
        # A win that does not last is no crossover: the later one is.
        self.assertEqual(crossover.crossover({10: 0.5, 100: 20.0, 1000: 6.0, 10000: 9.0}, cpu), 1000)

    def test_never(self):
        cpu = {10: 1.0, 100: 10.0, 1000: 100.0}
        self.assertIsNone(crossover.crossover({10: 2.0, 100: 20.0, 1000: 200.0}, cpu))
        self.assertIsNone(crossover.crossover({10: 2.0, 100: 10.0, 1000: 100.0}, cpu))  # a tie is no win
        self.assertIsNone(crossover.crossover({10: 2.0, 100: 5.0, 1000: 200.0}, cpu))  # won once, lost at the end
        self.assertIn("faster only at n = 100",
                      crossover.describe("gpu", {10: 2.0, 100: 5.0, 1000: 200.0}, cpu))
        self.assertIn("does not beat the fastest CPU from any n on, up to n = 1e3",
                      crossover.describe("gpu", {10: 2.0, 100: 20.0, 1000: 200.0}, cpu))

    def test_only_sizes_measured_for_both_count(self):
        cpu = {10: 1.0, 100: 10.0}  # the CPU rows stop early
        self.assertEqual(crossover.crossover({10: 5.0, 100: 5.0, 1000: 50.0, 1e4: 500.0}, cpu), 100)
        self.assertIsNone(crossover.crossover({1000: 5.0}, cpu))
        self.assertIn("not compared", crossover.describe("gpu", {1000: 5.0}, cpu))

    def test_on_a_sweep_against_the_fastest_cpu_row_at_each_n(self):
        """The crossover is taken against the faster CPU row at each n: one thread wins at small n,
        all threads at large n, so neither alone gives the right answer. The figure marks it."""
        times = {"cub_sum": {1000: 0.01, 10000: 0.01, 100000: 0.012, 1000000: 0.03},
                 "cpu_one_thread": {1000: 0.001, 10000: 0.011, 100000: 0.11, 1000000: 1.1},
                 "cpu_all_threads": {1000: 0.1, 10000: 0.1, 100000: 0.005, 1000000: 0.04},
                 "gpu_with_transfer": {1000: 0.05, 10000: 0.06, 100000: 0.1, 1000000: 0.5},
                 "reduce_sum": {1000: 0.02, 10000: 0.02, 100000: 0.02, 1000000: 0.05}}
        with tempfile.TemporaryDirectory() as d:
            csv = Path(d) / "04_reduction.csv"
            reduction_csv(csv, times)
            rows = read_sweep(csv)
            cpu = crossover.fastest_ms(rows, crossover.CPU_OPERATIONS)
            self.assertEqual(cpu, {1000: 0.001, 10000: 0.011, 100000: 0.005, 1000000: 0.04})
            label, kernel = crossover.kernel_series(rows)
            self.assertEqual(label, "the GPU kernel (cub_sum)")
            self.assertEqual(crossover.crossover(kernel, cpu), 1000000)
            self.assertEqual(crossover.crossover(times["cub_sum"], times["cpu_one_thread"]), 10000)  # one row alone
            self.assertIsNone(crossover.crossover(crossover.fastest_ms(rows, [crossover.WITH_TRANSFER]), cpu))
            self.assertIsNone(crossover.crossover(crossover.fastest_ms(rows, ["reduce_sum"], "student"), cpu))
            p = plot(csv, "--out", d, "--format", "svg")
            self.assertEqual(p.returncode, 0, p.stderr)
            svg = svg_text(Path(d) / "04_reduction_time_vs_n.svg")
            self.assertIn("the CPU from n = 1e6", svg)
            self.assertIn("the GPU with the copy (gpu_with_transfer) does not beat the fastest CPU", svg)

    def test_without_cub_the_reference_reduce_sum_is_the_kernel(self):
        rows = [{"operation": "reduce_sum", "implementation": name, "n": 10, "median_ms": ms}
                for name, ms in (("student", 2.0), ("reference", 1.0))]
        self.assertEqual(crossover.kernel_series(rows), ("the GPU kernel (reference reduce_sum)", {10: 1.0}))
        self.assertEqual(crossover.kernel_series(rows[:1]), ("the GPU kernel (student reduce_sum)", {10: 2.0}))


if __name__ == "__main__":
    unittest.main()
