#!/usr/bin/env python3
"""Where a GPU's time went, from the per-GPU lock's log (WORKBOOK_LOCK_LOG, grader/driver/gpu_lock.py).

    tools/lock_log_summary.py LOG [--top N]

Prints, over the span from the first line to the last: the seconds some process held the GPU
alone (EX) and in how many holds, the seconds only correctness phases held it (SH), the seconds
nobody held it, and the trees that held it alone longest. A log can hold several locks (a
suite's unit tests take locks of their own in temporary folders): the GPU's is the one held
most, and the others are counted and left out (on a machine of several GPUs, summarise each
GPU's log apart: WORKBOOK_LOCK_LOG names one file for all). tools/gpu_check.sh's suite stage runs
it on the suite's log: the time alone is the floor of the suite's wall time on one GPU, and the
time nobody held it is what the gradings lost waiting for each other (or for the CPU). It also
bounds the time the GPU drained before its holds alone: correctness phases ending while a timed
phase held its turn and no new ones started. The log does not record turns, so the bound also
counts any stretch before a hold alone in which no correctness phase happened to start."""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

Interval = Tuple[str, float, float, str, str]  # mode, start, end, tree, lock file


def intervals(lines: List[str]) -> List[Interval]:
    """Each hold as (mode, start, end, tree, lock). A process holds one mode of a lock at a time, so
    its acquire and release lines of that lock pair up in order; a hold never released (a process
    killed while it held the lock) ends at the log's last line."""
    held: Dict[Tuple[str, str], Tuple[str, float, str, str]] = {}
    found: List[Interval] = []
    last = 0.0
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 4 or fields[0] not in ("acquire", "release"):
            raise ValueError(f"line {number} is not 'acquire|release MODE PID TIME [TREE [LOCK]]': {line!r}")
        event, mode, pid, when = fields[:4]
        tree = fields[4] if len(fields) > 4 else "-"
        lock = fields[5] if len(fields) > 5 else "-"
        try:
            when = float(when)
        except ValueError:
            raise ValueError(f"line {number}: {when!r} is not a time") from None
        last = max(last, when)
        if event == "acquire":
            held[(pid, lock)] = (mode, when, tree, lock)
        elif (pid, lock) in held:
            start_mode, start, start_tree, start_lock = held.pop((pid, lock))
            found.append((start_mode, start, when, start_tree, start_lock))
    found += [(mode, start, last, tree, lock) for mode, start, tree, lock in held.values()]
    return found


def drains(found: List[Interval]) -> Tuple[float, int]:
    """The seconds before each hold alone in which correctness phases were still ending and none
    started (the GPU draining for a waiting timed phase), summed, and how many holds had some. An
    upper bound: the log records holds, not waits, so a drain is taken to begin at the last hold
    that started (or the last hold alone that ended) before it."""
    shared = [i for i in found if i[0] == "SH"]
    alone = sorted((i for i in found if i[0] == "EX"), key=lambda i: i[1])
    total, holds = 0.0, 0
    for index, (_, start, _, _, _) in enumerate(alone):
        began = max([s for _, s, _, _, _ in shared if s < start] + [e for _, _, e, _, _ in alone[:index] if e <= start],
                    default=start)
        # Of [began, start], the time some correctness phase was still open.
        open_until = max([e for _, s, e, _, _ in shared if s <= began < e] or [began])
        draining = min(open_until, start) - began
        if draining > 0:
            total += draining
            holds += 1
    return total, holds


def summarize(found: List[Interval], top: int = 5) -> List[str]:
    if not found:
        return ["lock log: no holds"]
    holds_by_lock: Dict[str, int] = defaultdict(int)
    for hold in found:
        holds_by_lock[hold[4]] += 1
    gpu = max(holds_by_lock, key=holds_by_lock.get)
    others = len(found) - holds_by_lock[gpu]
    found = [hold for hold in found if hold[4] == gpu]
    begin, end = min(i[1] for i in found), max(i[2] for i in found)
    # Sweep the events: at each moment, whether an EX or only SH holds are open.
    events = sorted([(s, 1, m) for m, s, _, _, _ in found] + [(e, -1, m) for m, _, e, _, _ in found],
                    key=lambda e: (e[0], e[1]))
    open_holds = {"EX": 0, "SH": 0}
    spent = {"EX": 0.0, "SH": 0.0, "none": 0.0}
    previous = begin
    for when, step, mode in events:
        state = "EX" if open_holds["EX"] else "SH" if open_holds["SH"] else "none"
        spent[state] += when - previous
        previous = when
        open_holds[mode] += step
    alone = [i for i in found if i[0] == "EX"]
    by_tree: Dict[str, float] = defaultdict(float)
    holds_by_tree: Dict[str, int] = defaultdict(int)
    for _, start, stop, tree, _ in alone:
        by_tree[tree] += stop - start
        holds_by_tree[tree] += 1
    span = end - begin
    lines = [f"lock log: {span:.0f} s from the first hold to the last; the GPU alone {spent['EX']:.0f} s "
             f"({len(alone)} holds), correctness only {spent['SH']:.0f} s, nobody {spent['none']:.0f} s"
             + (f" ({others} holds of other locks left out)" if others else "")]
    drained, drained_holds = drains(found)
    lines.append(f"lock log: before the holds alone, at most {drained:.0f} s of correctness phases ending while "
                 f"none started ({drained_holds} of {len(alone)} holds): the GPU draining for a waiting timed phase")
    longest = sorted(by_tree.items(), key=lambda kv: -kv[1])[:top]
    if longest:
        lines.append("lock log: alone longest: " + ", ".join(
            f"{tree} {seconds:.0f} s ({holds_by_tree[tree]})" for tree, seconds in longest))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--top", type=int, default=5, help="how many trees to name (default 5)")
    args = parser.parse_args(argv)
    try:
        found = intervals(args.log.read_text().splitlines())
    except (OSError, ValueError) as e:
        print(f"lock_log_summary: {args.log}: {e}", file=sys.stderr)
        return 2
    print("\n".join(summarize(found, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
