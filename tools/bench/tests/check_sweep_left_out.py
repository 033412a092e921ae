#!/usr/bin/env python3
"""End-to-end check on a GPU that a function which crashes loses only its own rows: ./sweep 03
on the broken variant challenge_illegal_address (the reference solution, but matmul_challenge
writes C through a null pointer) exits 1, and its CSV has the student's other functions and
the cuBLAS baselines at every size, no matmul_challenge row, and a note that says it crashed.

Exit codes: 0 as expected, 1 not, 77 no GPU (ctest reports it as skipped)."""
import argparse
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

from check_sweep import ROOT, SKIP, run  # it also puts tools/bench on the path
from sweep_schema import left_out, read_sweep

# Laid out whole in the build folder by the build (grader/tests/CMakeLists.txt, tools/variants.py).
VARIANT = "grader/tests/broken/challenge_illegal_address"
SIZES = (256, 512)


def check(build_dir: str, out: str) -> Optional[List[str]]:
    """The problems found; None without a GPU."""
    p = run([sys.executable, str(ROOT / "sweep"), "03", "--tree", str(Path(build_dir) / VARIANT), "--no-build",
             "--build-dir", build_dir, "--sizes", ",".join(map(str, SIZES)), "--no-reference", "--out", out])
    if p.returncode == 3:
        return None
    problems = [] if p.returncode == 1 else [f"./sweep exited {p.returncode}; expected 1 (a function left out)"]
    csv = Path(out) / "03_matmul.csv"
    if not csv.exists():
        return problems + ["./sweep wrote no CSV"]
    rows = read_sweep(csv)
    got = sorted((r["implementation"], r["operation"], r["n"]) for r in rows)
    want = sorted([("student", op, n) for op in ("matmul_naive", "matmul_tiled", "matmul_cublas") for n in SIZES] +
                  [("cuBLAS", op, n) for op in ("cublas_fp32", "cublas_tf32") for n in SIZES])
    if got != want:
        problems.append(f"rows: expected {want}, got {got}")
    notes = left_out(csv)
    if [(n["implementation"], n["operation"]) for n in notes] != [("student", "matmul_challenge")]:
        problems.append(f"notes: expected one for student matmul_challenge, got {notes}")
    elif not notes[0]["why"].startswith("crashed") or "cudaErrorIllegalAddress" not in notes[0]["why"]:
        problems.append(f"the note does not say it crashed with cudaErrorIllegalAddress: {notes[0]['why']}")
    if "# left out: student matmul_challenge: crashed" not in csv.read_text():
        problems.append("the CSV has no line '# left out: student matmul_challenge: crashed ...'")
    if "Left out" not in p.stdout:
        problems.append("./sweep's summary does not list what was left out")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        problems = check(args.build_dir, out)
    if problems is None:
        print("skipped: no GPU")
        return SKIP
    for problem in problems:
        print("FAIL:", problem)
    print(f"{len(problems)} problem(s)" if problems else "as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
