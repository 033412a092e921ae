"""./plot: turn a sweep CSV (written by ./sweep) into figures for a report.

It draws the figures that the lesson's "sweep" in lessons/manifest.json names, with the drawing
code of the sweep's kind ({"kind": "bandwidth", "figures": ["time_vs_n", ...]}), and never
guesses from the CSV's rows: rows of a lesson that declares no sweep are an error (exit 2).
The kinds and their figures:
For a memory-bound lesson such as 02_multiply_add ("bandwidth"):
  time_vs_n             median kernel time against n (log-log), one line per block size,
                        one panel per implementation, with the copy-bandwidth limit
  bandwidth_vs_block    effective bandwidth against block size at the largest n, per grid
                        mode and implementation, with the measured copy bandwidth
  student_vs_reference  the best configuration's share of the copy bandwidth against n
  kernel_vs_transfer    kernel time against the host-device copies of its data (pageable
                        and pinned), against n
For a compute-bound lesson such as 03_matmul ("gflops", rows for cuBLAS FP32):
  gflops_vs_n           GFLOP/s against N for each function, student and reference, with
                        cuBLAS FP32 and TF32 measured in the same run
  fraction_of_cublas    each function's share of cuBLAS FP32 at the largest N, student beside
                        reference
For the reductions of 04_reduction ("reduction"):
  time_vs_n             every sum's time against n (log-log): each function, student solid and
                        reference dashed, CUB's kernel and CUB after copying the data from host
                        memory in black, the CPU (one thread, all threads) in grey, and where
                        the GPU overtakes the fastest CPU marked (see crossover.py)
  gbps_vs_n             the same as GB/s (n x 4 bytes / time), with the measured copy bandwidth
  fraction_of_cub       each function's GB/s as a share of cub::DeviceReduce::Sum's at the
                        largest n, student beside reference
For the functions of 06_debugging_profiling on an n x n grid ("grid"):
  gbps_vs_n             each function's GB/s (8 n^2 bytes / time) against n, student solid and
                        reference dashed, task 5's kernel as the lesson gives it ("given"),
                        and the device-to-device copy of the same grid in black
  fraction_of_copy      each function's GB/s as a share of the copy's at the largest n, student
                        beside reference
For the streams pipeline of 05_streams ("streams"):
  time_vs_chunks        process's time against the number of chunks, one line per number of
                        streams, student solid and reference dashed, with the overlap bound
                        max(H2D, kernel, D2H) and the sequential time H2D + kernel + D2H, and
                        each implementation's best fraction of the bound (see overlap.py)
  timeline              from the timeline CSV (sweep-results/05_streams_timeline.csv, drawn
                        with 05_streams.csv when it lies beside it, or given itself): one
                        traced call of process, student and reference in two panels, a lane
                        each for the copies in, the kernels and the copies out (the call
                        itself above them), coloured by stream, time in ms since the call
For the Monte Carlo of 07_monte_carlo ("monte_carlo"):
  pi_error_vs_n         the error of the estimate 4 inside / N against N (log-log): each seed's
                        |error| as a dot, the RMS over the seeds as a line, student and reference,
                        with the standard error 4 sqrt(p (1 - p) / N), p = pi / 4; below, each
                        seed's signed error in standard errors, which stays within a few of 0
  pi_rate_vs_n          points per second (N / median time) against N: count_inside_circle,
                        student solid and reference dashed, cuRAND's host API with its counting
                        kernel in black, the CPU (xoshiro256**, one thread and all threads) in grey
  histogram_vs_bins     the histogram's time against its number of bins at the timed n, student
                        solid and reference dashed, one global atomic per value in black, and
                        the time to read the n floats at the measured copy bandwidth
Each is written as PNG and as PDF (or SVG), with the GPU's name and the units on it, and,
when ./sweep left functions out because they crashed or hung, their names in the footnote.
Exit codes: 0 written; 2 the CSV is not a sweep CSV (the message says why); 3 matplotlib
is missing."""
from __future__ import annotations

import argparse
import sys
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "grader"))
import crossover  # noqa: E402
from driver.manifest import ManifestError, Sweep, load_manifest  # noqa: E402
import overlap  # noqa: E402
import sweep_schema  # noqa: E402
from sweep_schema import (CsvError, TRANSFERS, is_timeline, is_transfer, left_out, read_sweep,  # noqa: E402
                          read_timeline)

EXIT_OK, EXIT_BAD_CSV, EXIT_NO_MATPLOTLIB = 0, 2, 3
IMPLEMENTATION_ORDER = ("student", "reference")
TRANSFER_LABELS = {"h2d_pageable": "host → device, pageable", "h2d_pinned": "host → device, pinned",
                   "d2h_pageable": "device → host, pageable", "d2h_pinned": "device → host, pinned"}


