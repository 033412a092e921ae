#!/usr/bin/env python3
"""Whether a run was short of CPU or of GPU: the machine's CPU and the GPU's use, sampled.

    tools/utilization.py record LOG [--interval S]   until stopped (SIGTERM or Ctrl-C)
    tools/utilization.py summary LOG                 what the samples say

`record` appends a line every S seconds (2 by default): the time, the share of the CPUs busy
since the last line (from /proc/stat: user, nice, system, irq, softirq and steal over all of
them), the processes runnable (procs_running, against the cores), and each GPU's utilization
and memory used as nvidia-smi reports them (the share of the last sample period in which a
kernel ran; "-" where nvidia-smi gave nothing). tools/gpu_check.sh records the suite and a class.

`summary` prints, over the samples: the mean CPU share and how often it was 90% or more, the
mean runnable processes per core, and the same for each GPU. A run whose CPUs were busy most of
the time while the GPU was not is short of CPU: more gradings side by side will not help, less
host work per grading will. A GPU busy most of the time is the run's floor."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional, Tuple

BUSY = 0.9  # a sample at or above this share counts as saturated


def cpu_times(stat: str) -> Tuple[int, int]:
    """(busy, total) jiffies of /proc/stat's "cpu" line: idle and iowait are not busy, guest time
    is already inside user."""
    fields = next(line for line in stat.splitlines() if line.startswith("cpu ")).split()[1:]
    values = [int(v) for v in fields[:8]] + [0] * max(0, 8 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = values[:8]
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


def procs_running(stat: str) -> int:
    for line in stat.splitlines():
        if line.startswith("procs_running "):
            return int(line.split()[1])
    return 0


def gpu_sample() -> str:
    """"util/memMiB" per GPU, comma-separated, or "-" when nvidia-smi answers nothing in 3 s."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=3)
    except (OSError, subprocess.SubprocessError):
        return "-"
    # "[Not Supported]" and the like: one word, so that a line keeps its five fields
    gpus = ["/".join(field.strip().replace(" ", "_") for field in line.split(",")) for line in out.stdout.splitlines()
            if line.strip()]
    return ",".join(gpus) if out.returncode == 0 and gpus else "-"


def _stop(*_) -> None:
    raise SystemExit(0)  # at once, even inside time.sleep or nvidia-smi's wait: the caller waits for us


def record(log: Path, interval: float) -> int:
    signal.signal(signal.SIGTERM, _stop)
    stat = Path("/proc/stat").read_text()
    busy0, total0 = cpu_times(stat)
    with open(log, "a") as out:
        out.write(f"# t cpu_busy procs_running cores gpu_util/mem_mib  ({os.cpu_count()} cores)\n")
        out.flush()
        while True:
            try:
                time.sleep(interval)
            except KeyboardInterrupt:
                break
            stat = Path("/proc/stat").read_text()
            busy, total = cpu_times(stat)
            share = (busy - busy0) / (total - total0) if total > total0 else 0.0
            busy0, total0 = busy, total
            out.write(f"{time.time():.1f} {share:.3f} {procs_running(stat)} {os.cpu_count()} {gpu_sample()}\n")
            out.flush()
    return 0


def parse(lines: List[str]) -> List[Tuple[float, float, int, int, List[Optional[float]]]]:
    samples = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 5:
            raise ValueError(f"line {number} is not 'TIME CPU_SHARE RUNNABLE CORES GPUS': {line!r}")
        gpus: List[Optional[float]] = []
        if fields[4] != "-":
            for gpu in fields[4].split(","):
                util = gpu.split("/")[0]
                gpus.append(float(util) / 100 if util.replace(".", "", 1).isdigit() else None)
        samples.append((float(fields[0]), float(fields[1]), int(fields[2]), int(fields[3]), gpus))
    return samples


def summarize(samples) -> List[str]:
    if not samples:
        return ["utilization: no samples"]
    n = len(samples)
    span = samples[-1][0] - samples[0][0]
    cpu = [s[1] for s in samples]
    per_core = [s[2] / s[3] for s in samples if s[3]]
    lines = [f"utilization: {n} samples over {span:.0f} s; CPU busy {100 * sum(cpu) / n:.0f}% on average, "
             f"{100 * sum(c >= BUSY for c in cpu) / n:.0f}% of the time at {100 * BUSY:.0f}% or more; "
             f"{sum(per_core) / len(per_core):.2f} runnable processes per core"]
    for index in range(max(len(s[4]) for s in samples)):
        util = [s[4][index] for s in samples if len(s[4]) > index and s[4][index] is not None]
        if not util:
            lines.append(f"utilization: GPU {index}: no readings")
            continue
        lines.append(f"utilization: GPU {index} busy {100 * sum(util) / len(util):.0f}% on average, "
                     f"{100 * sum(u >= BUSY for u in util) / len(util):.0f}% of the time at {100 * BUSY:.0f}% "
                     f"or more, idle (0%) {100 * sum(u == 0 for u in util) / len(util):.0f}% of the time")
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("log", type=Path)
    rec.add_argument("--interval", type=float, default=2.0)
    summ = sub.add_parser("summary")
    summ.add_argument("log", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.log, args.interval)
    try:
        print("\n".join(summarize(parse(args.log.read_text().splitlines()))))
    except (OSError, ValueError) as e:
        print(f"utilization: cannot read {args.log}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
