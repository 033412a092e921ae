#!/usr/bin/env python3
"""End-to-end check of ./grade-class on a generated class (make_class.py): every submission gets
the status, notes, files taken and (on a GPU) every task verdict it must; the gradebook agrees
with each student's results.json; a second run keeps what was graded and --regrade grades one
again; the summary and the figure are written.

    check_class.py --build-dir DIR [--lessons 01] [--slurm] [--small] [--keep OUT]

Without a GPU the gradings report "no GPU" and everything else is checked for real. --slurm runs
the class through the Slurm cluster that sinfo reaches (tools/ci/slurm_single_node.sh starts one).
Exit codes: 0 as expected, 1 not, 77 --slurm without a reachable Slurm cluster (ctest: skipped)."""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SKIP = 77
sys.path.insert(0, str(HERE))
from check_grades import check  # noqa: E402


def slurm_reachable() -> str:
    """Why Slurm cannot be used here, or "" when sinfo answers and a node is up."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return "sbatch/sinfo are not installed"
    try:
        state = subprocess.run(["sinfo", "-h", "-o", "%t"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=30)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer in 30 s"
    text = state.stdout.decode().strip()
    if state.returncode != 0:
        return f"sinfo failed: {text}"
    if not any(s.startswith(("idle", "mix", "alloc")) for s in text.split()):
        return f"no Slurm node is up (sinfo: {text or 'nothing'})"
    return ""


def gpu_count() -> int:
    """The GPUs a class is graded on: CUDA_VISIBLE_DEVICES's, else those nvidia-smi lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([g for g in visible.split(",") if g.strip() and g.strip() != "-1"])
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listed.stdout.decode(errors="replace").splitlines() if line.startswith("GPU "))


def gpus_listed() -> bool:
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "GPU " in listed.stdout.decode(errors="replace")


def run(command, **kwargs) -> subprocess.CompletedProcess:
    print("$ " + " ".join(map(str, command)), flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)
    print(done.stdout.decode(errors="replace"), flush=True)
    return done