def import_pyplot():
    """matplotlib.pyplot with a file-only backend, or None when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 200, "font.size": 9, "axes.grid": True,
                         "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
                         "legend.frameon": False, "savefig.bbox": "tight"})
    return plt


def implementations(rows: List[Dict]) -> List[str]:
    return sorted({r["implementation"] for r in rows if not is_transfer(r)},
                  key=lambda s: (IMPLEMENTATION_ORDER.index(s) if s in IMPLEMENTATION_ORDER else 99, s))


def best_per_n(rows: List[Dict], implementation: Optional[str] = None) -> List[Dict]:
    """For each n, the kernel row (of `implementation`, when given) with the shortest median time."""
    best: Dict[int, Dict] = {}
    for r in rows:
        if implementation in (None, r["implementation"]) and not is_transfer(r):
            if r["n"] not in best or r["median_ms"] < best[r["n"]]["median_ms"]:
                best[r["n"]] = r
    return [best[n] for n in sorted(best)]


class Figures:
    """Draws one lesson's figures from its rows and saves each in two formats."""

    def __init__(self, plt, rows: List[Dict], out_dir: Path, vector_format: str, grid_mode: Optional[str],
                 left_out_notes: Sequence[Dict[str, str]] = ()):
        self.plt, self.rows, self.out_dir, self.vector_format = plt, rows, out_dir, vector_format
        self.left_out = left_out_notes
        self.kernels = [r for r in rows if not is_transfer(r)]
        self.transfers = [r for r in rows if is_transfer(r)]
        first = self.kernels[0]
        self.lesson, self.gpu, self.date = first["lesson"], first["gpu"], first["date"]
        self.copy_gbps = max(r["copy_bandwidth_gbps"] for r in rows)
        self.operation = first["operation"]
        modes = sorted({r["grid_mode"] for r in self.kernels})
        self.grid_mode = grid_mode if grid_mode in modes else ("cover" if "cover" in modes else modes[0])
        self.written: List[Path] = []

    def _finish(self, fig, name: str, title: str) -> None:
        fig.suptitle(f"{title}\n{self.gpu}", fontsize=10)
        footnote = f"{self.lesson}, swept {self.date}; median of the samples, bars from min to max"
        if self.left_out:  # a missing line is then no mystery: "student matmul_challenge (crashed)"
            footnote += "\nleft out: " + ", ".join(f"{n['implementation']} {n['operation']} "
                                                   f"({n['why'].split()[0].rstrip(':')})" for n in self.left_out)
        fig.text(0.99, -0.01, footnote, ha="right", va="top", fontsize=6, color="0.4")
        for ext in ("png", self.vector_format):
            path = self.out_dir / f"{self.lesson}_{name}.{ext}"
            fig.savefig(path)
            self.written.append(path)
        self.plt.close(fig)

    @staticmethod
    def _errorbars(ax, xs, rows, **style):
        ys = [r["median_ms"] for r in rows]
        low = [r["median_ms"] - r["min_ms"] for r in rows]
        high = [r["max_ms"] - r["median_ms"] for r in rows]
        return ax.errorbar(xs, ys, yerr=[low, high], capsize=1.5, elinewidth=0.6, markersize=3, **style)

    def _copy_limit(self, ax, ns: List[int]) -> None:
        """The time the kernel's bytes take at the measured copy bandwidth: no memory-bound
        kernel can be faster."""
        bytes_per_element = self.kernels[0]["bytes"] / self.kernels[0]["n"]
        ax.plot(ns, [bytes_per_element * n / (self.copy_gbps * 1e9) * 1e3 for n in ns], "k--", linewidth=0.8,
                label=f"copy-bandwidth limit ({self.copy_gbps:.0f} GB/s)")

    def time_vs_n(self) -> None:
        names = implementations(self.kernels)
        fig, axes = self.plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.8), sharey=True, squeeze=False,
                                      layout="constrained")
        blocks = sorted({r["block"] for r in self.kernels})
        cmap = self.plt.get_cmap("viridis")
        for ax, name in zip(axes[0], names):
            for k, block in enumerate(blocks):
                series = sorted((r for r in self.kernels if r["implementation"] == name and r["block"] == block
                                 and r["grid_mode"] == self.grid_mode), key=lambda r: r["n"])
                if series:
                    self._errorbars(ax, [r["n"] for r in series], series, marker="o", linewidth=1,
                                    color=cmap(k / max(len(blocks) - 1, 1)), label=f"block {block}")
            self._copy_limit(ax, sorted({r["n"] for r in self.kernels}))
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("n (elements)")
            ax.set_title(f"{name}, grid mode '{self.grid_mode}'", fontsize=9)
        axes[0][0].set_ylabel("kernel time (ms)")
        axes[0][-1].legend(fontsize=7, loc="upper left")
        self._finish(fig, "time_vs_n", f"{self.operation}: kernel time against n")

    def bandwidth_vs_block(self) -> None:
        largest = max(r["n"] for r in self.kernels)
        at_largest = [r for r in self.kernels if r["n"] == largest]
        fig, ax = self.plt.subplots(figsize=(5.2, 3.6))
        styles = {"student": "-", "reference": "--"}
        markers = "osD^v"
        for name in implementations(at_largest):
            for j, mode in enumerate(sorted({r["grid_mode"] for r in at_largest})):
                series = sorted((r for r in at_largest if r["implementation"] == name and r["grid_mode"] == mode),
                                key=lambda r: r["block"])
                if series:
                    ax.plot([r["block"] for r in series], [r["gbps"] for r in series], styles.get(name, ":"),
                            marker=markers[j % len(markers)], markersize=4, color=f"C{j}",
                            label=f"{name}, grid '{mode}'")
        ax.axhline(self.copy_gbps, color="k", linestyle=":", linewidth=0.8,
                   label=f"measured copy bandwidth ({self.copy_gbps:.0f} GB/s)")
        ax.set_xscale("log", base=2)
        blocks = sorted({r["block"] for r in at_largest})
        ax.set_xticks(blocks)
        ax.set_xticklabels([str(b) for b in blocks])
        ax.set_ylim(0, self.copy_gbps * 1.1)
        ax.set_xlabel("threads per block")
        ax.set_ylabel("effective bandwidth (GB/s)")
        ax.legend(fontsize=7, loc="lower right")
        self._finish(fig, "bandwidth_vs_block", f"{self.operation}: bandwidth against block size at n = {largest:.3g}")

    def student_vs_reference(self) -> None:
        fig, ax = self.plt.subplots(figsize=(5.2, 3.6))
        highest = 100.0
        for i, name in enumerate(implementations(self.kernels)):
            best = best_per_n(self.kernels, name)
            top = best[-1]
            highest = max([highest] + [r["pct_of_copy_bandwidth"] for r in best])
            ax.plot([r["n"] for r in best], [r["pct_of_copy_bandwidth"] for r in best], marker="o", markersize=4,
                    color=f"C{i}", label=f"{name}: {top['pct_of_copy_bandwidth']:.0f}% at n = {top['n']:.3g} "
                                         f"(block {top['block']}, grid '{top['grid_mode']}')")
        ax.axhline(100, color="k", linestyle=":", linewidth=0.8, label="measured copy bandwidth")
        ax.set_xscale("log")
        ax.set_ylim(0, highest * 1.1)
        ax.set_xlabel("n (elements)")
        ax.set_ylabel("effective bandwidth (% of copy bandwidth)")
        ax.legend(fontsize=7, loc="lower right", title="best launch configuration per n", title_fontsize=7)
        self._finish(fig, "student_vs_reference", f"{self.operation}: student against reference, best of each")

    def kernel_vs_transfer(self) -> bool:
        if not self.transfers:
            return False
        fig, ax = self.plt.subplots(figsize=(5.2, 3.6))
        for i, name in enumerate(implementations(self.kernels)):
            best = best_per_n(self.kernels, name)
            self._errorbars(ax, [r["n"] for r in best], best, marker="o", linewidth=1.4, color=f"C{i}",
                            label=f"kernel, {name} (best)")
        by_op = defaultdict(list)
        for r in self.transfers:
            by_op[r["operation"]].append(r)
        for k, op in enumerate(t for t in TRANSFERS if t in by_op):
            series = sorted(by_op[op], key=lambda r: r["n"])
            self._errorbars(ax, [r["n"] for r in series], series, marker="s^v<"[k], linewidth=1,
                            linestyle="--" if "pageable" in op else "-", color=f"C{k + 2}",
                            label=f"{TRANSFER_LABELS[op]} ({series[-1]['gbps']:.0f} GB/s)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n (elements)")
        ax.set_ylabel("time (ms)")
        ax.legend(fontsize=7, loc="upper left")
        self._finish(fig, "kernel_vs_transfer", f"{self.operation}: the kernel against copying its data")
        return True


