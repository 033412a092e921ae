"""Where the GPU overtakes the CPU in a sweep (lesson 04, 04_reduction): the smallest n from
which a GPU row is faster than the fastest CPU row at every size both were measured at.
./plot marks it on the time figure and ./sweep prints it after a sweep; both take it from here.

The GPU kernel is CUB's (cub_sum, the same for everyone), else the reference's reduce_sum, else
the student's; the GPU with its data starting in host memory is gpu_with_transfer. The CPU is
the faster of cpu_one_thread and cpu_all_threads at each n (those rows stop at a size that takes
about a second, so a crossover is only looked for where both were measured)."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

CPU_OPERATIONS = ("cpu_one_thread", "cpu_all_threads")
KERNEL = "cub_sum"
WITH_TRANSFER = "gpu_with_transfer"


def format_n(n: float) -> str:
    """A size for people: 1e4, 3.16e5, 1000."""
    return f"{n:.3g}".replace("e+0", "e").replace("e+", "e")


def fastest_ms(rows: Iterable[Dict], operations: Iterable[str], implementation: Optional[str] = None) -> Dict[int, float]:
    """For each n, the shortest median time (ms) among the rows of these operations (and of
    this implementation, when given)."""
    operations = set(operations)
    best: Dict[int, float] = {}
    for r in rows:
        if r["operation"] in operations and implementation in (None, r["implementation"]):
            best[r["n"]] = min(best.get(r["n"], float("inf")), r["median_ms"])
    return best


def crossover(gpu_ms: Dict[int, float], cpu_ms: Dict[int, float]) -> Optional[int]:
    """The smallest n from which the GPU is faster than the CPU at every n measured for both;
    None when it is not faster at the largest such n (or no n was measured for both)."""
    common = sorted(set(gpu_ms) & set(cpu_ms))
    start = None
    for n in common:
        if gpu_ms[n] < cpu_ms[n]:
            start = n if start is None else start
        else:
            start = None
    return start


def kernel_series(rows: List[Dict]) -> Tuple[str, Dict[int, float]]:
    """The GPU kernel to compare with the CPU, and its times: CUB's when swept, else
    reduce_sum's (the reference's first)."""
    if any(r["operation"] == KERNEL for r in rows):
        return "the GPU kernel (cub_sum)", fastest_ms(rows, [KERNEL])
    for implementation in ("reference", "student"):
        series = fastest_ms(rows, ["reduce_sum"], implementation)
        if series:
            return f"the GPU kernel ({implementation} reduce_sum)", series
    return "the GPU kernel", {}


def describe(label: str, gpu_ms: Dict[int, float], cpu_ms: Dict[int, float]) -> str:
    """One sentence: from which n `label` beats the fastest CPU, or that it never does for good."""
    common = sorted(set(gpu_ms) & set(cpu_ms))
    if not common:
        return f"{label}: not compared with the CPU (no size has rows for both)"
    n = crossover(gpu_ms, cpu_ms)
    if n is not None:
        return f"{label} beats the fastest CPU from n = {format_n(n)} on (compared up to n = {format_n(common[-1])})"
    wins = [m for m in common if gpu_ms[m] < cpu_ms[m]]
    only = f"; faster only at n = {', '.join(format_n(m) for m in wins)}" if wins else ""
    return f"{label} does not beat the fastest CPU from any n on, up to n = {format_n(common[-1])}{only}"
