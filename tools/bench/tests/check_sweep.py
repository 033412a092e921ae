#!/usr/bin/env python3
"""End-to-end check of ./sweep and ./plot on a GPU: a small sweep of the reference solution
writes a CSV that reads back with every expected row, ./plot draws every figure from it, and
the untouched exercise is refused ("fix it first") instead of being timed.

Exit codes: 0 as expected, 1 not, 77 no GPU (ctest reports it as skipped)."""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
from sweep_schema import read_sweep  # noqa: E402

SKIP = 77


def run(command):
    p = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(f"$ {' '.join(command)}\n{p.stdout}")
    return p


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
    for problem in problems:
        print("FAIL:", problem)
    print(f"{len(problems)} problem(s)" if problems else "as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
