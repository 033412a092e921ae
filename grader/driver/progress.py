"""What a student has done so far, kept between ./grade runs in one small JSON file per tree
(grade-results/progress.json for exercises/): each task's verdict at its last grading, and how
many of its hints were shown.

Hints come in tiers (lessons/manifest.json, three per task: a nudge, the concept or API, then
something close to the answer) and only on request:
  - `./grade --hint 03.2` shows the next hint of task 2 of lesson 03 and remembers it;
  - a task that fails shows hint 1 the first time, and afterwards the last hint shown, with the
    command for the next one. Failing again never reveals more by itself.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .manifest import Lesson, Task
from .scoring import (COMPILE_ERROR, CRASHED, FAILED, MISSING, NOT_IMPLEMENTED, PASSED, SKIPPED, STATUS_LABELS,
                      TIMED_OUT, GradeRun, TaskResult)

FILE_NAME = "progress.json"
_VERSION = 1


def task_key(lesson: Lesson, task: Task) -> str:
    return f"{lesson.slug[:2]}.{task.id}"


class Progress:
    """The progress file of one tree. Missing or unreadable, it starts empty (and says so once)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tasks: Dict[str, dict] = {}
        self.hints_seen: Dict[str, int] = {}
        self.problem = ""
        try:
            data = json.loads(self.path.read_text())
            if not isinstance(data, dict) or data.get("version") != _VERSION:
                raise ValueError("not a progress file of this version")
            self.tasks = {str(k): dict(v) for k, v in data.get("tasks", {}).items() if isinstance(v, dict)}
            self.hints_seen = {str(k): int(v) for k, v in data.get("hints_seen", {}).items()}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError, AttributeError) as e:
            self.problem = f"{self.path} could not be read ({e}); starting a new one."

    def save(self) -> None:
        """Written whole to a temporary file and renamed, so a reader never sees half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"version": _VERSION, "tasks": self.tasks, "hints_seen": self.hints_seen}
        fd, tmp = tempfile.mkstemp(prefix=".progress-", dir=str(self.path.parent))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, self.path)

    # ---- verdicts -----------------------------------------------------------------------------
    def record(self, run: GradeRun, when: Optional[float] = None) -> None:
        """Each task this run graded, with its verdict. Tasks it did not grade keep theirs."""
        when = time.time() if when is None else when
        mode = "sanitize" if run.sanitize else ""
        for lesson_result in run.lessons:
            for result in lesson_result.tasks:
                if result.correctness.status == SKIPPED:  # no GPU: nothing was learnt
                    continue
                perf = result.performance
                self.tasks[task_key(lesson_result.lesson, result.task)] = {
                    "status": overall_status(result),
                    "score": result.score,
                    "max": result.task.max_points,
                    "correctness": result.correctness.status,
                    "performance": perf.status if perf else None,
                    "when": when,
                    "seed": run.seed,
                    "mode": mode,
                }

    # ---- hints --------------------------------------------------------------------------------
    def next_hint(self, lesson: Lesson, task: Task) -> Tuple[int, str]:
        """Reveals the next hint of a task: (its number from 1, its text). After the last,
        the last again. (0, '') when the task has none."""
        if not task.hints:
            return 0, ""
        key = task_key(lesson, task)
        shown = min(self.hints_seen.get(key, 0) + 1, len(task.hints))
        self.hints_seen[key] = shown
        return shown, task.hints[shown - 1]

    def hint_after_failure(self, lesson: Lesson, task: Task) -> str:
        """What a failed task shows: hint 1 the first time; afterwards the last one shown."""
        if not task.hints:
            return ""
        key = task_key(lesson, task)
        seen = self.hints_seen.get(key, 0)
        total = len(task.hints)
        command = f"./grade --hint {key}"
        if seen == 0:
            self.hints_seen[key] = 1
            more = f" More help: {command}" if total > 1 else ""
            return f"Hint 1 of {total}: {task.hints[0]}{more}"
        seen = min(seen, total)
        if seen < total:
            return f"Hint {seen} of {total} (shown before): {task.hints[seen - 1]} Next one: {command}"
        return f"Hint {seen} of {total}, the last (shown before): {task.hints[seen - 1]}"


# Verdicts worth a hint: the student's code ran and was wrong, crashed, hung or was slow. Not a
# task left untouched, not a compile error (the compiler's message says more), not "no GPU".
_NEEDS_HELP = {FAILED, CRASHED, TIMED_OUT}


def overall_status(result: TaskResult) -> str:
    """One word per task for the progress view."""
    c, p = result.correctness, result.performance
    if c.status != PASSED:
        return c.status
    if p is None or p.status == PASSED:
        return PASSED
    if p.status == FAILED:
        return "slow"
    return "correct"  # correct, not timed (--no-timing, --sanitize) or timing crashed


def needs_help(result: TaskResult) -> bool:
    perf = result.performance
    return result.correctness.status in _NEEDS_HELP or (perf is not None and perf.status in _NEEDS_HELP)


def help_lines(run: GradeRun, progress: Progress) -> List[str]:
    """The hints a run's failed tasks show, one paragraph each (and records them as shown)."""
    lines: List[str] = []
    for lesson_result in run.lessons:
        for result in lesson_result.tasks:
            if not needs_help(result):
                continue
            text = progress.hint_after_failure(lesson_result.lesson, result.task)
            if text:
                lines += ["", f"{lesson_result.lesson.slug} · Task {result.task.id}: {text}"]
    return (["", "Help"] + lines) if lines else []


_WORDS = {PASSED: "passed", "slow": "correct, below the speed threshold", "correct": "correct (not timed)",
          FAILED: "FAILED", CRASHED: "CRASHED", TIMED_OUT: "TIMED OUT", NOT_IMPLEMENTED: "not implemented yet",
          COMPILE_ERROR: "does not compile", MISSING: "missing"}


def format_progress(lessons: List[Lesson], progress: Progress, tree: str, now: Optional[float] = None) -> str:
    """Per lesson, each task's verdict at its last grading, points, and the hints seen."""
    now = time.time() if now is None else now
    lines = [f"Progress of {tree} (each task as it was last graded)"]
    total = total_max = 0.0
    for lesson in lessons:
        lesson_score = 0.0
        rows = []
        for task in lesson.tasks:
            key = task_key(lesson, task)
            entry = progress.tasks.get(key)
            seen = progress.hints_seen.get(key, 0)
            hints = f"  hints seen {seen}/{len(task.hints)}" if seen else ""
            optional = " (optional)" if task.optional else ""
            if entry is None:
                rows.append(f"  {key:<5} {'not graded yet':<38} {'':>9}{hints}  {task.title}{optional}")
                continue
            word = _WORDS.get(entry.get("status", ""), entry.get("status", "?"))
            if entry.get("mode") == "sanitize" and entry.get("status") == PASSED:
                word = "passed under the sanitizer"
            score = float(entry.get("score", 0))
            if not task.optional:
                lesson_score += score
            points = f"{score:g}/{task.max_points:g}"
            rows.append(f"  {key:<5} {word:<38} {points:>9}  {_ago(now - float(entry.get('when', now)))}"
                        f"{hints}  {task.title}{optional}")
        total += lesson_score
        total_max += lesson.max_points
        lines += ["", f"{lesson.slug}  {lesson.title}  {lesson_score:g} / {lesson.max_points:g}"] + rows
    lines += ["", f"Total at the last grading of each task: {total:g} / {total_max:g}"]
    if progress.problem:
        lines += ["", progress.problem]
    return "\n".join(lines)


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return "just now"
