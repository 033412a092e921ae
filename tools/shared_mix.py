#!/usr/bin/env python3
"""How fast one GPU gets through a class's shared phases: the correctness and sanitizer-check
processes of every lesson for S students (the reference solutions, as a class of correct
students), run C at a time, without the driver, the lock or the timed phases.

    tools/shared_mix.py BUILD_DIR [--students S] [--at-once C [C ...]] [--lessons 01 03 ...] [--tests]

Each student's processes are those ./grade-class runs for a lesson whose tasks all pass: the
lesson's correctness tests in one process at full sizes, then one compute-sanitizer process per
tool the manifest names, over the tasks that name it, in sanitizer mode (the sanitizer's command
line, the tools, the spec, WORKBOOK_SANITIZE and the environment are the driver's own:
sanitizer.command, cli.sanitizer_tools, cli.check_run, runner.program_environment). Every
process gets the same --rng-seed, so that two runs draw the same shapes. One process per tool is
what a class runs (./grade --one-check-per-tool); ./grade alone may split racecheck per task.
Left out: the tools side by side within one grading, and the tests run with the GPU held alone. It prints, for each C, the seconds a student took; then
each process of one student alone, so that the slowest can be found; and exits 1 when a process
failed. A class's shared phases also hold broken submissions (hangs, crashes, reruns), which this
leaves out: it is the floor for correct work, a quick way (about 3 minutes on an H100, where a
class of 12 takes 7) to see what a change to the tests or the tools saves.

With --tests, every process also reports its test cases' seconds (Catch2's --durations), and
the report ends with each process alone against its mean at the last --at-once count, and the
test cases that the sharing slowed the most: where the round trips to the GPU are. Each round
trip (a wait, a cudaMalloc or cudaFree, a blocking copy) costs about a millisecond when 8
processes share the GPU, 10-100 times what it costs alone (grader/README.md, "Why side by side
buys little beyond 4 at once"). On an H200 (28 November 2026), 8 students at 8 at once: lesson
02 task 1's test of every block size and grid took 0.35 s alone and 5.4 s in the mix, lesson 04
task 1's 0.46 s and 4.1 s; after the round trips of the grader's checks were cut (one wait per
poison, one copy per guard check, a scratch for the checks' results), 2.1 s and 2.3 s, and a
student's shared phases went from 11.5 s to 9.9 s.

Measured on an H100 (28 November 2026) with a script that ran the same processes (random seeds,
no --print-limit), three students, one run each: one process at a time 32.1 s a student, 4 at
once 15.6 s, 8 at once 15.0 s; the processes slow each other through the GPU (grader/README.md,
"Why side by side buys little beyond 4 at once"). Racecheck was about 45% of the time one at a
time; with a first subset of its shapes (then grader::racecheck_mode) 30.1 s, and 13.3 s at 4."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "grader"))
from driver import build, cli, manifest, runner, sanitizer  # noqa: E402

SEED = 20261128  # every process's --rng-seed: the same shapes from one run to the next

Job = Tuple[str, List[str], Dict[str, str]]  # label, command, environment added


def lesson_jobs(lesson: manifest.Lesson, program: str, executable: str, default_queues: bool = False) -> List[Job]:
    """One lesson's processes, in the order ./grade-class runs them for a lesson that passes, each
    with what the driver gives a process that times nothing (runner.untimed_settings), or with
    `default_queues` without it."""
    untimed = {} if default_queues else runner.untimed_settings(lesson)
    seed = ["--rng-seed", str(SEED), "--reporter", "compact"]
    jobs: List[Job] = [(f"{lesson.slug} correctness", [program, "~[perf]"] + seed, dict(untimed))]
    for tool in cli.sanitizer_tools(lesson.tasks):
        spec, settings = cli.check_run([t for t in lesson.tasks if tool in t.sanitizers], tool)
        command = sanitizer.command(executable, tool, check=True) + [program, spec] + seed
        jobs.append((f"{lesson.slug} {tool}", command, dict(untimed, **settings)))
    return jobs


def all_jobs(index: dict, lessons: Sequence[manifest.Lesson], executable: str,
             default_queues: bool = False) -> List[Job]:
    """Every lesson's processes for one student: the solutions' programs the build index names
    (lesson_jobs: `default_queues`)."""
    programs = build.programs(index, "solutions")
    jobs: List[Job] = []
    for lesson in lessons:
        program = programs.get(lesson.slug)
        if not program or not os.path.isfile(program):
            raise SystemExit(f"shared_mix.py: the solutions' program of {lesson.slug} is not built "
                             f"({program or 'not in the build index'})")
        jobs += lesson_jobs(lesson, program, executable, default_queues)
    return jobs


Run = Tuple[str, float, int, Dict[str, float]]  # label, seconds, exit status, each test case's seconds

_DURATION = re.compile(r"^\s*(\d+\.\d{3}) s: (.+?)\s*$")  # Catch2 prints three decimals


def parse_durations(output: str) -> Dict[str, float]:
    """Each test case's seconds, from the lines Catch2's --durations yes prints ("0.123 s: name")."""
    seconds: Dict[str, float] = {}
    for line in output.splitlines():
        match = _DURATION.match(line)
        if match:
            seconds[match.group(2)] = seconds.get(match.group(2), 0.0) + float(match.group(1))
    return seconds


def run_job(job: Job, tests: bool = False) -> Run:
    """One process; with `tests`, its test cases' seconds too."""
    label, command, env = job
    started = time.monotonic()
    done = subprocess.run(command + (["--durations", "yes"] if tests else []), stdout=subprocess.PIPE if tests
                          else subprocess.DEVNULL, stderr=subprocess.STDOUT if tests else subprocess.DEVNULL,
                          env=runner.program_environment(env))
    seconds = time.monotonic() - started
    return label, seconds, done.returncode, parse_durations(done.stdout.decode(errors="replace")) if tests else {}


