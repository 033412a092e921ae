#!/usr/bin/env python3
"""End-to-end check of ./sweep and ./plot on a GPU: a small sweep of the reference solution
writes a CSV that reads back with every expected row, ./plot draws every figure from it, and
the untouched exercise is refused ("fix it first") instead of being timed; the same for
lessons 03 and 04, with the plain student solution (which leaves the optional challenge undone),
for lesson 05 with its timeline (the plain student when it has lesson 05, else the reference
alone), and for lesson 07 (pi's counts over seeds, its yardsticks, the histogram over bins).

Exit codes: 0 as expected, 1 not, 77 no GPU (ctest reports it as skipped)."""
import argparse
import math
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
import overlap  # noqa: E402
from sweep_schema import read_sweep, read_timeline  # noqa: E402

SKIP = 77


def run(command):
    p = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(f"$ {' '.join(command)}\n{p.stdout}")
    return p


def figure_problems(args, csv: Path, figures: Path, expected: list) -> list:
    """./plot on the sweep's CSV writes exactly the expected PNGs (skipped without a matplotlib python)."""
    if not args.plot_python:
        return []
    p = run([args.plot_python, str(ROOT / "plot"), str(csv), "--out", str(figures)])
    written = sorted(f.name for f in figures.glob("*.png")) if figures.exists() else []
    return [] if p.returncode == 0 and written == expected else [f"./plot on {csv.name} exited {p.returncode} and "
                                                                  f"wrote {written}, expected {expected}"]


def exercise_problems(sweep: list, lesson: str) -> list:
    """The untouched exercise is refused ("fix it first", exit 1), not timed."""
    p = run(sweep + ["--tree", "exercises", "--no-reference"])
    if p.returncode != 1 or "fix it first" not in p.stdout:
        return [f"lesson {lesson}, untouched exercise: expected exit 1 and 'fix it first', got exit {p.returncode}"]
    return []


def check_matmul(args, out) -> list:
    """Lesson 03: every function of both trees and the two cuBLAS baselines, once each, and
    its two figures; the plain student, who left the optional challenge undone, is swept
    without it."""
    problems = []
    sweep = [sys.executable, str(ROOT / "sweep"), "03", "--no-build", "--build-dir", args.build_dir,
             "--sizes", "256,1000", "--out", out]
    p = run(sweep + ["--tree", "grader/tests/students/plain"])
    csv = Path(out) / "03_matmul.csv"
    if p.returncode != 0 or not csv.exists():
        return [f"./sweep 03 exited {p.returncode}"]
    if "matmul_challenge (student) is not timed: not implemented yet" not in p.stdout:
        problems.append("./sweep 03 did not say that the plain student's challenge was left out")
    rows = read_sweep(csv)
    got = sorted((r["implementation"], r["operation"]) for r in rows if r["n"] == 1000)
    want = sorted([("student", op) for op in ("matmul_naive", "matmul_tiled", "matmul_cublas")] +
                  [("reference", op) for op in ("matmul_naive", "matmul_tiled", "matmul_cublas", "matmul_challenge")] +
                  [("cuBLAS", "cublas_fp32"), ("cuBLAS", "cublas_tf32")])
    if got != want:
        problems.append(f"lesson 03 rows at N = 1000: expected {want}, got {got}")
    fp32 = [r["gflops"] for r in rows if r["operation"] == "cublas_fp32" and r["n"] == 1000]
    tiled = [r["gflops"] for r in rows if r["operation"] == "matmul_tiled" and r["n"] == 1000]
    if not fp32 or not tiled or not 0 < max(tiled) < fp32[0]:
        problems.append(f"lesson 03: expected 0 < tiled GFLOP/s < cuBLAS FP32, got {tiled} and {fp32}")
    problems += figure_problems(args, csv, Path(out) / "figures03",
                                ["03_matmul_fraction_of_cublas.png", "03_matmul_gflops_vs_n.png"])
    problems += exercise_problems(sweep, "03")
    return problems


