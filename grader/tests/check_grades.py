#!/usr/bin/env python3
"""End-to-end check of the grader on a GPU: grade a tree with ./grade and compare every
task's verdict with an expectations file. Used by ctest for the reference solutions (full
marks), the untouched exercises (all "not implemented yet") and each broken variant of
lesson 01 (caught, with the right diagnosis). With --sanitize, the same under compute-sanitizer.

Expectations: {"<lesson slug>": {"<task id>": {"correctness": STATUS or
{"status": STATUS, "contains": [text that must appear in the verdict], "hints": [hint ids],
"hints_if_seen": [hint ids], "metrics": {"<metric>": {"min": number, "max": number}}}, "performance": ...}}}

Metrics: each listed metric must be among the component's metrics in results.json and within
its bounds (either may be left out), e.g. a fraction of the copy bandwidth that stays honest.

Hints: every verdict's "Hint [id]" labels must be exactly the "hints" listed for it (none when
none are listed), in every component of the run, so the suite shows both that each hint fires
where its cause is and that it fires nowhere else. "hints_if_seen" are hints a verdict may carry
and need not: those whose evidence a run may or may not show, such as [race] on a kernel that
races (its results differ between two runs only some of the time), where the cause is there.

With --lesson, only those lessons are graded and expected; with --sanitize, a performance expected
to pass is expected skipped (./grade --sanitize times nothing), so the reference solutions'
expectations serve under the sanitizer too.

Exit codes: 0 as expected, 1 not as expected, 77 no GPU (ctest reports it as skipped)."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader"))
from driver.class_grading import GradingSeconds, grading_seconds  # noqa: E402
from driver.manifest import load_manifest, select_lessons  # noqa: E402
SKIP = 77


HINT_ID = re.compile(r"Hint \[([a-z0-9-]+)\]")


def hint_ids(text: str) -> list:
    """The ids of the evidence-backed hints in a verdict, sorted, each once."""
    return sorted(set(HINT_ID.findall(text)))


def check(results: dict, expected: dict) -> list:
    by_key = {}
    for test in results["tests"]:
        slug, task_tag, kind = test["tags"]
        by_key[(slug, task_tag.split("_")[1], kind)] = test
    problems = []
    # Hints: exactly those expected, in every component (listed or not).
    for (slug, task_id, kind), test in by_key.items():
        want = expected.get(slug, {}).get(task_id, {}).get(kind, {})
        want_hints = sorted(set(want.get("hints", []))) if isinstance(want, dict) else []
        maybe = set(want.get("hints_if_seen", [])) if isinstance(want, dict) else set()
        got_hints = [h for h in hint_ids(test["output"]) if h not in maybe or h in want_hints]
        if got_hints != want_hints:
            problems.append(f"{slug} task {task_id} {kind}: hints {got_hints}, expected {want_hints}:\n{test['output']}")
    for slug, tasks in expected.items():
        for task_id, kinds in tasks.items():
            for kind, want in kinds.items():
                want = {"status": want} if isinstance(want, str) else want
                test = by_key.get((slug, task_id, kind))
                where = f"{slug} task {task_id} {kind}"
                if test is None:
                    problems.append(f"{where}: not in results.json")
                    continue
                got = test["extra_data"]["status"]
                if got != want["status"]:
                    problems.append(f"{where}: expected {want['status']}, got {got}:\n{test['output']}")
                for text in want.get("contains", []):
                    if text not in test["output"]:
                        problems.append(f"{where}: the verdict does not mention {text!r}:\n{test['output']}")
                metrics = test["extra_data"].get("metrics", {})
                for metric, bounds in want.get("metrics", {}).items():
                    value = metrics.get(metric)
                    low, high = bounds.get("min", float("-inf")), bounds.get("max", float("inf"))
                    if not isinstance(value, (int, float)) or not low <= value <= high:
                        problems.append(f"{where}: metric {metric} is {value}, expected within [{low}, {high}]")
                points = test["extra_data"].get("points", test["max_score"])  # optional tasks: max_score 0
                if want["status"] == "passed" and test["score"] != points:
                    problems.append(f"{where}: passed with {test['score']} of {points} points")
                if want["status"] != "passed" and test["score"] != 0:
                    problems.append(f"{where}: {got} but scored {test['score']} points")
    return problems


def under_the_sanitizer(expected: dict) -> dict:
    """The expectations of a grading under ./grade --sanitize, which times nothing: a performance
    expected to pass is skipped there (and ./grade's exit status does not count it)."""
    def one(kind, want):
        status = want if isinstance(want, str) else want.get("status")
        return "skipped" if kind == "performance" and status == "passed" else want
    return {slug: {task: {kind: one(kind, want) for kind, want in kinds.items()} for task, kinds in tasks.items()}
            for slug, tasks in expected.items()}


TIMED_OUT_LIMIT_S = 15  # ./grade --timeout for a grading expected to time out (grade_options)
TIME_LINE = "grading time: "  # then JSON: tools/ctest_summary.py adds these up over the suite


def time_line(results: dict) -> str:
    """One line on where the grading's time went (results.json's extra_data): each phase's seconds
    over its lessons, of those the seconds inside the test cases, and the GPU lock's waits and holds."""
    spent = grading_seconds(results)
    rounded = lambda seconds: {k: round(v, 2) for k, v in seconds.items()}  # noqa: E731
    return TIME_LINE + json.dumps({"phases": rounded(GradingSeconds.summed(spent.phases)),
                                   "in_tests": rounded(GradingSeconds.summed(spent.details)),
                                   "lock": rounded(spent.lock)}, sort_keys=True)


def exits_zero(results: dict, expected: dict) -> bool:
    """Whether ./grade should exit 0 on these expectations: every required verdict passed, or for
    a performance, skipped (as under --sanitize, which times nothing: GradeRun.all_passed). Optional
    tasks (challenges) do not count towards the exit status; a grading of optional tasks alone has
    no required verdict, which GradeRun.all_passed counts as not all passed."""
    optional = {(t["tags"][0], t["tags"][1].split("_")[1]) for t in results["tests"]
                if t["extra_data"].get("optional")}
    required = [(kind, v if isinstance(v, str) else v["status"])
                for slug, tasks in expected.items() for task_id, kinds in tasks.items()
                if (slug, task_id) not in optional for kind, v in kinds.items()]
    return bool(required) and all(status in (("passed", "skipped") if kind == "performance" else ("passed",))
                                  for kind, status in required)


def caught_tasks(expected: dict) -> dict:
    """The expectations of the tasks a broken variant breaks: those with any verdict other than a
    plain "passed". The others run the reference's own code, which the reference's grading checks;
    a variant that breaks nothing keeps every task."""
    caught = {slug: {task_id: kinds for task_id, kinds in tasks.items()
                     if any(want != "passed" for want in kinds.values())}
              for slug, tasks in expected.items()}
    caught = {slug: tasks for slug, tasks in caught.items() if tasks}
    return caught or expected


def selectors(expected: dict) -> list:
    """./grade's selectors of exactly the tasks `expected` lists ("04_reduction.2")."""
    return [f"{slug}.{task_id}" for slug, tasks in expected.items() for task_id in tasks]


def grade_options(expected: dict, args: argparse.Namespace) -> list:
    """./grade's options for a grading with these expectations (and check_grades' own options)."""
    verdicts = [(kind, want if isinstance(want, str) else (want or {}).get("status"))
                for tasks in expected.values() for kinds in tasks.values() for kind, want in kinds.items()]
    # Nothing to time when no performance verdict is expected (passed or failed): correctness only,
    # which keeps the broken variants cheap on the GPU.
    timed = any(kind == "performance" and status in ("passed", "failed") for kind, status in verdicts)
    # A grading expected to run out of time gets a short limit: the verdict is the same at any limit
    # that leaves a stuck launch half of it after the program's start (scoring.py's STUCK_SHARE), and
    # meanwhile its tests hold the GPU, which a timed phase waiting for it cannot have (lesson 01's
    # 30 s, on the H100).
    timed_out = ("correctness", "timed_out") in verdicts
    return ((["--sanitize"] if args.sanitize else []) + ([] if timed or args.sanitize else ["--no-timing"]) +
            ([] if args.counters else ["--no-counters"]) +
            (["--timing-cache", args.timing_cache] if args.timing_cache and timed else []) +
            (["--timeout", str(TIMED_OUT_LIMIT_S)] if timed_out else []))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--tree", required=True)
    parser.add_argument("--expect", required=True)
    parser.add_argument("--lesson", action="append", default=[])
    parser.add_argument("--listed-tasks", action="store_true",
                        help="grade only the tasks the expectations list (./grade 04.2), not their whole lessons: "
                             "for a grading that checks one task's verdict, such as the counters of a slow kernel")
    parser.add_argument("--caught-tasks", action="store_true",
                        help="grade and check only the tasks a broken variant breaks (caught_tasks: those expected "
                             "to be anything but passed), as --listed-tasks does: its other tasks are the reference's")
    parser.add_argument("--sanitize", action="store_true", help="grade under compute-sanitizer (./grade --sanitize)")
    parser.add_argument("--counters", action="store_true",
                        default=os.environ.get("WORKBOOK_E2E_COUNTERS") == "1",
                        help="let ./grade profile a task that fell short (Nsight Compute); off by default, or "
                             "with WORKBOOK_E2E_COUNTERS=1, since profiling holds the GPU alone")
    parser.add_argument("--timing-cache", help="./grade --timing-cache FILE: the copy bandwidth and the reference's "
                        "timed figures measured once and shared by the gradings that name the same FILE (the suite's "
                        "gradings, as ./grade-class shares them within a class)")
    args = parser.parse_args()
    expected = json.loads(Path(args.expect).read_text())
    if args.lesson:  # only the lessons named are graded (named as ./grade names them), so only theirs are expected
        named = {l.slug for l in select_lessons(load_manifest(ROOT / "lessons" / "manifest.json"), args.lesson)}
        expected = {slug: tasks for slug, tasks in expected.items() if slug in named}
    if args.caught_tasks:
        expected = caught_tasks(expected)
    if args.sanitize:
        expected = under_the_sanitizer(expected)
    listed = args.listed_tasks or args.caught_tasks
    with tempfile.TemporaryDirectory() as results_dir:
        command = [sys.executable, str(ROOT / "grade"), "--no-build", "--build-dir", args.build_dir,
                   "--tree", args.tree, "--results", results_dir] + grade_options(expected, args) + \
                  (args.lesson or (selectors(expected) if listed else list(expected)))
        process = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        output = process.stdout.decode(errors="replace")
        results_path = Path(results_dir) / "results.json"
        if process.returncode != 3 and results_path.exists():
            # First, where ctest's report keeps it (the first 1024 bytes of a passed test's output).
            try:
                print(time_line(json.loads(results_path.read_text())))
            except ValueError:
                pass  # said below, with the rest
        print(output)
        if process.returncode == 3:
            print("skipped: no GPU")
            return SKIP
        if not results_path.exists():
            print(f"FAIL: ./grade exited {process.returncode} without writing results.json")
            return 1
        results = json.loads(results_path.read_text())
    problems = check(results, expected)
    all_pass_expected = exits_zero(results, expected)
    if (process.returncode == 0) != all_pass_expected:
        problems.append(f"./grade exited {process.returncode}; expected "
                        f"{'0 (all passed)' if all_pass_expected else '1 (not all passed)'}")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(problems)} problem(s)" if problems else "as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