def run_all(jobs: Sequence[Job], students: int, at_once: int, tests: bool = False
            ) -> Tuple[float, List[str], List[Run]]:
    """The seconds `students` copies of `jobs` took, `at_once` processes at a time, the jobs
    that failed, and every process's run."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=at_once) as pool:
        results = list(pool.map(lambda job: run_job(job, tests), [job for _ in range(students) for job in jobs]))
    failed = sorted({f"{label} (exit {code})" for label, _, code, _ in results if code != 0})
    return time.monotonic() - started, failed, results


def slowdowns(alone: Sequence[Run], mixed: Sequence[Run], top: int = 30) -> List[str]:
    """The report of --tests: each process alone against its mean in the mix, the most slowed
    first; then the `top` test cases the mix slowed the most, in seconds added."""
    processes: Dict[str, List[float]] = defaultdict(list)
    cases: Dict[Tuple[str, str], List[float]] = defaultdict(list)
    for label, seconds, _, tests in mixed:
        processes[label].append(seconds)
        for name, s in tests.items():
            cases[(label, name)].append(s)
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    lines = ["each process: alone, mean in the mix (s)"]
    rows = [(mean(processes[label]) - seconds, f"  {seconds:6.2f} {mean(processes[label]):6.2f}  {label}")
            for label, seconds, _, _ in alone if processes.get(label)]
    lines += [text for _, text in sorted(rows, key=lambda r: -r[0])]
    lines.append(f"the {top} test cases the mix slowed the most: alone, mean in the mix (s)")
    by_label = {label: tests for label, _, _, tests in alone}
    rows = []
    for (label, name), values in cases.items():
        was, now = by_label.get(label, {}).get(name, 0.0), mean(values)
        rows.append((now - was, f"  {was:6.3f} {now:6.3f}  {label}: {name}"))
    lines += [text for _, text in sorted(rows, key=lambda r: -r[0])[:top]]
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", type=Path)
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--at-once", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--lessons", nargs="*", default=[])
    parser.add_argument("--tests", action="store_true",
                        help="also each test case's seconds, alone and in the mix (Catch2's --durations)")
    parser.add_argument("--cuda-default-queues", action="store_true",
                        help="without the driver's runner.UNTIMED_SETTINGS (CUDA's own number of work queues a "
                             "context): what that setting saves")
    args = parser.parse_args(argv)
    if args.students < 1 or any(c < 1 for c in args.at_once):
        parser.error("--students and --at-once take counts of 1 or more")
    index = build.load_index(args.build_dir)
    if index is None:
        raise SystemExit(f"shared_mix.py: {args.build_dir} is not configured (cmake --preset test)")
    executable, why = sanitizer.find_sanitizer(index)
    if executable is None:
        raise SystemExit(f"shared_mix.py: no compute-sanitizer: {why}")
    lessons = manifest.select_lessons(manifest.load_manifest(ROOT / "lessons" / "manifest.json"), args.lessons)
    jobs = all_jobs(index, lessons, executable, args.cuda_default_queues)
    print(f"{len(jobs)} processes a student, {args.students} students")
    status = 0
    mixed: List[Run] = []
    for at_once in args.at_once:
        seconds, failed, mixed = run_all(jobs, args.students, at_once, args.tests)
        status = status or (1 if failed else 0)
        print(f"{at_once} at once: {seconds / args.students:.1f} s a student ({seconds:.1f} s)"
              + (f"; FAILED: {', '.join(failed)}" if failed else ""), flush=True)
    print("one student's processes, one at a time:")
    alone = [run_job(job, args.tests) for job in jobs]
    for label, seconds, code, _ in alone:
        status = status or (1 if code else 0)
        print(f"  {seconds:6.2f} s  {label}" + (f"  (exit {code})" if code else ""), flush=True)
    if args.tests:
        print(f"alone and at {args.at_once[-1]} at once:")
        print("\n".join(slowdowns(alone, mixed)))
    return status


if __name__ == "__main__":
    sys.exit(main())