def check_reduction(args, out) -> list:
    """Lesson 04: every function of both trees, CUB and the CPU once each at every size, the
    crossover in the summary, and its three figures; the plain student, who left the optional
    challenge undone, is swept without it; the untouched exercise is refused."""
    problems = []
    sweep = [sys.executable, str(ROOT / "sweep"), "04", "--no-build", "--build-dir", args.build_dir,
             "--sizes", "1000,1e6", "--out", out]
    p = run(sweep + ["--tree", "grader/tests/students/plain"])
    csv = Path(out) / "04_reduction.csv"
    if p.returncode != 0 or not csv.exists():
        return [f"./sweep 04 exited {p.returncode}"]
    if "reduce_sum_challenge (student) is not timed: not implemented yet" not in p.stdout:
        problems.append("./sweep 04 did not say that the plain student's challenge was left out")
    if "the fastest CPU" not in p.stdout:
        problems.append("./sweep 04 printed no crossover against the CPU")
    rows = read_sweep(csv)
    want = sorted([("student", op) for op in ("reduce_block", "reduce_sum", "norm_l2_cub")] +
                  [("reference", op) for op in ("reduce_block", "reduce_sum", "norm_l2_cub", "reduce_sum_challenge")] +
                  [("CUB", "cub_sum"), ("CUB", "gpu_with_transfer"), ("CPU", "cpu_one_thread"),
                   ("CPU", "cpu_all_threads")])
    for n in (1000, 1000000):
        got = sorted((r["implementation"], r["operation"]) for r in rows if r["n"] == n)
        if got != want:
            problems.append(f"lesson 04 rows at n = {n}: expected {want}, got {got}")
    big = {r["operation"]: r["gbps"] for r in rows if r["n"] == 1000000 and r["implementation"] != "student"}
    if not 0 < big.get("cpu_one_thread", 0) < big.get("cub_sum", 0):
        problems.append(f"lesson 04 at n = 1e6: expected 0 < one CPU thread's GB/s < CUB's, got {big}")
    problems += figure_problems(args, csv, Path(out) / "figures04",
                                [f"04_reduction_{name}.png" for name in ("fraction_of_cub", "gbps_vs_n", "time_vs_n")])
    problems += exercise_problems(sweep, "04")
    return problems


