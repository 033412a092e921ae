"""The overlap bound of a lesson 05 sweep (05_streams), and how close each pipeline came to it.
./plot draws it and ./sweep prints it; both take it from here.

A pipeline of chunks on several streams can at best hide two of its three stages behind the
third: it takes at least max(H2D, kernel, D2H), each stage timed alone on the whole input (the
rows cudaMemcpy h2d_pinned, baseline transform and cudaMemcpy d2h_pinned), and without overlap
it takes their sum. A process row's fraction of the bound is bound / its time (1 = the bound
reached). The grader's bound for task 1 times the two copies together instead, as a pipeline
runs them (grader/05_streams/benchmark.hpp): where the link does not give both directions their
full speed at once, no pipeline reaches this one."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional

PROCESS = "process"
PAGEABLE = "process_pageable"
PAGEABLE_SEQUENTIAL = "pageable_sequential"
KERNEL = "transform"  # the lesson's kernel alone, implementation "baseline"
STAGES = ("h2d_pinned", KERNEL, "d2h_pinned")
STAGE_LABELS = {"h2d_pinned": "H2D", KERNEL: "kernel", "d2h_pinned": "D2H"}


def pipeline_n(rows: List[Dict]) -> Optional[int]:
    """The n the figures and the summary describe: the largest n of a process row (or of any row)."""
    ns = [r["n"] for r in rows if r["operation"] == PROCESS] or [r["n"] for r in rows]
    return max(ns) if ns else None


def stage_ms(rows: Iterable[Dict], n: int) -> Dict[str, float]:
    """The median time of each stage alone at n, for those measured."""
    return {r["operation"]: r["median_ms"] for r in rows if r["operation"] in STAGES and r["n"] == n}


def bound_ms(stages: Dict[str, float]) -> Optional[float]:
    """max(H2D, kernel, D2H); None unless all three were measured."""
    return max(stages[s] for s in STAGES) if all(s in stages for s in STAGES) else None


def sequential_ms(stages: Dict[str, float]) -> Optional[float]:
    """H2D + kernel + D2H; None unless all three were measured."""
    return sum(stages[s] for s in STAGES) if all(s in stages for s in STAGES) else None


def pipelines(rows: Iterable[Dict], implementation: str, n: int) -> List[Dict]:
    """One implementation's process rows at n, by streams then chunks."""
    return sorted((r for r in rows if r["operation"] == PROCESS and r["implementation"] == implementation
                   and r["n"] == n), key=lambda r: (r["streams"], r["chunks"]))


def best(rows: Iterable[Dict], implementation: str, n: int) -> Optional[Dict]:
    """The fastest process row of an implementation at n."""
    return min(pipelines(rows, implementation, n), key=lambda r: r["median_ms"], default=None)


def configuration(row: Dict) -> str:
    """'4 streams, 16 chunks'."""
    s, c = row["streams"], row["chunks"]
    return f"{s} stream{'s' if s != 1 else ''}, {c} chunk{'s' if c != 1 else ''}"


def describe_best(row: Dict, bound: Optional[float]) -> str:
    """'4 streams, 16 chunks: 3.1 ms, 81% of the bound'."""
    share = f", {bound / row['median_ms']:.0%} of the bound" if bound else ""
    return f"{configuration(row)}: {row['median_ms']:.3g} ms{share}"


def describe_stages(stages: Dict[str, float]) -> str:
    """'H2D 2.41 ms, kernel 2.40 ms, D2H 2.29 ms', for those measured."""
    return ", ".join(f"{STAGE_LABELS[s]} {stages[s]:.3g} ms" for s in STAGES if s in stages)


def pageable_times(rows: Iterable[Dict], n: int) -> Dict[str, float]:
    """Task 4 at n: {implementation: process_pageable's time} and 'sequential': the sequential
    pageable version's."""
    times = {}
    for r in rows:
        if r["n"] == n and r["operation"] == PAGEABLE:
            times[r["implementation"]] = r["median_ms"]
        elif r["n"] == n and r["operation"] == PAGEABLE_SEQUENTIAL:
            times["sequential"] = r["median_ms"]
    return times


def union_ms(intervals: Iterable[tuple]) -> float:
    """The time covered by at least one of the (start, end) intervals."""
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total
