"""The three views of a GradeRun: the scoreboard printed for the student, results.json in
Gradescope's autograder format, and JUnit XML for any CI or LMS that reads it."""
from __future__ import annotations

import json
import os
import textwrap
from typing import List
from xml.sax.saxutils import escape, quoteattr

from .scoring import (COMPILE_ERROR, CRASHED, MISSING, NOT_IMPLEMENTED, NOT_RUN, PASSED, SKIPPED, STATUS_LABELS,
                      TIMED_OUT, ComponentResult, GradeRun)


def _points(x: float) -> str:
    return f"{x:g}"


def device_line(device: dict) -> str:
    if not device:
        return "GPU: none"
    parts = [f"GPU: {device.get('name', '?')}"]
    if "compute_capability" in device:
        parts.append("sm_" + str(device["compute_capability"]).replace(".", ""))
    if "sm_count" in device:
        parts.append(f"{device['sm_count']} SMs")
    if "copy_bandwidth_gbps" in device:
        parts.append(f"measured copy bandwidth {float(device['copy_bandwidth_gbps']):.0f} GB/s")
    return " · ".join(parts)


def format_scoreboard(run: GradeRun) -> str:
    """The scoreboard: a line per task component, points, the total, then what went wrong."""
    lines: List[str] = []
    mode = " · under compute-sanitizer" if run.sanitize else ""
    lines.append(f"CUDA Workbook · graded: {run.tree} · seed {run.seed}{mode}")
    lines.append(device_line(run.device))
    lines.extend(run.notes)
    problems = []
    shown = []  # passed timed tasks whose counters the lesson shows on every grade ("counters": "always")
    for lesson_result in run.lessons:
        lesson = lesson_result.lesson
        lines.append("")
        head = f"{lesson.slug}  {lesson.title}"
        bonus = f" (+{_points(lesson.bonus_points)} optional)" if lesson.bonus_points else ""
        lines.append(f"{head:<86} {_points(lesson_result.score):>4} / {_points(lesson.max_points)}{bonus}")
        for task_result in lesson_result.tasks:
            task = task_result.task
            lines.append(f"  Task {task.id}  {task.title}" + ("  [optional: bonus points]" if task.optional else ""))
            for c in task_result.components:
                label = STATUS_LABELS[c.status]
                lines.append(f"          {c.kind:<12} {label:<20} {_points(c.score):>3} / {_points(c.max_score):<3} "
                             f"{c.summary if c.status != NOT_IMPLEMENTED else ''}".rstrip())
                if c.status not in (PASSED, NOT_RUN, SKIPPED) and c.details:
                    problems.append((f"{lesson.slug} · Task {task.id} · {c.kind}: {label}", c))
                elif c.status == PASSED and c.details and _not_confirmed(c):
                    problems.append((f"{lesson.slug} · Task {task.id} · {c.kind}: passed, not confirmed under "
                                     "compute-sanitizer", c))
                elif c.status == PASSED and c.extra_data.get("counters") == "shown":
                    shown.append((f"{lesson.slug} · Task {task.id} · {c.kind}: passed", c))
    lines.append("")
    bonus = f" (+{_points(run.bonus_max_score)} optional)" if run.bonus_max_score else ""
    lines.append(f"Total: {_points(run.score)} / {_points(run.max_score)}{bonus}")
    for heading, items in (("What went wrong", problems), ("Counters of the timed calls that passed", shown)):
        if items:
            lines.append("")
            lines.append(heading)
            for title, c in items:
                lines.append("")
                lines.append(title)
                lines.append(textwrap.indent(c.details.strip(), "  "))
    return "\n".join(lines)


def _not_confirmed(c: ComponentResult) -> bool:
    """A pass whose check under compute-sanitizer did not finish (scoring.confirm_correctness)."""
    return c.extra_data.get("sanitizer_check", {}).get("status") in ("not confirmed", "partly confirmed")


def _test_name(lesson_slug: str, task_id: int, task_title: str, kind: str) -> str:
    return f"{lesson_slug} · Task {task_id} · {kind}: {task_title}"