def check_streams(args, out) -> list:
    """Lesson 05: every number of streams x chunks of each implementation once, the stages alone
    once, the overlap bound and each best fraction in the summary, the timeline (4 streams, 16
    chunks: 16 copies in, 16 kernels and 16 copies out per implementation, on 4 streams, copies
    overlapping kernels, the call returning after its last copy out) and both figures; the
    untouched exercise is refused."""
    problems = []
    plain = "grader/tests/students/plain"
    has_plain = (ROOT / plain / "05_streams").is_dir()
    names = ["student", "reference"] if has_plain else ["reference"]
    sweep = [sys.executable, str(ROOT / "sweep"), "05", "--no-build", "--build-dir", args.build_dir,
             "--sizes", "16777216", "--streams", "1,4", "--samples", "5", "--out", out]  # chunks of 1 MiB and more
    p = run(sweep + ["--tree", plain if has_plain else "solutions"])
    csv, timeline_csv = Path(out) / "05_streams.csv", Path(out) / "05_streams_timeline.csv"
    if p.returncode != 0 or not csv.exists() or not timeline_csv.exists():
        return [f"./sweep 05 exited {p.returncode} (CSV written: {csv.exists()}, timeline: {timeline_csv.exists()})"]
    if has_plain and "process_pageable (student) is not timed: not implemented yet" not in p.stdout:
        problems.append("./sweep 05 did not say that the plain student's challenge (process_pageable) was left out")
    rows = read_sweep(csv)
    chunks = (1, 2, 4, 8, 16, 32, 64)
    for name in names:
        got = sorted((r["streams"], r["chunks"]) for r in overlap.pipelines(rows, name, overlap.pipeline_n(rows)))
        if got != [(s, c) for s in (1, 4) for c in chunks]:
            problems.append(f"lesson 05, {name}: expected process at 1 and 4 streams x {chunks} chunks, got {got}")
    stages = sorted((r["implementation"], r["operation"]) for r in rows if r["operation"] in overlap.STAGES)
    if stages != [("baseline", "transform"), ("cudaMemcpy", "d2h_pinned"), ("cudaMemcpy", "h2d_pinned")]:
        problems.append(f"lesson 05: expected each stage alone once, got {stages}")
    if not any(r["implementation"] == "reference" and r["operation"] == overlap.PAGEABLE for r in rows):
        problems.append("lesson 05: the reference's process_pageable was not timed")
    n = overlap.pipeline_n(rows)
    stage_times = overlap.stage_ms(rows, n)
    best = overlap.best(rows, "reference", n)
    if best and overlap.sequential_ms(stage_times) and not best["median_ms"] < overlap.sequential_ms(stage_times):
        problems.append(f"lesson 05: the reference's best pipeline ({best['median_ms']} ms) is not faster than the "
                        f"stages one after the other ({stage_times})")
    for text in ["overlap bound max(H2D, kernel, D2H)"] + [f"{name:<10} best:" for name in names]:
        if text not in p.stdout:
            problems.append(f"./sweep 05's summary lacks {text!r}")
    records = read_timeline(timeline_csv)
    for name in names:
        mine = [r for r in records if r["implementation"] == name]
        counts = {kind: sum(r["kind"] == kind for r in mine) for kind in ("h2d", "kernel", "d2h")}
        if counts != {"h2d": 16, "kernel": 16, "d2h": 16}:
            problems.append(f"lesson 05 timeline, {name}: expected 16 copies in, kernels and copies out, got {counts}")
        if {r["stream"] for r in mine if r["kind"] != "call"} != {1, 2, 3, 4}:
            problems.append(f"lesson 05 timeline, {name}: expected work on 4 streams")
        kernels = [(r["start_ms"], r["end_ms"]) for r in mine if r["kind"] == "kernel"]
        copies = [(r["start_ms"], r["end_ms"]) for r in mine if r["kind"] in ("h2d", "d2h")]
        if not any(cs < ke and ks < ce for ks, ke in kernels for cs, ce in copies):
            problems.append(f"lesson 05 timeline, {name}: no copy overlaps a kernel")
        call = next(r for r in mine if r["kind"] == "call")
        last_out = max((r["end_ms"] for r in mine if r["kind"] == "d2h"), default=0)
        if call["end_ms"] < last_out:
            problems.append(f"lesson 05 timeline, {name}: process returned at {call['end_ms']} ms, before its last "
                            f"copy out ended ({last_out} ms)")
    problems += figure_problems(args, csv, Path(out) / "figures05",
                                ["05_streams_time_vs_chunks.png", "05_streams_timeline.png"])
    problems += exercise_problems(sweep, "05")
    return problems


