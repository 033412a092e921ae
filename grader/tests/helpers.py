"""Shared by the driver's unit tests: a small manifest and PhaseResults as the grader
programs would report them."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver.manifest import parse_manifest  # noqa: E402
from driver.runner import PhaseResult  # noqa: E402

MANIFEST = {"lessons": [{
    "slug": "01_vector_add", "title": "Vector add", "sources": ["vector_add.cu"], "timeout_s": 30,
    "tasks": [
        {"id": 1, "title": "kernel", "points": {"correctness": 3, "performance": 2},
         "performance": {"metric": "fraction_of_copy_bandwidth", "threshold": 0.6}, "hints": ["Use i < n."]},
        {"id": 2, "title": "host", "points": {"correctness": 4}},
    ]}]}

# A lesson with a GFLOP/s metric and an optional challenge task.
MATMUL = {"lessons": [{
    "slug": "03_matmul", "title": "Matmul", "sources": ["matmul.cu"],
    "tasks": [
        {"id": 1, "title": "tiled", "points": {"correctness": 3, "performance": 2},
         "performance": {"metric": "fraction_of_cublas", "threshold": 0.13}},
        {"id": 2, "title": "challenge", "optional": True, "points": {"correctness": 2, "performance": 2},
         "performance": {"metric": "fraction_of_cublas", "threshold": 0.4}},
    ]}]}


def matmul_lesson():
    return parse_manifest(MATMUL)[0]


def lesson():
    return parse_manifest(MANIFEST)[0]


def phase(*records, **fields):
    """A PhaseResult holding end records given as (outcome, messages, metrics) tuples."""
    result = PhaseResult(**fields)
    for outcome, messages, metrics in records:
        result.records.append({"event": "end", "test": "t", "tags": ["task_1"], "outcome": outcome,
                               "messages": list(messages), "metrics": dict(metrics)})
    return result