def gradescope_results(run: GradeRun) -> dict:
    """results.json as Gradescope's autograder reads it: a test per task component."""
    tests = []
    for lesson_result in run.lessons:
        for task_result in lesson_result.tasks:
            task = task_result.task
            for c in task_result.components:
                output = f"{STATUS_LABELS[c.status]}: {c.summary}"
                if c.details:
                    output += "\n\n" + c.details.strip()
                extra = {"status": c.status, "metrics": c.metrics, **c.extra_data}
                if task.optional:  # extra credit: Gradescope adds the score and not the maximum
                    extra.update(optional=True, points=c.max_score)
                tests.append({
                    "name": _test_name(lesson_result.lesson.slug, task.id, task.title, c.kind),
                    "number": f"{lesson_result.lesson.number}.{task.id}" + (".p" if c.kind == "performance" else ""),
                    "score": c.score,
                    "max_score": 0 if task.optional else c.max_score,
                    "status": "passed" if c.status == PASSED else "failed",
                    "output": output,
                    "tags": [lesson_result.lesson.slug, task.tag, c.kind],
                    "extra_data": extra,
                })
    return {
        "score": run.score,
        "output": " ".join([f"Graded {run.tree} with seed {run.seed}. {device_line(run.device)}"] + run.notes),
        "visibility": "visible",
        "stdout_visibility": "visible",
        "tests": tests,
        # Seconds each lesson's grading took, by phase (cli.Grader.grade_lesson): what the check of the
        # passes under compute-sanitizer costs against the rest; where some of them went
        # (wall_detail_s); and the run's waits for the GPU lock and its holds (gpu_lock_s), with the
        # seconds its nvidia-smi queries took while it held the GPU alone.
        "extra_data": {"wall_s": {l.lesson.slug: l.wall_s for l in run.lessons if l.wall_s},
                       "wall_detail_s": {l.lesson.slug: l.wall_detail_s for l in run.lessons if l.wall_detail_s},
                       **({"gpu_lock_s": run.gpu_lock_s, "nvidia_smi_s": run.nvidia_smi_s} if run.gpu_lock_s else {}),
                       **({"parked_runs": run.parked} if run.parked else {})},
    }


def _junit_case(lesson_slug: str, task_id: int, c: ComponentResult) -> str:
    head = f'    <testcase classname={quoteattr(f"{lesson_slug}.task_{task_id}")} name={quoteattr(c.kind)}>'
    body = escape(f"{c.summary}\n{c.details}".strip())
    if c.status == PASSED:  # what the pass rests on ("correct, confirmed by memcheck"), details too
        return head + f"<system-out>{body}</system-out></testcase>"
    if c.status in (NOT_RUN, SKIPPED):
        return head + f"<skipped message={quoteattr(c.summary)}/></testcase>"
    if c.status in (CRASHED, TIMED_OUT, COMPILE_ERROR, MISSING):
        return head + f"<error message={quoteattr(c.summary)} type={quoteattr(c.status)}>{body}</error></testcase>"
    return head + f"<failure message={quoteattr(c.summary)} type={quoteattr(c.status)}>{body}</failure></testcase>"


def junit_xml(run: GradeRun) -> str:
    """JUnit XML: a test suite per lesson, a test case per task component."""
    suites = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for lesson_result in run.lessons:
        cases, counts = [], {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for task_result in lesson_result.tasks:
            for c in task_result.components:
                counts["tests"] += 1
                if c.status in (NOT_RUN, SKIPPED):
                    counts["skipped"] += 1
                elif c.status in (CRASHED, TIMED_OUT, COMPILE_ERROR, MISSING):
                    counts["errors"] += 1
                elif c.status != PASSED:
                    counts["failures"] += 1
                cases.append(_junit_case(lesson_result.lesson.slug, task_result.task.id, c))
        for key in totals:
            totals[key] += counts[key]
        attrs = " ".join(f'{k}="{v}"' for k, v in counts.items())
        suites.append(f"  <testsuite name={quoteattr(lesson_result.lesson.slug)} {attrs}>\n" + "\n".join(cases) +
                      "\n  </testsuite>")
    attrs = " ".join(f'{k}="{v}"' for k, v in totals.items())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites name="cuda-workbook" {attrs}>\n' + "\n".join(suites) + "\n</testsuites>\n")


def write_reports(run: GradeRun, directory) -> List[str]:
    """Writes results.json and junit.xml into `directory`; returns their paths."""
    os.makedirs(directory, exist_ok=True)
    json_path = os.path.join(directory, "results.json")
    xml_path = os.path.join(directory, "junit.xml")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(gradescope_results(run), f, indent=2)
        f.write("\n")
    with open(xml_path, "w", encoding="utf-8") as f:
        f.write(junit_xml(run))
    return [json_path, xml_path]
