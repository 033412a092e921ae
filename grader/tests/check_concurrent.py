#!/usr/bin/env python3
"""End-to-end check on a GPU: two gradings at once. Copies lesson 01's reference solution
into two trees (two paths, the same folder name), starts `./grade --tree A 01` and
`./grade --tree B 01` at the same moment with the same seed and build directory, and checks
that both score full marks with the same verdicts, that the two trees were built into grader
programs of their own, and that no timed phase of one overlapped anything of the other on
the GPU (from the lock log, WORKBOOK_LOCK_LOG).

The build directory is kept between runs (the trees are copied with their timestamps, so
nothing is rebuilt the second time).

Exit codes: 0 as expected, 1 not as expected, 77 no GPU (ctest reports it as skipped)."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from check_grades import check

ROOT = Path(__file__).resolve().parents[2]
SKIP = 77
LESSON = "01_vector_add"
SEED = 20261101
TIME_LIMIT_S = 780  # for both gradings together, under ctest's TIMEOUT of 900 s


def intervals(log: Path):
    """{pid: [(mode, start, end)]} from the lock log's acquire/release lines. A process holds
    one mode at a time, so its lines pair up in order."""
    held, found = {}, {}
    for line in log.read_text().splitlines():
        event, mode, pid, when = line.split()[:4]
        pid, when = int(pid), float(when)
        if event == "acquire":
            held[pid] = (mode, when)
        else:
            start_mode, start = held.pop(pid)
            found.setdefault(pid, []).append((start_mode, start, when))
    return found


def overlaps(a, b) -> bool:
    return a[1] < b[2] and b[1] < a[2]


def lock_problems(found: dict, pids) -> list:
    problems = []
    for pid in pids:
        if not any(mode == "EX" for mode, _, _ in found.get(pid, [])):
            problems.append(f"pid {pid} never held the GPU alone: its timed phases were not locked")
    one, two = pids
    for a in found.get(one, []):
        for b in found.get(two, []):
            if "EX" in (a[0], b[0]) and overlaps(a, b):
                problems.append(f"pid {one} held {a[0]} and pid {two} held {b[0]} at the same time "
                                f"({max(a[1], b[1]):.3f} .. {min(a[2], b[2]):.3f})")
    return problems


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)  # the grading and the grader program it runs
        process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True, help="the build directory both gradings share (kept)")
    parser.add_argument("--device-info", help="a built workbook_device_info, to skip at once without a GPU")
    args = parser.parse_args()
    build_dir = Path(args.build_dir).resolve()
    if args.device_info:  # without a GPU, skip before building anything
        probe = subprocess.run([args.device_info], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        if probe.returncode == 3:
            print(f"skipped: no GPU ({probe.stderr.decode(errors='replace').strip()})")
            return SKIP

    # Two trees with the same folder name at two paths: their programs must still differ.
    trees = [build_dir / "trees" / side / "alice" for side in ("a", "b")]
    for tree in trees:
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(ROOT / "solutions" / LESSON, tree / LESSON)  # copy2: timestamps kept
    expected = {LESSON: json.loads((Path(__file__).parent / "expected" / "solutions.json").read_text())[LESSON]}

    with tempfile.TemporaryDirectory(prefix="workbook-concurrent-") as tmp:
        tmp = Path(tmp)
        log = tmp / "locks.log"
        env = dict(os.environ, WORKBOOK_LOCK_LOG=str(log))
        processes, outputs = [], []
        for i, tree in enumerate(trees):
            command = [sys.executable, str(ROOT / "grade"), "--tree", str(tree), "--build-dir", str(build_dir),
                       "--seed", str(SEED), "--results", str(tmp / f"results{i}"), LESSON]
            out = open(tmp / f"grade{i}.out", "w")
            outputs.append(out)
            processes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                              start_new_session=True))
        deadline = time.monotonic() + TIME_LIMIT_S
        timed_out = False
        try:
            for process in processes:
                try:
                    process.wait(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            for process in processes:
                stop(process)
            for out in outputs:
                out.close()
        texts = [(tmp / f"grade{i}.out").read_text(errors="replace") for i in range(2)]
        for tree, process, text in zip(trees, processes, texts):
            print(f"===== ./grade --tree {tree} (pid {process.pid}, exit {process.returncode})\n{text}")
        if any(p.returncode == 3 for p in processes):
            print("skipped: no GPU")
            return SKIP

        problems = []
        if timed_out:
            problems.append(f"the two gradings did not finish within {TIME_LIMIT_S} s; both were stopped")
        results = []
        for i, (tree, process) in enumerate(zip(trees, processes)):
            path = tmp / f"results{i}" / "results.json"
            if process.returncode != 0:
                problems.append(f"./grade --tree {tree} exited {process.returncode}, not 0 (all passed)")
            if not path.exists():
                problems.append(f"./grade --tree {tree} wrote no results.json")
                continue
            results.append(json.loads(path.read_text()))
            problems += [f"{tree}: {p}" for p in check(results[-1], expected)]
        if len(results) == 2:
            verdicts = [{t["name"]: t["extra_data"]["status"] for t in r["tests"]} for r in results]
            if verdicts[0] != verdicts[1]:
                problems.append(f"the two gradings disagree: {verdicts[0]} vs {verdicts[1]}")

        index_path = build_dir / "workbook_build.json"
        trees_built = json.loads(index_path.read_text())["trees"] if index_path.exists() else {}
        names = [next((n for n, t in trees_built.items() if Path(t["dir"]).resolve() == tree), None) for tree in trees]
        programs = [trees_built[n]["lessons"].get(LESSON) if n else None for n in names]
        if None in names or len(set(names)) != 2 or None in programs or len(set(programs)) != 2:
            problems.append(f"the two trees were not built into programs of their own: {names}, {programs}")

        found = intervals(log) if log.exists() else {}
        pids = [p.pid for p in processes]
        problems += lock_problems(found, pids)

    side_by_side = sum(1 for a in found.get(pids[0], []) for b in found.get(pids[1], [])
                       if a[0] == b[0] == "SH" and overlaps(a, b))
    print("Summary:")
    for tree, name, program, pid, text in zip(trees, names, programs, pids, texts):
        timed = sum(1 for mode, _, _ in found.get(pid, []) if mode == "EX")
        waited = [what for what, line in (("to build", "to finish building"), ("for the GPU", "Waiting for the GPU"))
                  if line in text]
        print(f"  {tree}: tree {name}, {Path(program).name if program else 'no program'}; {timed} timed phase(s); "
              + (f"waited {' and '.join(waited)}" if waited else "never waited"))
    print(f"  correctness phases of the two side by side: {side_by_side} time(s)")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(problems)} problem(s)" if problems else "as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