class GflopsFigures(Figures):
    """The figures of a compute-bound lesson such as 03_matmul, where each function computes
    the same product and the yardstick is cuBLAS FP32, measured in the same run."""

    STYLES = {"student": "-", "reference": "--", "cuBLAS": "-"}
    LIBRARY = {"cublas_fp32": ("k", "o", "cuBLAS FP32"), "cublas_tf32": ("0.45", "s", "cuBLAS TF32 (tensor cores)")}

    def _operations(self) -> List[str]:
        return list(dict.fromkeys(r["operation"] for r in self.kernels if r["implementation"] != "cuBLAS"))

    def _series(self, implementation: str, operation: str) -> List[Dict]:
        """The fastest configuration per n of one function of one implementation."""
        return best_per_n([r for r in self.kernels if r["operation"] == operation], implementation)

    def gflops_vs_n(self) -> None:
        fig, ax = self.plt.subplots(figsize=(6.2, 4.2))
        for k, operation in enumerate(self._operations()):
            for name in implementations(self.kernels):
                series = self._series(name, operation)
                if series and name != "cuBLAS":
                    self._gflops_errorbars(ax, series, marker="o", linestyle=self.STYLES.get(name, ":"),
                                           color=f"C{k}", label=f"{operation}, {name}")
        for operation, (color, marker, label) in self.LIBRARY.items():
            series = self._series("cuBLAS", operation)
            if series:
                self._gflops_errorbars(ax, series, marker=marker, color=color, linewidth=1.4, label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ns = sorted({r["n"] for r in self.kernels})
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.set_xlabel("N (C = A B, all N x N)")
        ax.set_ylabel("GFLOP/s (2 N³ / median time)")
        ax.legend(fontsize=6.5, loc="upper left", ncol=2)
        self._finish(fig, "gflops_vs_n", "matrix multiply: GFLOP/s against N")

    @staticmethod
    def _gflops_errorbars(ax, rows, **style):
        ys = [r["gflops"] for r in rows]
        low = [r["gflops"] - r["flops"] / (r["max_ms"] * 1e6) for r in rows]  # the slowest sample
        high = [r["flops"] / (r["min_ms"] * 1e6) - r["gflops"] for r in rows]
        return ax.errorbar([r["n"] for r in rows], ys, yerr=[low, high], capsize=1.5, elinewidth=0.6,
                           markersize=3, **style)

    def fraction_of_cublas(self) -> bool:
        """Each function's share of cuBLAS FP32 at the largest N, student beside reference."""
        largest = max(r["n"] for r in self.kernels)
        fp32 = self._series("cuBLAS", "cublas_fp32")
        fp32 = next((r["gflops"] for r in fp32 if r["n"] == largest), None)
        if not fp32:
            return False
        names = [n for n in implementations(self.kernels) if n != "cuBLAS"]
        operations = self._operations()
        fig, ax = self.plt.subplots(figsize=(6.2, 3.8))
        width = 0.8 / max(len(names), 1)
        for i, name in enumerate(names):
            xs, heights = [], []
            for k, operation in enumerate(operations):
                row = next((r for r in self._series(name, operation) if r["n"] == largest), None)
                if row:
                    xs.append(k + (i - (len(names) - 1) / 2) * width)
                    heights.append(100 * row["gflops"] / fp32)
            bars = ax.bar(xs, heights, width=width * 0.95, color=f"C{i}", label=name)
            ax.bar_label(bars, fmt="%.0f%%", fontsize=7, padding=1)
        tf32 = next((r["gflops"] for r in self._series("cuBLAS", "cublas_tf32") if r["n"] == largest), None)
        ax.axhline(100, color="k", linestyle=":", linewidth=0.8, label=f"cuBLAS FP32 ({fp32:.0f} GFLOP/s)")
        if tf32:
            ax.text(len(operations) - 0.5, 113, f"cuBLAS TF32: {100 * tf32 / fp32:.0f}% (off the chart)",
                    ha="right", va="bottom", fontsize=7, color="0.3")
        ax.set_xticks(range(len(operations)))
        ax.set_xticklabels(operations, fontsize=8)
        ax.set_ylim(0, 120)
        ax.set_ylabel(f"% of cuBLAS FP32 at N = {largest}")
        ax.legend(fontsize=7, loc="upper left")
        self._finish(fig, "fraction_of_cublas", f"matrix multiply at N = {largest}: share of cuBLAS FP32")
        return True


class ReductionFigures(Figures):
    """The figures of 04_reduction, where every row sums the same n floats: the lesson's
    functions, student (solid) beside reference (dashed), against CUB and the CPU."""

    STYLES = {"student": "-", "reference": "--"}
    BASELINES = {  # operation: colour, line style, marker, label
        crossover.KERNEL: ("k", "-", "o", "CUB DeviceReduce::Sum, the kernel alone"),
        crossover.WITH_TRANSFER: ("k", ":", "s", "CUB after copying the data from pageable host memory"),
        "cpu_one_thread": ("0.55", "-", "v", "CPU, one thread (plain float64 loop)"),
        "cpu_all_threads": ("0.55", "--", "^", "CPU, all threads"),
    }

    def _functions(self) -> List[str]:
        return [op for op in dict.fromkeys(r["operation"] for r in self.kernels) if op not in self.BASELINES]

    def _series(self, operation: str, implementation: Optional[str] = None) -> List[Dict]:
        return best_per_n([r for r in self.kernels if r["operation"] == operation], implementation)

    def _draw(self, ax, rows: List[Dict], gbps: bool, **style) -> None:
        """Time (or GB/s) against n, bars from the fastest to the slowest sample."""
        if not gbps:
            self._errorbars(ax, [r["n"] for r in rows], rows, **style)
            return
        ys = [r["gbps"] for r in rows]
        low = [r["gbps"] - r["bytes"] / (r["max_ms"] * 1e6) for r in rows]
        high = [r["bytes"] / (r["min_ms"] * 1e6) - r["gbps"] for r in rows]
        ax.errorbar([r["n"] for r in rows], ys, yerr=[low, high], capsize=1.5, elinewidth=0.6, markersize=3, **style)

    def _every_sum(self, gbps: bool):
        """A figure with one line per function and implementation, and one per baseline."""
        fig, ax = self.plt.subplots(figsize=(6.4, 4.2))
        for k, operation in enumerate(self._functions()):
            for name in implementations(self.kernels):
                series = self._series(operation, name)
                if series and name not in ("CUB", "CPU"):
                    self._draw(ax, series, gbps, marker="o", linewidth=1, linestyle=self.STYLES.get(name, "-."),
                               color=f"C{k}", label=f"{operation}, {name}")
        for operation, (color, style, marker, label) in self.BASELINES.items():
            series = self._series(operation)
            if series:
                self._draw(ax, series, gbps, marker=marker, linewidth=1.3, linestyle=style, color=color, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n (float32 elements summed)")
        ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return fig, ax

    def _mark_crossovers(self, ax) -> None:
        """A vertical line where the GPU overtakes the fastest CPU row for good, and the verdicts."""
        cpu = crossover.fastest_ms(self.kernels, crossover.CPU_OPERATIONS)
        kernel_label, kernel = crossover.kernel_series(self.kernels)
        transfer = crossover.fastest_ms(self.kernels, [crossover.WITH_TRANSFER])
        verdicts = []
        for label, gpu, short, color in ((kernel_label, kernel, "GPU kernel", "C4"),
                                         ("the GPU with the copy (gpu_with_transfer)", transfer, "GPU with the copy",
                                          "C5")):
            if not gpu:
                continue
            n = crossover.crossover(gpu, cpu)
            if n is not None:
                ax.axvline(n, color=color, linestyle="-.", linewidth=1)
                ax.text(n * 1.1, 0.98, f"{short} faster than\nthe CPU from n = {crossover.format_n(n)}", color=color,
                        fontsize=7, va="top", ha="left", transform=ax.get_xaxis_transform())
            verdicts.append(crossover.describe(label, gpu, cpu))
        verdicts.append("Timed with CUDA events, L2 flushed: the GPU kernels;\nwith the host clock: the CPU, and the "
                        "GPU with the copy")
        ax.text(1.02, 0.0, "\n".join(textwrap.fill(v, 60) for v in verdicts), fontsize=6.5, color="0.25",
                ha="left", va="bottom", transform=ax.transAxes)

    def time_vs_n(self) -> None:
        fig, ax = self._every_sum(gbps=False)
        self._mark_crossovers(ax)
        ax.set_ylabel("time (ms), median")
        self._finish(fig, "time_vs_n", "sum of n floats: time against n")

    def gbps_vs_n(self) -> None:
        fig, ax = self._every_sum(gbps=True)
        ax.axhline(self.copy_gbps, color="k", linestyle=(0, (1, 3)), linewidth=0.8,
                   label=f"device copy bandwidth, read + write ({self.copy_gbps:.0f} GB/s)")
        ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_ylabel("GB/s (n x 4 bytes / median time)")
        self._finish(fig, "gbps_vs_n", "sum of n floats: bandwidth against n")

    def _shares_at(self, largest: int, yardstick_gbps: float, exclude: Sequence[str]):
        """A bar chart of each function's GB/s at n = `largest` as a % of `yardstick_gbps`, an
        implementation beside the other (those in `exclude`, the yardstick's, left out); a function
        of the student or the reference with no row there (wrong, crashed, not done, or not swept
        this far) marked "not timed"."""
        names = [n for n in implementations(self.kernels) if n not in exclude]
        operations = self._functions()
        # Operations only a baseline has (lesson 06's kernel as given): nothing of the student's is missing there.
        baseline_only = {op for op in operations
                         if all(r["implementation"] not in IMPLEMENTATION_ORDER for r in self.kernels if r["operation"] == op)}
        fig, ax = self.plt.subplots(figsize=(6.2 if len(operations) < 5 else 7.2, 3.8))
        width = 0.8 / max(len(names), 1)
        highest = 100.0
        for i, name in enumerate(names):
            xs, heights = [], []
            for k, operation in enumerate(operations):
                x = k + (i - (len(names) - 1) / 2) * width
                row = next((r for r in self._series(operation, name) if r["n"] == largest), None)
                if row:
                    xs.append(x)
                    heights.append(100 * row["gbps"] / yardstick_gbps)
                elif name in IMPLEMENTATION_ORDER and operation not in baseline_only:
                    ax.text(x, 2, "not\ntimed", ha="center", va="bottom", fontsize=6.5, color="0.4")
            highest = max([highest] + heights)
            bars = ax.bar(xs, heights, width=width * 0.95, color=f"C{i}", label=name)
            ax.bar_label(bars, fmt="%.0f%%", fontsize=7, padding=1)
        ax.set_xticks(range(len(operations)))
        ax.set_ylim(0, highest * 1.3)  # the legend's band above the bars
        return fig, ax, operations

    def fraction_of_cub(self) -> bool:
        """Each function's GB/s at the largest n that CUB was timed at, as a share of CUB's."""
        cub = self._series(crossover.KERNEL)
        if not cub:
            return False
        largest, cub_gbps = cub[-1]["n"], cub[-1]["gbps"]
        fig, ax, operations = self._shares_at(largest, cub_gbps, ("CUB", "CPU"))
        ax.axhline(100, color="k", linestyle=":", linewidth=0.8, label=f"cub::DeviceReduce::Sum ({cub_gbps:.0f} GB/s)")
        ax.set_xticklabels(operations, fontsize=8)
        ax.set_ylabel(f"% of CUB's GB/s at n = {crossover.format_n(largest)}")
        ax.legend(fontsize=7, loc="upper left", ncol=3)
        self._finish(fig, "fraction_of_cub", f"sum of n = {crossover.format_n(largest)} floats: share of CUB")
        return True


class GridFigures(ReductionFigures):
    """The figures of 06_debugging_profiling: each function of the lesson on an n x n grid of
    floats (8 bytes a point), student (solid) beside reference (dashed), against the
    device-to-device copy of the same grid."""

    COPY = "copy"
    BASELINES = {COPY: ("k", "-", "o", "cudaMemcpy device to device, the same bytes")}

    def gbps_vs_n(self) -> None:
        fig, ax = self._every_sum(gbps=True)
        ax.set_xscale("log", base=2)
        ax.set_yscale("linear")
        ax.set_xlabel("n (an n x n grid of floats)")
        ax.set_ylabel("GB/s (8 n\u00b2 bytes / median time)")
        self._finish(fig, "gbps_vs_n", "lesson 06 on an n x n grid: bandwidth against n")

    def fraction_of_copy(self) -> bool:
        """Each function's GB/s at the largest n the copy was timed at, as a share of the copy's."""
        copy = self._series(self.COPY)
        if not copy:
            return False
        largest, copy_gbps = copy[-1]["n"], copy[-1]["gbps"]
        fig, ax, operations = self._shares_at(largest, copy_gbps, ("cudaMemcpy",))
        ax.axhline(100, color="k", linestyle=":", linewidth=0.8, label=f"device-to-device copy ({copy_gbps:.0f} GB/s)")
        ax.set_xticklabels([op.replace("_", "_\n", 1) for op in operations], fontsize=7)
        ax.set_ylabel(f"% of the copy's GB/s at n = {largest}")
        ax.legend(fontsize=7, loc="upper left", ncol=3)
        self._finish(fig, "fraction_of_copy", f"lesson 06 on a {largest} x {largest} grid: share of the copy bandwidth")
        return True


class StreamsFigures(Figures):
    """The figures of 05_streams: process, the chunked pipeline, against the number of chunks
    and streams, between the overlap bound and the sequential time (overlap.py)."""

    STYLES = {"student": "-", "reference": "--"}

    def time_vs_chunks(self) -> None:
        n = overlap.pipeline_n(self.rows)
        stages = overlap.stage_ms(self.rows, n)
        bound, sequential = overlap.bound_ms(stages), overlap.sequential_ms(stages)
        names = [name for name in implementations(self.kernels) if overlap.pipelines(self.rows, name, n)]
        streams = sorted({r["streams"] for name in names for r in overlap.pipelines(self.rows, name, n)})
        chunks = sorted({r["chunks"] for name in names for r in overlap.pipelines(self.rows, name, n)})
        fig, ax = self.plt.subplots(figsize=(6.4, 4.2))
        cmap = self.plt.get_cmap("viridis")
        highest = 0.0
        for name in names:
            for k, s in enumerate(streams):
                series = [r for r in overlap.pipelines(self.rows, name, n) if r["streams"] == s]
                if series:
                    highest = max([highest] + [r["max_ms"] for r in series])
                    self._errorbars(ax, [r["chunks"] for r in series], series, marker="o", linewidth=1,
                                    linestyle=self.STYLES.get(name, "-."), color=cmap(k / max(len(streams) - 1, 1)),
                                    label=f"{name}, {s} stream{'s' if s != 1 else ''}")
        if bound:
            ax.axhline(bound, color="k", linestyle=":", linewidth=1,
                       label=f"overlap bound max(H2D, kernel, D2H): {bound:.3g} ms")
            ax.axhline(sequential, color="0.5", linestyle="-.", linewidth=1,
                       label=f"sequential H2D + kernel + D2H: {sequential:.3g} ms")
            highest = max(highest, sequential)
        notes = [f"each stage alone: {overlap.describe_stages(stages)}" if stages else
                 "no overlap bound: the stages alone were not timed"]
        for name in names:
            notes.append(f"best {name}: {overlap.describe_best(overlap.best(self.rows, name, n), bound)}")
        pageable = overlap.pageable_times(self.rows, n)
        if len(pageable) > ("sequential" in pageable):
            baseline = pageable.get("sequential")
            notes.append("pageable (task 4): " + ", ".join(
                f"{k} {v:.3g} ms" for k, v in sorted(pageable.items(), key=lambda kv: (kv[0] == "sequential", kv[0]))))
            if baseline:
                notes[-1] += " (sequential: copy in, kernel, copy out)"
        notes.append("process timed with the host clock (it returns with the output on the host); the stages "
                     "with CUDA events")
        ax.text(1.02, 0.0, "\n".join(textwrap.fill(t, 66) for t in notes), fontsize=6.5, color="0.25", ha="left",
                va="bottom", transform=ax.transAxes)
        ax.set_xscale("log", base=2)
        ax.set_xticks(chunks)
        ax.set_xticklabels([str(c) for c in chunks])
        ax.set_ylim(0, highest * 1.08 if highest else None)
        ax.set_xlabel("number of chunks")
        ax.set_ylabel("time of process (ms), median")
        ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self._finish(fig, "time_vs_chunks", f"the streams pipeline at n = {crossover.format_n(n)}: time against "
                                            "the number of chunks")


class MonteCarloFigures(Figures):
    """The figures of 07_monte_carlo: how the error of pi by Monte Carlo falls with N, how many
    points a second each way of drawing them reaches, and what privatising the histogram buys as
    its bins grow fewer (more contention)."""

    STYLES = {"student": "-", "reference": "--"}
    PI_BASELINES = {  # (implementation, operation): colour, line style, marker, label
        ("baseline", "host_api_pi"): ("k", "-", "s", "cuRAND host API: 2N uniforms into memory, then a counting kernel"),
        ("CPU", "cpu_one_thread"): ("0.55", "-", "v", "CPU, one thread (xoshiro256**)"),
        ("CPU", "cpu_all_threads"): ("0.55", "--", "^", "CPU, all threads (xoshiro256** each, std::thread)"),
    }
    HISTOGRAMS = ("histogram", "global_atomics_histogram")

    def _pi_names(self) -> List[str]:
        """The implementations with task 1's rows (the student's are missing when they were wrong)."""
        return [name for name in implementations(self.kernels)
                if any(r["implementation"] == name and r["operation"] == sweep_schema.PI_COUNT for r in self.kernels)]

    def pi_error_vs_n(self) -> bool:
        names = self._pi_names()
        if not names:
            return False
        fig, (ax, az) = self.plt.subplots(2, 1, figsize=(6.4, 6.2), sharex=True, layout="constrained",
                                          gridspec_kw={"height_ratios": [3, 2]})
        ns = sorted({r["n"] for r in self.kernels if r["operation"] == sweep_schema.PI_COUNT})
        for i, name in enumerate(names):
            errors = sweep_schema.pi_errors(self.kernels, name)
            shift = 1.06 ** (i - (len(names) - 1) / 2)  # side by side, not on top of each other
            xs = [n * shift for n, seeds in errors.items() for _ in seeds]
            ax.scatter(xs, [abs(e) for seeds in errors.values() for e in seeds], s=5, color=f"C{i}", alpha=0.35,
                       linewidths=0)
            seeds = max(len(v) for v in errors.values())
            ax.plot(list(errors), [sweep_schema.rms(v) for v in errors.values()], marker="o", markersize=3.5,
                    linewidth=1.2, linestyle=self.STYLES.get(name, "-."), color=f"C{i}",
                    label=f"{name}: RMS error over {seeds} seed{'s' if seeds != 1 else ''} (dots: each seed)")
            az.scatter(xs, [e / sweep_schema.pi_standard_error(n) for n, v in errors.items() for e in v], s=6,
                       color=f"C{i}", alpha=0.6, linewidths=0, label=name)
        ax.plot(ns, [sweep_schema.pi_standard_error(n) for n in ns], "k:", linewidth=1.2,
                label="standard error 4 sqrt(p(1 - p) / N), p = π/4: 1.64 / sqrt(N)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylabel("|4 inside / N - π|")
        ax.legend(fontsize=6.5, loc="lower left")
        az.axhspan(-1, 1, color="0.92", zorder=0)
        for z in (-3, 3):
            az.axhline(z, color="0.5", linestyle=":", linewidth=0.8)
        az.axhline(0, color="k", linewidth=0.6)
        az.set_ylabel("error / standard error")
        az.set_xlabel("N (points drawn)")
        az.text(0.99, 0.02, "shaded: within one standard error; dotted: three", transform=az.transAxes, ha="right",
                va="bottom", fontsize=6.5, color="0.35")
        self._finish(fig, "pi_error_vs_n", "π by Monte Carlo: the error of the estimate against N")
        return True

    def _rate_errorbars(self, ax, rows_by_n: Dict[int, Dict], **style) -> None:
        """Points per second, bars from the slowest sample to the fastest (the median seed's row)."""
        ns = sorted(rows_by_n)
        rows = [rows_by_n[n] for n in ns]
        ys = [n / (r["median_ms"] * 1e-3) for n, r in zip(ns, rows)]
        low = [y - n / (r["max_ms"] * 1e-3) for y, n, r in zip(ys, ns, rows)]
        high = [n / (r["min_ms"] * 1e-3) - y for y, n, r in zip(ys, ns, rows)]
        ax.errorbar(ns, ys, yerr=[low, high], capsize=1.5, elinewidth=0.6, markersize=3, **style)

    def _median_rows(self, implementation: str, operation: str) -> Dict[int, Dict]:
        by_n: Dict[int, List[Dict]] = defaultdict(list)
        for r in self.kernels:
            if r["implementation"] == implementation and r["operation"] == operation:
                by_n[r["n"]].append(r)
        return {n: sweep_schema.median_row(rows) for n, rows in by_n.items()}

    def pi_rate_vs_n(self) -> bool:
        names = self._pi_names()
        baselines = [(key, self._median_rows(*key)) for key in self.PI_BASELINES]
        baselines = [(key, rows) for key, rows in baselines if rows]
        if not names and not baselines:
            return False
        fig, ax = self.plt.subplots(figsize=(6.4, 4.2))
        for i, name in enumerate(names):
            self._rate_errorbars(ax, self._median_rows(name, sweep_schema.PI_COUNT), marker="o", linewidth=1.2,
                                 linestyle=self.STYLES.get(name, "-."), color=f"C{i}",
                                 label=f"count_inside_circle, {name} (cuRAND device API)")
        for key, rows in baselines:
            color, style, marker, label = self.PI_BASELINES[key]
            self._rate_errorbars(ax, rows, marker=marker, linewidth=1.2, linestyle=style, color=color, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (points drawn)")
        ax.set_ylabel("points per second (N / median time)")
        ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        notes = ["A point is two uniform floats (x, y). The GPU rows are timed with CUDA events, the median of "
                 "the seeds' medians; the CPU rows with the host's steady clock (threads started in every call)."]
        ax.text(1.02, 0.0, "\n".join(textwrap.fill(t, 60) for t in notes), fontsize=6.5, color="0.25", ha="left",
                va="bottom", transform=ax.transAxes)
        self._finish(fig, "pi_rate_vs_n", "π by Monte Carlo: points per second against N")
        return True

    def histogram_vs_bins(self) -> bool:
        rows = [r for r in self.kernels if r["operation"] in self.HISTOGRAMS]
        if not rows:
            return False
        n = max(r["n"] for r in rows)
        rows = [r for r in rows if r["n"] == n]
        fig, ax = self.plt.subplots(figsize=(6.4, 4.2))
        for i, name in enumerate(implementations(rows)):
            for operation in self.HISTOGRAMS:
                series = sorted((r for r in rows if r["implementation"] == name and r["operation"] == operation),
                                key=lambda r: r["bins"])
                if not series:
                    continue
                baseline = operation != "histogram"
                self._errorbars(ax, [r["bins"] for r in series], series, marker="s" if baseline else "o",
                                linewidth=1.3 if baseline else 1.1, color="k" if baseline else f"C{i}",
                                linestyle="-" if baseline else self.STYLES.get(name, "-."),
                                label="one global atomicAdd per value (global_atomics_histogram)" if baseline
                                else f"histogram, {name}")
        floor_ms = 4.0 * n / (self.copy_gbps * 1e9) * 1e3
        ax.axhline(floor_ms, color="k", linestyle=":", linewidth=0.8,
                   label=f"reading the {crossover.format_n(n)} floats at the copy bandwidth ({self.copy_gbps:.0f} GB/s)")
        bins = sorted({r["bins"] for r in rows})
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(bins)
        ax.set_xticklabels([str(b) for b in bins])
        ax.set_xlabel("number of bins (fewer bins: more threads add to the same counter)")
        ax.set_ylabel("time (ms), median")
        ax.legend(fontsize=6.5, loc="upper right")
        self._finish(fig, "histogram_vs_bins", f"histogram of n = {crossover.format_n(n)} energies: time against the "
                                               "number of bins")
        return True


class TimelineFigure:
    """The timeline of 05_streams: one traced call of process per implementation, a panel each,
    a lane for each of the copies in, the kernels and the copies out, bars coloured by stream."""

    LANES = (("call", "process()\n(host)"), ("h2d", "copy in\nH → D"), ("kernel", "kernels"),
             ("d2h", "copy out\nD → H"))
    OTHER = "other copies\nand memsets"

    def __init__(self, plt, rows: List[Dict], out_dir: Path, vector_format: str, source: Path):
        self.plt, self.rows, self.out_dir, self.vector_format, self.source = plt, rows, out_dir, vector_format, source
        self.written: List[Path] = []

    def draw(self) -> None:
        names = sorted({r["implementation"] for r in self.rows},
                       key=lambda s: (IMPLEMENTATION_ORDER.index(s) if s in IMPLEMENTATION_ORDER else 99, s))
        first = self.rows[0]
        kinds = {r["kind"] for r in self.rows}
        lanes = list(self.LANES)
        other = any(k not in dict(lanes) for k in kinds)  # a d2d copy, a memset: a lane of their own
        labels = [label for _, label in lanes] + ([self.OTHER] if other else [])
        fig, axes = self.plt.subplots(len(names), 1, figsize=(7.2, 1.0 + 1.25 * len(names) * len(labels) / 4),
                                      sharex=True, squeeze=False, layout="constrained")
        streams = sorted({r["stream"] for r in self.rows if r["stream"] is not None})
        colors = {s: f"C{(s - 1) % 10}" for s in streams}
        for ax, name in zip(axes[:, 0], names):
            records = [r for r in self.rows if r["implementation"] == name]
            for r in records:
                lane = next((i for i, (kind, _) in enumerate(lanes) if kind == r["kind"]), len(lanes))
                color = "0.75" if r["kind"] == "call" else colors[r["stream"]]
                ax.broken_barh([(r["start_ms"], max(r["end_ms"] - r["start_ms"], 1e-4))], (lane - 0.4, 0.8),
                               facecolors=color, edgecolors="white", linewidth=0.3)
            ax.set_yticks(range(len(labels)))
            ax.set_yticklabels(labels, fontsize=7)
            ax.set_ylim(len(labels) - 0.5, -0.5)
            ax.grid(axis="y", visible=False)
            ax.set_title(f"{name}: {self._summary(records)}", fontsize=8, loc="left")
        axes[-1][0].set_xlabel("time since process was called (ms; GPU timestamps by CUPTI)")
        handles = [self.plt.matplotlib.patches.Patch(color=colors[s], label=f"stream {s}") for s in streams]
        axes[0][0].legend(handles=handles, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        streams_text = f"{first['streams']} stream{'s' if first['streams'] != 1 else ''}"
        fig.suptitle(f"process with {streams_text} and {first['chunks']} chunks at n = {crossover.format_n(first['n'])}"
                     f" (work {first['work']}): what the GPU did\n{first['gpu']}", fontsize=10)
        fig.text(0.99, -0.01, f"{first['lesson']}, traced {first['date']} ({self.source.name}); one call each",
                 ha="right", va="top", fontsize=6, color="0.4")
        for ext in ("png", self.vector_format):
            path = self.out_dir / f"{first['lesson']}_timeline.{ext}"
            fig.savefig(path)
            self.written.append(path)
        self.plt.close(fig)

    @staticmethod
    def _summary(records: List[Dict]) -> str:
        """How long the call took, and how long each lane was busy: their sum less the span is
        what overlap saved."""
        work = [r for r in records if r["kind"] != "call"]
        call = next(r for r in records if r["kind"] == "call")
        if not work:
            return f"returned after {call['end_ms']:.3g} ms, having run nothing on the GPU"
        span = max(r["end_ms"] for r in work) - min(r["start_ms"] for r in work)
        busy = {kind: overlap.union_ms((r["start_ms"], r["end_ms"]) for r in work if r["kind"] == kind)
                for kind in ("h2d", "kernel", "d2h")}
        total = sum(busy.values())
        return (f"returned after {call['end_ms']:.3g} ms; copies in {busy['h2d']:.3g} + kernels {busy['kernel']:.3g}"
                f" + copies out {busy['d2h']:.3g} = {total:.3g} ms of work in a GPU span of {span:.3g} ms"
                + (f" ({total / span:.2g}x overlapped)" if span > 0 else ""))


# The drawing code of each sweep kind, the manifest's "sweep": {"kind": ...} (SWEEP_FIGURES in
# grader/driver/manifest.py names each kind's figures; test_plot checks the two agree).
KINDS = {"bandwidth": Figures, "gflops": GflopsFigures, "reduction": ReductionFigures, "streams": StreamsFigures,
         "grid": GridFigures, "monte_carlo": MonteCarloFigures}
# Figures that need rows a sweep may leave out, and why one was not drawn.
NOT_DRAWN = {
    "kernel_vs_transfer": "has no transfer rows (swept with --no-transfers): no kernel_vs_transfer figure",
    "fraction_of_cublas": "has no cuBLAS FP32 row at the largest N: no fraction_of_cublas figure",
    "fraction_of_cub": "has no cub_sum rows (swept with --no-transfers): no fraction_of_cub figure",
    "fraction_of_copy": "has no copy rows (swept with --no-transfers): no fraction_of_copy figure",
    "pi_error_vs_n": "has no count_inside_circle rows (not right, skipped or left out): no pi_error_vs_n figure",
    "pi_rate_vs_n": "has no rows of pi at all: no pi_rate_vs_n figure",
    "histogram_vs_bins": "has no histogram rows (not right, skipped or left out): no histogram_vs_bins figure",
}
TIMELINE = "timeline"  # drawn from the lesson's timeline CSV, not from the sweep CSV's rows


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="./plot", description="Turn a sweep CSV from ./sweep into figures (PNG plus PDF or SVG): the figures "
                                   "its lesson's \"sweep\" in lessons/manifest.json names.",
        epilog="examples: ./plot sweep-results/02_multiply_add.csv    (figures go to sweep-results/figures/)\n"
               "          ./plot sweep-results/05_streams.csv         (with 05_streams_timeline.csv beside it)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", type=Path,
                        help="sweep CSV file(s), or lesson 05's timeline CSV (drawn with the sweep CSV it lies beside)")
    parser.add_argument("--out", type=Path, help="directory for the figures (default: figures/ beside the CSV)")
    parser.add_argument("--format", choices=("pdf", "svg"), default="pdf", help="vector format besides PNG")
    parser.add_argument("--grid-mode", help="grid mode of the time_vs_n figure (default: cover)")
    parser.add_argument("--manifest", type=Path, default=ROOT / "lessons" / "manifest.json",
                        help=argparse.SUPPRESS)  # the tests' own manifests
    return parser.parse_args(argv)


def declared_sweeps(manifest: Path) -> Dict[str, Optional[Sweep]]:
    """Each lesson's declared sweep (None: it has none), by slug."""
    return {l.slug: l.sweep for l in load_manifest(manifest)}


def undeclared(lesson: str, path: Path, sweeps: Dict[str, Optional[Sweep]], manifest: Path) -> str:
    """Why ./plot draws nothing for `lesson`'s rows: the manifest has no such lesson, or no sweep for it."""
    if lesson not in sweeps:
        return (f"{path} holds rows of lesson {lesson!r}, which {manifest} does not list; the lessons are "
                + ", ".join(sweeps) + ". Was the CSV written by another version of the workbook?")
    with_sweep = [slug for slug, sweep in sweeps.items() if sweep]
    return (f"{path} holds rows of {lesson}, whose entry in {manifest} declares no \"sweep\", so there are no "
            f"figures to draw for it; lessons with a sweep: " + ", ".join(with_sweep))


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        sweeps = declared_sweeps(args.manifest)
    except ManifestError as e:
        print(f"plot: {e}", file=sys.stderr)
        return EXIT_BAD_CSV
    tables, timelines = [], []
    try:
        for path in args.csv:
            if is_timeline(path):
                timelines.append((path, read_timeline(path)))
            else:
                tables.append((path, read_sweep(path)))
        # A timeline beside a sweep CSV (./sweep writes 05_streams_timeline.csv) is drawn with it,
        # where the lesson's sweep names the timeline among its figures.
        for path, rows in list(tables):
            beside = path.with_name(f"{path.stem}_timeline.csv")
            sweep = sweeps.get(rows[0]["lesson"]) if rows else None
            if sweep and TIMELINE in sweep.figures and beside.exists() and beside not in [p for p, _ in timelines]:
                timelines.append((beside, read_timeline(beside)))
    except CsvError as e:
        print(f"plot: {e}", file=sys.stderr)
        return EXIT_BAD_CSV
    for path, rows in tables:
        for lesson in sorted({r["lesson"] for r in rows}):
            if not sweeps.get(lesson):
                print(f"plot: {undeclared(lesson, path, sweeps, args.manifest)}", file=sys.stderr)
                return EXIT_BAD_CSV
    for path, rows in timelines:
        for lesson in sorted({r["lesson"] for r in rows}):
            if not sweeps.get(lesson) or TIMELINE not in sweeps[lesson].figures:
                print(f"plot: {path} is a timeline of {lesson}, whose \"sweep\" in {args.manifest} names no "
                      f"{TIMELINE} figure", file=sys.stderr)
                return EXIT_BAD_CSV
    plt = import_pyplot()
    if plt is None:
        print(f"plot: matplotlib is not installed for {sys.executable}. Install it with "
              f"'{sys.executable} -m pip install matplotlib' (Debian/Ubuntu: 'sudo apt install python3-matplotlib').",
              file=sys.stderr)
        return EXIT_NO_MATPLOTLIB
    for path, rows in tables:
        out_dir = args.out or path.parent / "figures"
        out_dir.mkdir(parents=True, exist_ok=True)
        notes = left_out(path)
        if notes:
            print(f"plot: {path} leaves out " + ", ".join(f"{n['implementation']} {n['operation']}" for n in notes)
                  + " (crashed or hung: the notes at its end say why)")
        by_lesson = defaultdict(list)
        for r in rows:
            by_lesson[r["lesson"]].append(r)
        for lesson, lesson_rows in by_lesson.items():
            sweep = sweeps[lesson]
            figures = KINDS[sweep.kind](plt, lesson_rows, out_dir, args.format, args.grid_mode, notes)
            for name in sweep.figures:
                if name == TIMELINE:
                    continue
                if getattr(figures, name)() is False:
                    print(f"plot: {path} {NOT_DRAWN[name]}")
            for written in figures.written:
                print(f"wrote {written}")
    for path, rows in timelines:
        out_dir = args.out or path.parent / "figures"
        out_dir.mkdir(parents=True, exist_ok=True)
        figure = TimelineFigure(plt, rows, out_dir, args.format, path)
        figure.draw()
        for written in figure.written:
            print(f"wrote {written}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