def verify(out: Path, expected: dict, on_gpu: bool, timed: bool = True) -> list:
    problems = []
    with open(out / "gradebook.csv", newline="") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    if sorted(rows) != sorted(expected):
        problems.append(f"gradebook students {sorted(rows)} != submissions {sorted(expected)}")
    for name, want in expected.items():
        row = rows.get(name)
        if row is None:
            continue
        status = want["status"] if (on_gpu or want["status"] != "graded") else "no_gpu"
        if row["status"] != status:
            problems.append(f"{name}: status {row['status']!r}, expected {status!r} ({row['notes']})")
        for note in want.get("notes", []):
            if note == "report tampered" and not on_gpu:
                continue  # only a run on a GPU writes records
            if note not in row["notes"]:
                problems.append(f"{name}: the gradebook's notes {row['notes']!r} do not mention {note!r}")
        files = (out / "feedback" / name / "files.txt").read_text()
        intake = json.loads((out / "work" / name / "intake.json").read_text())
        taken = sorted(path for path, _, _ in intake["taken"])
        if taken != want.get("taken", []):
            problems.append(f"{name}: took {taken}, expected {want.get('taken', [])}")
        for path in taken:
            if f"  {path}  (" not in files:
                problems.append(f"{name}: files.txt does not list {path} as taken:\n{files}")
        if name == "tamper_grader_edit" and "grader/01_vector_add" not in files:
            problems.append(f"{name}: files.txt does not list the edited grader files as ignored:\n{files}")
        results_path = out / "feedback" / name / "results.json"
        if not results_path.exists():
            problems.append(f"{name}: no results.json in its feedback folder")
            continue
        results = json.loads(results_path.read_text())
        total = sum(t["score"] for t in results["tests"])
        if abs(float(row["total"]) - total) > 1e-9:
            problems.append(f"{name}: gradebook total {row['total']} but results.json scores {total}")
        for extra in ("junit.xml", "scoreboard.txt"):
            if not (out / "feedback" / name / extra).exists():
                problems.append(f"{name}: no {extra} in its feedback folder")
        if on_gpu and want["status"] == "graded":
            problems += [f"{name}: {p}" for p in check(results, want["lessons"])]
        if row["seed"] != str(json.loads((out / "class.json").read_text())["seed"]):
            problems.append(f"{name}: seed {row['seed']} is not the class's")
    for name in ("summary.txt", "score_distribution.png"):
        if not (out / name).exists():
            problems.append(f"no {name} in {out}")
    times = json.loads((out / "class.json").read_text()).get("time", {})
    if "phases_s" not in times:
        problems.append(f"class.json has no phase breakdown: {times}")
    if on_gpu and timed and not times.get("gpu_lock_s", {}).get("exclusive_held"):
        problems.append(f"class.json does not say how long the GPU was held alone: {times.get('gpu_lock_s')}")
    cache = times.get("timing_cache")
    correct = sum(1 for w in expected.values() if w["status"] == "graded"
                  and any(t.get("performance") == "passed" for l in w.get("lessons", {}).values() for t in l.values()))
    if on_gpu and timed and correct > gpu_count() and not (cache and cache.get("reuses", 0) > 0):
        problems.append(f"{correct} submissions were timed, yet no figure of the timing cache was reused: {cache}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--lessons", nargs="*", default=["01"])
    parser.add_argument("--slurm", action="store_true")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--keep", help="generate and grade the class here and keep it (default: a temporary folder)")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--per-gpu", type=int, help="./grade-class --per-gpu")
    parser.add_argument("--size", type=int, help="a class of this many students (make_class.py --size), graded once: "
                                                 "how long a class takes, and every verdict as expected")
    gpu = parser.add_mutually_exclusive_group()
    gpu.add_argument("--no-gpu", action="store_true", help="hide every GPU (CUDA_VISIBLE_DEVICES=-1): host checks only")
    gpu.add_argument("--require-gpu", action="store_true", help="skip (77) unless nvidia-smi lists a GPU")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.no_gpu:
        env["CUDA_VISIBLE_DEVICES"] = "-1"
    if args.require_gpu and not gpus_listed():
        print("skipped: needs a GPU: nvidia-smi lists none")  # grader.class.without_gpu checks the rest here
        return SKIP
    if args.slurm:
        why = slurm_reachable()
        if why:
            print(f"skipped: {why}. CI starts a single-node cluster with tools/ci/slurm_single_node.sh start.")
            return SKIP
    work = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="workbook-class-"))
    try:
        if not (args.keep and (work / "expected.json").exists()):  # --keep: a second call resumes the grading
            made = run([sys.executable, str(HERE / "make_class.py"), str(work), "--lessons", *args.lessons] +
                       (["--small"] if args.small else []) + (["--size", str(args.size)] if args.size else []))
            if made.returncode != 0:
                return 1
        expected = json.loads((work / "expected.json").read_text())
        out = work / "grades"
        command = [sys.executable, str(ROOT / "grade-class"), str(work / "submissions"), *args.lessons,
                   "--out", str(out), "--build-dir", str(Path(args.build_dir).resolve())]
        command += (["--no-timing"] if args.no_timing else []) + (["--per-gpu", str(args.per_gpu)] if args.per_gpu else [])
        if args.slurm:
            command += ["--slurm", "--slurm-gpus", "0", "--shards", "2", "--wait"]
        started = time.monotonic()
        first = run(command, env=env)
        took = time.monotonic() - started
        if not (out / "gradebook.csv").exists():
            print(f"FAIL: ./grade-class exited {first.returncode} without a gradebook")
            return 1
        with open(out / "gradebook.csv", newline="") as f:
            on_gpu = all(row["status"] != "no_gpu" for row in csv.DictReader(f))
        problems = verify(out, expected, on_gpu, not args.no_timing)
        if args.require_gpu and not on_gpu:
            problems.append("nvidia-smi lists a GPU, yet the gradings found none")
        # Resumable: a second run keeps every final verdict; --regrade grades one again.
        if not args.slurm and not args.size:
            final = sum(1 for w in expected.values() if w["status"] != "graded" or on_gpu)
            text = run(command, env=env).stdout.decode(errors="replace")
            if final and f"{final} submissions were graded before" not in text:
                problems.append(f"a second run did not keep the {final} submissions already graded")
            text = run(command + ["--regrade", "correct_folder"], env=env).stdout.decode(errors="replace")
            graded_now = len(expected) - final + (1 if on_gpu else 0)
            if f"Grading {graded_now} submissions with seed" not in text:
                problems.append(f"--regrade correct_folder did not grade exactly {graded_now} submissions")
            problems += verify(out, expected, on_gpu, not args.no_timing)
        if args.size:
            times = json.loads((out / "class.json").read_text()).get("time", {})
            print(f"./grade-class took {took:.0f} s for {len(expected)} submissions; class.json's time: "
                  + json.dumps(times, indent=1))
        for p in problems:
            print("FAIL:", p)
        print(f"{len(problems)} problem(s)" if problems else
              f"as expected: {len(expected)} submissions ({'on a GPU' if on_gpu else 'no GPU: gradings report it'})")
        return 1 if problems else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
