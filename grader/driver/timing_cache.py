"""Figures measured once per GPU and reused by the gradings of a class: the copy bandwidth and
the reference solution's timed figures.

A grading of one submission times the student's kernels, but the yardsticks around them do not
change from one student to the next: the GPU's copy bandwidth, and what the reference solution
reaches on each timed task. ./grade-class therefore gives every ./grade it runs one cache file
(./grade --timing-cache FILE), and each figure is measured by the first grading that needs it on
that GPU and reused by the next ones.

- A figure is kept for the GPU (its UUID) and the program that measured it (its size and time of
  last change: a rebuilt reference is timed again).
- It is measured again after MAX_USES reuses or MAX_AGE_S seconds, whichever comes first, so a
  long class follows the GPU's clocks; each new measurement records how far it moved from the one
  before (`drift`), and ./grade-class reports the largest drift in class.json.
- Only the reference's figures and the copy bandwidth are reused. The reference's own figure is
  reported beside the student's ("87% of the reference") and decides nothing; the copy bandwidth
  and the yardsticks among the reference's figures (cuBLAS's GFLOP/s, a baseline's time: the
  student's program takes them, grader::yardstick) are thresholds' yardsticks, measured with the
  same programs and the same lock as without a cache. A task measured a second time (below its
  threshold) times the reference again rather than reuse its figures.

The file is read and written under a lock of its own (a read-modify-write from several gradings at
once, on several GPUs, loses nothing), and replaced whole, so a reader never sees half of it."""
from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, Optional

# What a damaged or unwritable cache raises on the way; the figure is then measured, as without one.
_DAMAGED = (OSError, ValueError, TypeError, KeyError, AttributeError, ArithmeticError)

MAX_USES = 25
MAX_AGE_S = 900.0
VERSION = 1


def program_identity(program: str) -> Optional[str]:
    """Size and time of last change of a program: a rebuild gives another identity."""
    try:
        stat = os.stat(program)
    except OSError:
        return None
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def _count(value) -> int:
    return value if isinstance(value, int) else 0


def drift(old: Dict[str, float], new: Dict[str, float], metric: str) -> Optional[float]:
    """Relative change of `metric` from one measurement to the next (0.02: 2% higher)."""
    before, after = old.get(metric), new.get(metric)
    if not isinstance(before, (int, float)) or not isinstance(after, (int, float)) or before <= 0:
        return None
    return after / before - 1.0


class TimingCache:
    """One JSON file: {"version": 1, "entries": {key: {"metrics", "program", "measured_at",
    "uses" (since it was measured), "reuses_total", "measurements", "drift": [...]}}}."""

    def __init__(self, path: Path, max_uses: int = MAX_USES, max_age_s: float = MAX_AGE_S,
                 clock=time.time):
        self.path = Path(path)
        self.max_uses, self.max_age_s, self.clock = max_uses, max_age_s, clock

    @staticmethod
    def key(gpu: Optional[str], what: str) -> str:
        return f"{gpu or 'gpu'}/{what}"

    @contextmanager
    def _locked(self) -> Iterator[dict]:
        """The file's contents, under its lock; written back (whole) when the block ends."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(str(self.path) + ".lock", "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            data = self.read()
            before = json.dumps(data, sort_keys=True)
            yield data
            if json.dumps(data, sort_keys=True) != before:
                part = self.path.with_name(f"{self.path.name}.{socket.gethostname()}.{os.getpid()}.part")
                part.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
                part.replace(self.path)

    def read(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {"version": VERSION, "entries": {}}
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), dict):
            return {"version": VERSION, "entries": {}}
        return data

    def take(self, key: str, program: Optional[str]) -> Optional[Dict[str, float]]:
        """The figures kept under `key`, counting one more use; None when there are none, they came
        from another build of `program`, or they are due to be measured again."""
        identity = program_identity(program) if program else "-"
        if identity is None:  # no such program: nothing of it to reuse
            return None
        try:
            return self._take(key, identity)
        except _DAMAGED:  # a cache that cannot be read or written, or holds nonsense: measure, as without one
            return None

    def _take(self, key: str, identity: Optional[str]) -> Optional[Dict[str, float]]:
        with self._locked() as data:
            entry = data["entries"].get(key)
            if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), dict):
                return None
            uses, age = entry.get("uses", 0), self.clock() - entry.get("measured_at", 0)
            # An entry from the future, or with uses below zero, was not written by this module.
            if entry.get("program") != identity or not 0 <= uses < self.max_uses or not 0 <= age <= self.max_age_s:
                return None
            entry["uses"] = entry.get("uses", 0) + 1
            entry["reuses_total"] = entry.get("reuses_total", 0) + 1
            return dict(entry["metrics"])

    def put(self, key: str, program: Optional[str], metrics: Dict[str, float], metric: Optional[str]) -> None:
        """Keeps a new measurement; `metric` is the figure whose drift from the last one is recorded."""
        identity = program_identity(program) if program else "-"
        if identity is None:
            return
        try:
            self._put(key, identity, metrics, metric)
        except _DAMAGED:  # not kept: the next grading measures again
            pass

    def _put(self, key: str, identity: Optional[str], metrics: Dict[str, float], metric: Optional[str]) -> None:
        with self._locked() as data:
            old = data["entries"].get(key)
            old = old if isinstance(old, dict) else {}
            entry = {"metrics": dict(metrics), "program": identity, "measured_at": self.clock(), "uses": 0,
                     "measurements": _count(old.get("measurements")) + 1,
                     "reuses_total": _count(old.get("reuses_total")),
                     "drift": [d for d in old.get("drift") or [] if isinstance(d, (int, float))]}
            before = old.get("metrics") if isinstance(old.get("metrics"), dict) else {}
            moved = drift(before, metrics, metric) if metric and old.get("program") == identity else None
            if moved is not None:
                entry["drift"].append(round(moved, 4))
            data["entries"][key] = entry

    def summary(self) -> dict:
        """For class.json: how many figures were measured and reused, and the largest drift."""
        entries = [e for e in self.read()["entries"].values() if isinstance(e, dict)]
        drifts = [d for e in entries if isinstance(e.get("drift"), list) for d in e["drift"]
                  if isinstance(d, (int, float))]
        return {"figures": len(entries),
                "measurements": sum(_count(e.get("measurements")) for e in entries),
                "reuses": sum(_count(e.get("reuses_total")) for e in entries),
                "largest_drift": max(drifts, key=abs) if drifts else None,
                "max_uses": self.max_uses, "max_age_s": self.max_age_s}