def check_monte_carlo(args, out) -> list:
    """Lesson 07: pi's count for every N and each of the 16 seeds, for the plain student and the
    reference, each count near N pi / 4 and the seeds' counts not all alike; the host API and
    the CPU yardsticks at every N; the histogram of both and the global atomics at every number
    of bins, the privatised ones faster; the summary and the three figures; the untouched
    exercise is refused."""
    problems = []
    sizes = (1000, 100000)
    sweep = [sys.executable, str(ROOT / "sweep"), "07", "--no-build", "--build-dir", args.build_dir,
             "--sizes", ",".join(str(n) for n in sizes), "--samples", "3", "--out", out]
    p = run(sweep + ["--tree", "grader/tests/students/plain"])
    csv = Path(out) / "07_monte_carlo.csv"
    if p.returncode != 0 or not csv.exists():
        return [f"./sweep 07 exited {p.returncode}"]
    rows = read_sweep(csv)
    for name in ("student", "reference"):
        for n in sizes:
            counts = {r["seed"]: r["inside"] for r in rows
                      if (r["implementation"], r["operation"], r["n"]) == (name, "count_inside_circle", n)}
            if sorted(counts) != list(range(1, 17)):
                problems.append(f"lesson 07, {name} at N = {n}: expected seeds 1..16, got {sorted(counts)}")
            mean, sd = n * math.pi / 4, math.sqrt(n * math.pi / 4 * (1 - math.pi / 4))
            far = {seed: c for seed, c in counts.items() if not abs(c - mean) <= 6 * sd}
            if far:
                problems.append(f"lesson 07, {name} at N = {n}: counts more than 6 standard deviations from "
                                f"N pi / 4: {far}")
            if len(set(counts.values())) < 8:  # fewer: none of 200,000 simulated correct sweeps at N = 1000
                problems.append(f"lesson 07, {name} at N = {n}: 16 seeds gave only {len(set(counts.values()))} counts")
        bins = sorted(r["bins"] for r in rows if (r["implementation"], r["operation"]) == (name, "histogram"))
        if bins != [1, 4, 16, 64, 256, 1024, 4096]:
            problems.append(f"lesson 07, {name}: expected the histogram at 1, 4, ..., 4096 bins, got {bins}")
    for implementation, operation in (("baseline", "host_api_pi"), ("CPU", "cpu_one_thread"),
                                      ("CPU", "cpu_all_threads")):
        got = sorted(r["n"] for r in rows if (r["implementation"], r["operation"]) == (implementation, operation))
        if got != list(sizes):
            problems.append(f"lesson 07: expected {operation} at N = {sizes}, got {got}")
    atomics = {r["bins"]: r["median_ms"] for r in rows if r["operation"] == "global_atomics_histogram"}
    for name in ("student", "reference"):
        mine = {r["bins"]: r["median_ms"] for r in rows if (r["implementation"], r["operation"]) == (name, "histogram")}
        slower = sorted(b for b in mine if not mine[b] < atomics.get(b, 0))
        if sorted(atomics) != sorted(mine) or slower:
            problems.append(f"lesson 07: the {name}'s histogram is not faster than global atomics at bins {slower} "
                            f"(global atomics at {sorted(atomics)})")
    for text in ("pi at N = 1e5", "the cuRAND host API", "CPU, one thread", "into 256 bins"):
        if text not in p.stdout:
            problems.append(f"./sweep 07's summary lacks {text!r}")
    problems += figure_problems(args, csv, Path(out) / "figures07",
                                [f"07_monte_carlo_{name}.png" for name in ("histogram_vs_bins", "pi_error_vs_n",
                                                                            "pi_rate_vs_n")])
    problems += exercise_problems(sweep, "07")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--plot-python", help="a python3 with matplotlib (the figures are skipped without one)")
    args = parser.parse_args()
    problems = []
    with tempfile.TemporaryDirectory() as out:
        sweep = [sys.executable, str(ROOT / "sweep"), "02", "--no-build", "--build-dir", args.build_dir]
        p = run(sweep + ["--tree", "solutions", "--sizes", "1e4,1e6", "--blocks", "128,256", "--out", out])
        if p.returncode == 3:
            print("skipped: no GPU")
            return SKIP
        csv = Path(out) / "02_multiply_add.csv"
        if p.returncode != 0 or not csv.exists():
            problems.append(f"./sweep --tree solutions exited {p.returncode}")
        else:
            rows = read_sweep(csv)
            kernels = [r for r in rows if r["block"]]
            if len(kernels) != 2 * 2 * 2 or {r["implementation"] for r in kernels} != {"reference"}:
                problems.append(f"expected 8 reference kernel rows, got {len(kernels)}")
            if len(rows) - len(kernels) != 2 * 4:
                problems.append(f"expected 8 transfer rows, got {len(rows) - len(kernels)}")
            big = [r for r in kernels if r["n"] == 1000000]
            if not big or max(r["gbps"] for r in big) <= 0:
                problems.append("no bandwidth measured at n = 1e6")
            if args.plot_python:
                figures = Path(out) / "figures"
                p = run([args.plot_python, str(ROOT / "plot"), str(csv), "--out", str(figures)])
                written = sorted(f.name for f in figures.glob("*.png")) if figures.exists() else []
                if p.returncode != 0 or len(written) != 4:
                    problems.append(f"./plot exited {p.returncode} and wrote {written}")
        p = run(sweep + ["--tree", "exercises", "--no-reference", "--sizes", "1e4", "--out", out])
        if p.returncode != 1 or "fix it first" not in p.stdout:
            problems.append(f"the untouched exercise: expected exit 1 and 'fix it first', got exit {p.returncode}")
        problems += check_matmul(args, out)
        problems += check_reduction(args, out)
        problems += check_streams(args, out)
        problems += check_monte_carlo(args, out)
    for problem in problems:
        print("FAIL:", problem)
    print(f"{len(problems)} problem(s)" if problems else "as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
