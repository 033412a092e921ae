"""./grade-class: grade a whole class with one command, on one GPU machine or a Slurm cluster.

    ./grade-class SUBMISSIONS [LESSON ...] [--out DIR]

1. Intake (submissions.py): each submission's lesson files, and only those, are copied into a
   tree of its own under OUT/work/; its feedback folder lists what was taken and ignored.
2. Build: every tree is registered in one build directory, configured once and built in one
   parallel run of the build tool over all cores (`-k 0`: one student's compile error stops no
   one else); the compiler's errors of each lesson that does not compile are kept for its report.
3. Grade: one ./grade per submission (--no-build, one seed for the class), one at a time per
   GPU and on every GPU at once; the per-GPU lock (gpu_lock.py) keeps timed phases alone. A
   submission that crashes, hangs or does not compile costs only itself; a grading that does
   not finish in its time is stopped and reported.
4. Reports: OUT/feedback/<student>/ (scoreboard.txt, results.json, junit.xml, files.txt,
   grade.json), OUT/gradebook.csv, OUT/summary.txt and OUT/score_distribution.png.

Re-running skips the submissions already graded with the same files, seed and lessons
(--regrade NAME or --regrade-all grade them again). --slurm runs step 3 as a Slurm job array,
one shard of submissions and one GPU per array task, and a last job merges the shards."""
from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import queue
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from . import build, counters
from .manifest import Lesson, ManifestError, load_manifest, select_lessons
from .reports import write_reports
from .scoring import COMPILE_ERROR, MISSING, GradeRun, lesson_not_gradable
from .submissions import Intake, Submission, SubmissionError, find_submissions, take_files, unpack

EXIT_OK, EXIT_USAGE, EXIT_BUILD, EXIT_SOME_NOT_GRADED = 0, 2, 4, 6
GRADED, EMPTY, UNREADABLE, NO_GPU, GRADER_ERROR, NOT_GRADED = (
    "graded", "empty", "unreadable", "no_gpu", "grader_error", "not_graded")
FINAL = {GRADED, EMPTY, UNREADABLE}  # statuses a re-run keeps; the others are tried again


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="./grade-class",
        description="Grade a whole class: every submission in a folder, with one seed, into a gradebook, a feedback "
                    "folder per student and a class summary. Only the files students are meant to edit (each "
                    "lesson's sources in lessons/manifest.json) are taken from a submission and compiled into this "
                    "copy of the workbook.",
        epilog="A submission is a folder laid out like exercises/ (or a whole workbook checkout, or a git checkout),\n"
               "or a .zip or .tar.gz of one, named after the student (alice/, bob.zip, carol.tar.gz).\n\n"
               "examples:\n"
               "  ./grade-class ~/hw1                     grade every lesson, reports in ./hw1-grades/\n"
               "  ./grade-class ~/hw1 01 02 --out ~/hw1-grades   lessons 01 and 02 only\n"
               "  ./grade-class ~/hw1                     again: grades only new or changed submissions\n"
               "  ./grade-class ~/hw1 --regrade alice bob grade these two again\n"
               "  ./grade-class ~/hw1 --slurm --slurm-option=--partition=gpu   a Slurm job array, then a merge job\n"
               "  ./grade-class ~/hw1 --merge             rebuild gradebook and summary from the feedback folders\n\n"
               "Exit status: 0 every submission graded; 2 bad arguments; 4 the build could not be set up;\n"
               "6 some submissions could not be graded (no GPU, or the grader failed): see the gradebook's status.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", help="folder of submissions, one folder or archive per student")
    parser.add_argument("lessons", nargs="*", metavar="LESSON", help="lessons to grade (default: all)")
    parser.add_argument("--out", help="output folder (default: <SUBMISSIONS>-grades in the current directory)")
    parser.add_argument("--seed", type=int, help="seed of every random input (default: the class's recorded one, "
                                                 "else a fresh one, recorded in OUT/class.json)")
    parser.add_argument("--regrade", nargs="+", metavar="NAME", default=[], help="grade these submissions again")
    parser.add_argument("--regrade-all", action="store_true", help="grade every submission again")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("SLURM_CPUS_PER_TASK") or os.cpu_count() or 2),
                        help="parallel compile jobs (default: all cores, or the CPUs Slurm gave the task)")
    parser.add_argument("--gpus", help="comma-separated GPU indices to grade on (default: CUDA_VISIBLE_DEVICES, "
                                       "else every GPU nvidia-smi lists)")
    parser.add_argument("--per-gpu", type=int, metavar="N",
                        help="gradings at once on each GPU (default: one per 8 GiB of the smallest GPU's memory and "
                             "per 2 cores a GPU, at most 8: 8 on a 16-core H100, 2 on a 4-core T4); correctness "
                             "tests then share the GPU, and the per-GPU lock still times every performance phase "
                             "alone")
    parser.add_argument("--no-timing", action="store_true", help="correctness only (performance scores nothing)")
    counters_choice = parser.add_mutually_exclusive_group()
    counters_choice.add_argument("--no-counters", action="store_true",
                                 help="do not profile a submission's kernel that fell short of its threshold (./grade "
                                      "--no-counters): quicker, the verdict without the hardware's counters")
    counters_choice.add_argument("--all-counters", action="store_true",
                                 help="also profile the tasks that show their counters on every grade when they "
                                      "passed (lesson 06), as ./grade alone does (default: only the kernels that fell "
                                      "short are profiled, ./grade --counters-when-short; the verdicts are the same)")
    parser.add_argument("--fresh-timings", action="store_true",
                        help="time the reference solution and the copy bandwidth in every grading, as ./grade alone "
                             "does (default: once per GPU, reused by the next gradings and measured again after "
                             "25 of them or 15 minutes; the reference's figure is only reported beside the student's)")
    parser.add_argument("--timeout", type=float, help="seconds each task may run (default: the lesson's)")
    parser.add_argument("--build-dir", help="build directory (default: OUT/build)")
    parser.add_argument("--merge", action="store_true",
                        help="only write the gradebook and summary from the feedback folders (after --slurm)")
    parser.add_argument("--shard", help=argparse.SUPPRESS)  # I/N: what one Slurm array task grades
    parser.add_argument("--prebuilt", action="store_true", help=argparse.SUPPRESS)  # shards: the build is shared
    slurm = parser.add_argument_group("Slurm")
    slurm.add_argument("--slurm", action="store_true", help="grade as a Slurm job array, one GPU per array task, "
                                                           "then merge the shards in a job that depends on it")
    slurm.add_argument("--shards", type=int, help="array tasks (default: one per 4 submissions, at most 32)")
    slurm.add_argument("--slurm-build", choices=("shared", "per-task"), default="shared",
                       help="shared: build here once, in OUT/build, which every node must see (default); per-task: "
                            "each array task builds its own shard in node-local temporary space")
    slurm.add_argument("--slurm-gpus", type=int, default=1, help="GPUs per array task (--gres=gpu:N); 0 asks for "
                                                                "none (a cluster without GPUs: tasks report no GPU)")
    slurm.add_argument("--slurm-cpus", type=int, default=2, help="CPUs per array task (default 2; with "
                                                                "--slurm-build per-task more build faster)")
    slurm.add_argument("--slurm-option", action="append", default=[], metavar="OPTION",
                       help="an sbatch option for every job, e.g. --slurm-option=--partition=gpu (repeatable)")
    slurm.add_argument("--wait", action="store_true", help="with --slurm: wait for the merge job and print the summary")
    args = parser.parse_args(argv)
    if args.seed is not None and not 0 < args.seed < 2**31:
        parser.error("--seed must be between 1 and 2147483647")
    if args.shard and not re.fullmatch(r"\d+/\d+", args.shard):
        parser.error("--shard is I/N")
    if args.jobs < 1 or (args.per_gpu is not None and args.per_gpu < 1):
        parser.error("--jobs and --per-gpu must be at least 1")
    return args


# ---------------------------------------------------------------------------------------------
# The class's record and each student's result


@dataclass
class Paths:
    out: Path

    @property
    def record(self) -> Path:
        return self.out / "class.json"

    @property
    def timing_cache(self) -> Path:
        return self.out / "timing_cache.json"

    def work(self, name: str) -> Path:
        return self.out / "work" / name

    def tree(self, name: str) -> Path:
        return self.out / "work" / "trees" / name  # its folder name names its grader programs

    def feedback(self, name: str) -> Path:
        return self.out / "feedback" / name

    def result(self, name: str) -> Path:
        return self.feedback(name) / "grade.json"


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, indent=2) + "\n")
    part.replace(path)  # a reader (or a resumed run) never sees half a file


def read_json(path: Path) -> Optional[dict]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def workbook_commit(root: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=10).stdout.decode().strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def task_key(lesson: Lesson, task) -> str:
    return f"{lesson.slug[:2]}.{task.id}"


def points_from_results(results: dict, lessons: List[Lesson]) -> Tuple[Dict[str, float], List[str]]:
    """Per-task points (correctness + performance) from a results.json, and the lessons' problems
    worth a word in the gradebook (compile errors, tampering)."""
    points: Dict[str, float] = {}
    notes: List[str] = []
    by_slug = {lesson.slug: lesson for lesson in lessons}
    for test in results.get("tests", []):
        tags = test.get("tags", [])
        if len(tags) < 2 or tags[0] not in by_slug or not tags[1].startswith("task_"):
            continue
        key = f"{tags[0][:2]}.{tags[1][5:]}"
        points[key] = points.get(key, 0.0) + float(test.get("score", 0))
        status = test.get("extra_data", {}).get("status")
        if status == COMPILE_ERROR and f"{tags[0]} does not compile" not in notes:
            notes.append(f"{tags[0]} does not compile")
        if status == "tampered" and f"{key}: report tampered" not in notes:
            notes.append(f"{key}: report tampered")
    return points, notes


# ---------------------------------------------------------------------------------------------
# Progress bar


class ProgressBar:
    """`[#####.....] 7/24 graded · 2 GPUs · ETA 3m10s` on a terminal; a line per step elsewhere."""

    def __init__(self, total: int, what: str, stream=sys.stdout):
        self.total, self.what, self.stream = max(total, 1), what, stream
        self.done, self.start = 0, time.monotonic()
        self.tty = stream.isatty()
        self.lock = threading.Lock()

    def eta(self) -> str:
        if self.done == 0:
            return "ETA --"
        left = (time.monotonic() - self.start) / self.done * (self.total - self.done)
        return "ETA " + (f"{int(left // 60)}m{int(left % 60):02d}s" if left >= 60 else f"{int(left)}s")

    def step(self, line: str = "", count: int = 1, done: Optional[int] = None) -> None:
        with self.lock:
            self.done = done if done is not None else self.done + count
            filled = int(30 * self.done / self.total)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {self.what} · {self.eta()}"
            if self.tty:
                if line:
                    self.stream.write("\r\033[K" + line + "\n")
                self.stream.write("\r\033[K" + bar)
                if self.done >= self.total:
                    self.stream.write("\n")
            elif line:
                self.stream.write(f"[{self.done:>{len(str(self.total))}}/{self.total}, {self.eta()}] {line}\n")
            self.stream.flush()


# ---------------------------------------------------------------------------------------------
# Intake


def intake_one(sub: Submission, lessons: List[Lesson], paths: Paths) -> dict:
    """Unpacks a submission and takes its lesson files; returns its intake record (also in
    work/<name>/intake.json, and as files.txt in its feedback folder)."""
    record = {"name": sub.name, "source": str(sub.path), "kind": sub.kind}
    try:
        folder = unpack(sub, paths.work(sub.name) / "unpacked")
        intake = take_files(folder, lessons, paths.tree(sub.name))
        record.update(taken=intake.taken, missing=intake.missing, refused=intake.refused, ignored=intake.ignored,
                      digest=intake.digest, description=intake.describe(), commit=intake.commit)
        if not intake.taken:
            record["problem"] = ("no lesson file in the submission: expected " +
                                 ", ".join(f"{l.slug}/{s}" for l in lessons for s in l.sources) +
                                 (", in a folder laid out like exercises/" if not intake.tree_root else ""))
    except SubmissionError as e:
        record.update(taken=[], digest="", unreadable=str(e), description=f"The submission could not be read: {e}")
    except OSError as e:
        record.update(taken=[], digest="", unreadable=f"{type(e).__name__}: {e}",
                      description=f"The submission could not be read: {e}")
    write_json(paths.work(sub.name) / "intake.json", record)
    feedback = paths.feedback(sub.name)
    feedback.mkdir(parents=True, exist_ok=True)
    (feedback / "files.txt").write_text(f"Submission: {sub.path.name} ({sub.kind})\n{record['description']}\n")
    return record


# ---------------------------------------------------------------------------------------------
# Build


def build_class(root: Path, build_dir: Path, trees: Dict[str, Path], lessons: List[Lesson], jobs: int,
                changed: Optional[set] = None, first: Optional[set] = None,
                first_built: Optional[Callable[[], None]] = None) -> None:
    """Configures once for every tree and builds every grader program in one parallel run of the
    build tool that keeps going past errors; saves each failing lesson's compiler errors. The
    programs of `changed` trees (None: all) are deleted first: a resubmission that no longer
    compiles must not leave its old program behind to be graded.

    With `first` (some of the trees' names) the build comes in two parts: the helper, the
    reference's programs and the `first` trees' (errors saved), then `first_built()` is called, so
    their gradings can start, and the other trees' programs are built after it, at a lower
    priority (nice), without a progress bar (ClassBuild)."""
    slugs = {lesson.slug for lesson in lessons}
    with build.locked(build_dir, "class"):
        registered = build.register_trees(build_dir, trees)
        index = build.load_index(build_dir)
        if registered or index is None or any(name not in index.get("trees", {}) for name in trees):
            print(f"Configuring the build in {build_dir} for {len(trees)} submissions ...", flush=True)
            index = build.configure(root, build_dir)
        wanted: List[Tuple[str, str, str]] = []  # (tree, slug, program)
        for name in sorted(trees):
            for slug, program in build.programs(index, name).items():
                if slug in slugs:
                    wanted.append((name, slug, program))
        for name, slug, program in wanted:
            if changed is None or name in changed:
                Path(program).unlink(missing_ok=True)
            build.error_log_path(build_dir, name, slug).unlink(missing_ok=True)
        targets = ["workbook_device_info"] + [build.grader_target(slug, "solutions")
                                              for slug in build.programs(index, "solutions") if slug in slugs]
        now = [w for w in wanted if first is None or w[0] in first]
        later = [w for w in wanted if first is not None and w[0] not in first]
        run_build_tool(build_dir, targets + [build.grader_target(slug, name) for name, slug, _ in now], jobs)
        if not Path(index["device_info"]).is_file():
            ok, log = build.build_target(build_dir, "workbook_device_info")
            if not ok:
                raise build.BuildError("the helper library does not compile:\n" + build.first_errors(log))
        save_compile_errors(build_dir, now)
        if first_built is not None:
            first_built()
        if later:
            started = time.monotonic()
            run_build_tool(build_dir, [build.grader_target(slug, name) for name, slug, _ in later], jobs, quiet=True)
            save_compile_errors(build_dir, later, quiet=True)
            print(f"Built the other {len({name for name, _, _ in later})} submissions' programs in "
                  f"{time.monotonic() - started:.0f} s, beside the first gradings.", flush=True)


def save_compile_errors(build_dir: Path, wanted: List[Tuple[str, str, str]], quiet: bool = False) -> None:
    """The compiler's first errors of each wanted (tree, slug, program) that was not built, built
    again alone, into its error log (./grade --no-build reports them as "does not compile")."""
    failed = [(name, slug) for name, slug, program in wanted if not Path(program).is_file()]
    for i, (name, slug) in enumerate(failed):
        if not quiet:
            print(f"  collecting the compiler's errors: {name} {slug} ({i + 1}/{len(failed)})", flush=True)
        _, log = build.build_target(build_dir, build.grader_target(slug, name))
        path = build.error_log_path(build_dir, name, slug)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(build.first_errors(log) + "\n")


class ClassBuild:
    """The class's build beside its first gradings (main): build_class in a thread of its own,
    with `first` (the submissions the gradings start with) built first. wait_first() returns once
    those can be graded (or the build failed before); ready(name) waits until a submission's
    programs are built and says why not when the build failed. stop() ends the build tool's run
    under way (Ctrl-C)."""

    def __init__(self, root: Path, build_dir: Path, trees: Dict[str, Path], lessons: List[Lesson], jobs: int,
                 changed: Optional[set], first: set):
        self.first = set(first)
        self.error: Optional[BaseException] = None
        self._first, self._all = threading.Event(), threading.Event()
        self.first_s: Optional[float] = None
        self.all_s: Optional[float] = None
        started = time.monotonic()

        def first_built() -> None:
            self.first_s = time.monotonic() - started
            self._first.set()

        def run() -> None:
            try:
                build_class(root, build_dir, trees, lessons, jobs, changed, self.first, first_built)
            except BaseException as e:  # noqa: BLE001 - said where the gradings wait for it
                self.error = e
            finally:
                self.all_s = time.monotonic() - started
                self._first.set()
                self._all.set()

        self.thread = threading.Thread(target=run, name="class-build", daemon=True)
        self.thread.start()

    def wait_first(self) -> None:
        while not self._first.wait(0.5):  # in steps, so that Ctrl-C reaches the main thread
            pass

    def ready(self, name: str) -> Optional[str]:
        if name in self.first:
            self.wait_first()
            built = self.first_s is not None
        else:
            while not self._all.wait(0.5):
                pass
            built = self.error is None
        return None if built else f"the class's build failed: {self.error}"

    def stop(self) -> None:
        stop_build_tools()


_NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")
_MAKE_PROGRESS = re.compile(r"^\[\s*(\d+)%\]")


_BUILD_TOOLS: set = set()  # the build tool's runs under way (run_build_tool), for stop_build_tools
_BUILD_TOOLS_LOCK = threading.Lock()


def stop_build_tools() -> None:
    """Ends the build tool's runs under way (their process groups)."""
    with _BUILD_TOOLS_LOCK:
        running = list(_BUILD_TOOLS)
    for process in running:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run_build_tool(build_dir: Path, targets: List[str], jobs: int, quiet: bool = False) -> None:
    """One run of the build tool over `targets`, keeping going past errors; with a progress bar,
    or `quiet`ly and at a lower priority (nice 10: beside gradings under way)."""
    command = ["cmake", "--build", str(build_dir), "--parallel", str(jobs), "--target", *targets, "--",
               *build.keep_going(build_dir)]
    if quiet:
        if shutil.which("nice"):
            command = ["nice", "-n", "10"] + command
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        with _BUILD_TOOLS_LOCK:
            _BUILD_TOOLS.add(process)
        try:
            process.wait()
        finally:
            with _BUILD_TOOLS_LOCK:
                _BUILD_TOOLS.discard(process)
        return
    print(f"Building {len(targets)} programs with {jobs} parallel jobs ...", flush=True)
    bar = ProgressBar(100, "% built")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    last = -1
    for raw in process.stdout:
        line = raw.decode(errors="replace")
        m = _NINJA_PROGRESS.match(line)
        percent = int(100 * int(m.group(1)) / max(int(m.group(2)), 1)) if m else None
        m = _MAKE_PROGRESS.match(line) if percent is None else None
        percent = int(m.group(1)) if m else percent
        if percent is not None and percent != last and (bar.tty or percent // 10 != last // 10):
            last = percent
            bar.step("" if bar.tty else f"build {percent}% done", done=percent)
    process.wait()
    if last < 100:
        bar.step(done=100)


# ---------------------------------------------------------------------------------------------
# Grading


def available_gpus(given: Optional[str]) -> List[Optional[str]]:
    """The GPUs to grade on, as CUDA_VISIBLE_DEVICES values; [None] when none is known (then
    every grading reports that no GPU was found, and the gradebook says so)."""
    if given:
        return [g.strip() for g in given.split(",") if g.strip()]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        entries = [g.strip() for g in visible.split(",") if g.strip() and g.strip() != "-1"]
        return entries or [None]
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
        count = sum(1 for line in listed.stdout.decode().splitlines() if line.startswith("GPU "))
    except (OSError, subprocess.TimeoutExpired):
        count = 0
    return [str(i) for i in range(count)] or [None]


# On an H100 with 16 cores, a class of all seven lessons: 4 gradings at once took 35.2 s a
# submission (8 submissions, a4e4870), while every timed phase drained the GPU on its own; once
# timed phases took turns in batches (gpu_lock.py) and lesson 04's check got lighter, 8 at once
# took 29.0 s (12 submissions, 8cefc8a; the CPU 40% busy, the GPU 42%). Not an A/B of the count
# alone, and more were not measured; 8 is also what the 16 cores allow (grader/README.md).
MAX_PER_GPU = 8


def gradings_per_gpu(gpus: List[Optional[str]], cores: int, listed: Optional[str]) -> Tuple[int, str]:
    """How many gradings share each GPU when --per-gpu is not given, and why: one per 8 GiB (rounded)
    of the smallest GPU's memory (a grading's correctness tests hold up to a few GiB: lesson 04's
    inputs) and one per 2 cores a GPU (compute-sanitizer's tools run side by side on the host), at
    least 1 and at most MAX_PER_GPU, past which no more was measured to help. `listed`: nvidia-smi's
    "memory.total [MiB], mig.mode.current" lines of the GPUs graded on (None: not available). A GPU
    in MIG mode, or memory nvidia-smi does not give, gets 1."""
    rows = [line.split(",") for line in (listed or "").splitlines() if line.strip()]
    sizes = [int(row[0]) for row in rows if row and row[0].strip().isdigit()]
    mig = any(len(row) > 1 and row[1].strip().lower() == "enabled" for row in rows)
    if not sizes or len(sizes) != len(rows) or mig:
        return 1, "the GPUs' memory not known (or a GPU in MIG mode)"
    by_memory, by_cores = (min(sizes) + 4096) // 8192, cores // (2 * max(1, len(gpus)))  # 8 GiB each, rounded
    count = max(1, min(MAX_PER_GPU, by_memory, by_cores))
    return count, f"{min(sizes) // 1024} GiB, {cores} cores for {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}"


# The least GPU memory a grading may have for its timed runs to park before its hold
# (./grade --park-timed): parked, they hold a context each and their first timed test's inputs,
# several GiB a grading (lesson 01's three 1 GiB arrays among them), beside the others' tests,
# which size their large inputs by the memory left (workbook::fit_in_free_memory). An H100's
# 80 GB for 8 gradings is 10 GiB each; an A10's 24 GB for 3 is 8.
PARK_MIN_MIB_PER_GRADING = 10 * 1024 - 512


def smallest_gpu_mib(listed: Optional[str]) -> Optional[int]:
    """The smallest memory.total (MiB) in nvidia-smi's lines (listed_gpu_memory); None when unknown."""
    sizes = [int(line.split(",")[0]) for line in (listed or "").splitlines()
             if line.strip() and line.split(",")[0].strip().isdigit()]
    return min(sizes) if sizes else None


def listed_gpu_memory(gpus: List[Optional[str]]) -> Optional[str]:
    """nvidia-smi's memory.total and MIG mode of the GPUs graded on (their indices or UUIDs, as
    --gpus or CUDA_VISIBLE_DEVICES give them), one line each; of every GPU when nvidia-smi does not
    know those names (a MIG slice's UUID, ids a Slurm job renumbered); None when it cannot say."""
    selected = [g for g in gpus if g is not None]
    for chosen in ([["-i", ",".join(selected)]] if selected else []) + [[]]:
        try:
            listed = subprocess.run(["nvidia-smi", "--query-gpu=memory.total,mig.mode.current",
                                     "--format=csv,noheader,nounits"] + chosen,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if listed.returncode == 0:
            return listed.stdout.decode(errors="replace")
    return None


def time_limit(lessons: List[Lesson], timeout: Optional[float]) -> float:
    """A whole grading's limit: each task's phases at their limit (correctness and the check of its
    pass under compute-sanitizer; for a timed task also its timed test and the reference's, twice
    when the first falls short, and its counters under Nsight Compute, slower by
    counters.PROFILE_SLOWDOWN), the sanitizer's start-up once per tool a lesson names, and room for
    the device query."""
    total = 300.0
    for lesson in lessons:
        tools = {tool for task in lesson.tasks for tool in task.sanitizers}
        phases = sum(2 + (4 + counters.PROFILE_SLOWDOWN if task.performance_points else 0) for task in lesson.tasks)
        total += phases * (timeout or lesson.timeout_s) + 60 * len(tools)
    return total


# The gradings under way. Each runs in a session of its own (so a time limit kills its whole
# process group), which also keeps it from Ctrl-C: stop_gradings() stops them instead.
_RUNNING: set = set()
_RUNNING_LOCK = threading.Lock()


def stop(process: subprocess.Popen, grace_s: float = 5.0) -> None:
    """Stops one ./grade: SIGTERM first, so it stops the grader program it runs (which has a
    session of its own: runner.exit_on_sigterm), then SIGKILL if it is still there."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        if wait is None:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def stop_gradings() -> int:
    """Stops every grading under way; returns how many there were."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    threads = [threading.Thread(target=stop, args=(process,)) for process in running]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(running)


def grade_one(root: Path, args, name: str, tree: Path, feedback: Path, build_dir: Path, seed: int,
              lessons: List[Lesson], gpu: Optional[str], timing_cache: Optional[Path] = None,
              shared_gpu: bool = True, park: bool = False) -> Tuple[int, str, float]:
    """Runs ./grade on one submission's tree; returns its exit status (or None when stopped at the
    limit), its output and seconds taken. `timing_cache`: the class's (./grade --timing-cache).
    `shared_gpu`: other gradings run on its GPU at the same time, which then has no room for a
    sanitizer check split into one process per task (./grade --one-check-per-tool). `park`: with a
    timing cache, its timed runs start and set up before its hold alone, beside the others'
    correctness phases (./grade --park-timed; Slots.park)."""
    command = [sys.executable, str(root / "grade"), "--tree", str(tree), "--results", str(feedback), "--seed",
               str(seed), "--build-dir", str(build_dir), "--no-build", *[lesson.slug for lesson in lessons]]
    if shared_gpu:
        command.append("--one-check-per-tool")
    if park and timing_cache is not None:
        command.append("--park-timed")
    if args.no_timing:
        command.append("--no-timing")
    if getattr(args, "no_counters", False):
        command.append("--no-counters")
    elif not getattr(args, "all_counters", False):
        command.append("--counters-when-short")
    if args.timeout:
        command += ["--timeout", str(args.timeout)]
    if timing_cache is not None:
        command += ["--timing-cache", str(timing_cache)]
    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    limit = time_limit(lessons, args.timeout)
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)
    with _RUNNING_LOCK:
        _RUNNING.add(process)
    try:
        output, _ = process.communicate(timeout=limit)
        code = process.returncode
    except subprocess.TimeoutExpired:
        stop(process)
        output, _ = process.communicate()
        code = None
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(process)
    text = output.decode(errors="replace")
    if code is None:
        text += f"\n\ngrade-class: the grading did not finish within {limit:.0f} s and was stopped.\n"
    return code, text, time.monotonic() - start


LONGEST = 10  # class.json's "longest_s": that many of the longest phases


def where_the_time_went(paths: Paths, names: List[str], lessons: List[Lesson]) -> dict:
    """class.json's "time": the gradings' seconds, in all and by phase (each ./grade's own
    results.json), per lesson and for the class, and what the timing cache reused."""
    phases, details, lock, parked = Counter(), Counter(), Counter(), Counter()
    by_lesson: Dict[str, Counter] = defaultdict(Counter)
    details_by_lesson: Dict[str, Counter] = defaultdict(Counter)
    seconds = []
    parts = []  # (seconds, submission, lesson, phase): the class's longest pieces of work
    for name in names:
        record = read_json(paths.result(name))
        if isinstance(record, dict) and isinstance(record.get("seconds"), (int, float)):
            seconds.append(float(record["seconds"]))
        # results.json was written by the submission's grading: anything not of the expected shape is
        # left out of the sums, never a reason for the class's summary not to appear.
        one = grading_seconds(read_json(paths.feedback(name) / "results.json"))
        for total, per_lesson, spent in ((phases, by_lesson, one.phases), (details, details_by_lesson, one.details)):
            for slug, wall in spent.items():
                total.update(wall)
                per_lesson[slug].update(wall)
        parts += [(s, name, slug, phase) for slug, wall in one.phases.items() for phase, s in wall.items()]
        lock.update(one.lock)
        parked.update(one.parked)
    rounded = lambda d: {k: round(v, 1) for k, v in sorted(d.items())}  # noqa: E731
    time_record = {"gradings": len(seconds), "grading_s_total": round(sum(seconds), 1),
                   "grading_s_median": round(statistics.median(seconds), 1) if seconds else None,
                   "grading_s_longest": round(max(seconds), 1) if seconds else None,
                   "phases_s": rounded(phases), "phases_s_by_lesson": {k: rounded(v) for k, v in sorted(by_lesson.items())},
                   "phases_note": "seconds the grader programs of each phase ran, summed over the class; "
                                  "correctness phases run side by side, timed ones (performance, reference, "
                                  "counters) alone on their GPU; timed_setup, the timed programs' seconds before "
                                  "they parked (./grade --park-timed), side by side",
                   "phase_details_s": rounded(details),
                   "phase_details_s_by_lesson": {k: rounded(v) for k, v in sorted(details_by_lesson.items())},
                   "phase_details_note": "of the phases' seconds, those inside the test cases (<phase>_in_tests; "
                                         "the rest is the programs' loading, start and exit)",
                   "longest_s": [{"submission": name, "lesson": slug, "phase": phase, "s": round(s, 1)}
                                 for s, name, slug, phase in sorted(parts, key=lambda p: (-p[0], p[1:]))[:LONGEST]],
                   "longest_note": f"the {LONGEST} longest phases of one lesson of one submission: where a "
                                   "class's time goes when a few submissions (a hang, a slow kernel, reruns) "
                                   "take much of it",
                   "gpu_lock_s": rounded(lock),
                   "gpu_lock_note": "seconds the gradings waited for their GPU's lock and held it, summed: "
                                    "exclusive_held is the time the GPUs were given to one grading alone, the "
                                    "least a class takes on one GPU however many gradings run side by side; "
                                    "nvidia_smi, the queries of who else was on the GPU made while it was held "
                                    "alone"}
    if parked:
        time_record["parked_runs"] = dict(sorted(parked.items()))
        time_record["parked_note"] = ("timed runs started before their grading's hold of the GPU alone, those that "
                                      "parked before their first timing, and those the hold let go on (the others "
                                      "were run again in the hold)")
    if paths.timing_cache.exists():
        from .timing_cache import TimingCache
        time_record["timing_cache"] = TimingCache(paths.timing_cache).summary()
    return time_record


def _is_seconds(value) -> bool:
    """A number of seconds as a results.json written by a grading may hold one (not a flag, not NaN)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and value >= 0


@dataclass
class GradingSeconds:
    """Where one grading's time went, from its results.json: each lesson's phases
    ({slug: {phase: s}}, "total" left out), of those the seconds inside the test cases
    ({slug: {"<phase>_in_tests": s}}), and the GPU lock's ({"<mode>_<waited|held>": s,
    "nvidia_smi": s})."""
    phases: Dict[str, Dict[str, float]]
    details: Dict[str, Dict[str, float]]
    lock: Dict[str, float]
    parked: Dict[str, int] = field(default_factory=dict)  # ./grade --park-timed's counts

    @staticmethod
    def summed(by_lesson: Dict[str, Dict[str, float]]) -> Counter:
        """Each phase's seconds of `by_lesson`, added over its lessons."""
        total: Counter = Counter()
        for wall in by_lesson.values():
            total.update(wall)
        return total


def grading_seconds(results) -> GradingSeconds:
    """GradingSeconds of a results.json (as json.loads read it). It was written by a submission's
    grading: anything not of the expected shape is left out, never an error."""
    extra = results.get("extra_data") if isinstance(results, dict) else None
    extra = extra if isinstance(extra, dict) else {}
    spent = GradingSeconds({}, {}, {})
    for key, into in (("wall_s", spent.phases), ("wall_detail_s", spent.details)):
        walls = extra.get(key)
        for slug, wall in (walls.items() if isinstance(walls, dict) else []):
            if isinstance(slug, str) and isinstance(wall, dict):
                into[slug] = {phase: float(value) for phase, value in wall.items()
                              if isinstance(phase, str) and phase != "total" and _is_seconds(value)}
    if _is_seconds(extra.get("nvidia_smi_s")):
        spent.lock["nvidia_smi"] = float(extra["nvidia_smi_s"])
    counts = extra.get("parked_runs")
    for what, count in (counts.items() if isinstance(counts, dict) else []):
        if isinstance(what, str) and isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            spent.parked[what] = count
    held = extra.get("gpu_lock_s")
    for mode, seconds in (held.items() if isinstance(held, dict) else []):
        for what, value in (seconds.items() if isinstance(seconds, dict) else []):
            if isinstance(mode, str) and isinstance(what, str) and _is_seconds(value):
                spent.lock[f"{mode}_{what}"] = float(value)
    return spent


def not_gradable_result(name: str, intake: dict, lessons: List[Lesson], seed: int, paths: Paths) -> dict:
    """The reports of a submission that cannot be graded at all (unreadable, empty)."""
    why = intake.get("unreadable") or intake.get("problem") or "nothing to grade"
    results = [lesson_not_gradable(lesson, MISSING, "not in the submission", why) for lesson in lessons]
    run = GradeRun(tree=intake["source"], seed=seed, device={}, lessons=results)
    write_reports(run, paths.feedback(name))
    (paths.feedback(name) / "scoreboard.txt").write_text(f"{name}: {why}\n")
    return {"status": UNREADABLE if intake.get("unreadable") else EMPTY, "notes": [why]}


def grade_result(name: str, code: Optional[int], output: str, seconds: float, lessons: List[Lesson],
                 paths: Paths) -> dict:
    """A submission's record from its ./grade run: status, per-task points, notes."""
    feedback = paths.feedback(name)
    (feedback / "scoreboard.txt").write_text(output)
    results = read_json(feedback / "results.json")
    record: dict = {"seconds": round(seconds, 1), "exit_status": code}
    if code is None:
        record.update(status=GRADER_ERROR, notes=["the grading did not finish in its time limit"])
    elif code in (0, 1) and results:
        record["status"] = GRADED
    elif code in (3, 5):
        record.update(status=NO_GPU, notes=["not graded: no NVIDIA GPU was found"])
    else:
        tail = " / ".join(output.strip().splitlines()[-3:])[:300]
        record.update(status=GRADER_ERROR, notes=[f"./grade exited with status {code}: {tail}"])
    if results and record["status"] in (GRADED, NO_GPU):
        points, notes = points_from_results(results, lessons)
        record["points"] = points
        record.setdefault("notes", []).extend(notes)
    return record


@dataclass
class Slots:
    """Where the gradings run: the GPUs, how many gradings share each, and why that many."""
    gpus: List[Optional[str]]
    per_gpu: int
    why: str
    memory_mib: Optional[int] = None  # the smallest GPU's, when known

    @property
    def park(self) -> bool:
        """Whether the gradings' timed runs park before their holds (./grade --park-timed): where
        they share a GPU with room for what parked runs hold (PARK_MIN_MIB_PER_GRADING)."""
        return (self.per_gpu > 1 and self.memory_mib is not None
                and self.memory_mib >= PARK_MIN_MIB_PER_GRADING * self.per_gpu)

    @property
    def workers(self) -> List[Optional[str]]:
        return [gpu for gpu in self.gpus for _ in range(self.per_gpu)]


def grading_slots(args) -> Slots:
    """The GPUs (--gpus, else the visible ones) and --per-gpu, else gradings_per_gpu's count."""
    gpus = available_gpus(args.gpus)
    listed = listed_gpu_memory(gpus) if gpus != [None] else None
    per_gpu, why = args.per_gpu, "--per-gpu"
    if per_gpu is None:
        cores = int(os.environ.get("SLURM_CPUS_PER_TASK") or len(os.sched_getaffinity(0)) or 1)
        per_gpu, why = gradings_per_gpu(gpus, cores, listed)
    return Slots(gpus, per_gpu, why, smallest_gpu_mib(listed))


def grade_submissions(root: Path, args, todo: List[str], paths: Paths, build_dir: Path, seed: int,
                      lessons: List[Lesson], intakes: Dict[str, dict], key: Dict[str, object],
                      slots: Optional[Slots] = None, ready: Optional[Callable[[str], Optional[str]]] = None
                      ) -> List[float]:
    """Grades `todo` on every GPU at once, --per-gpu gradings per GPU at a time (gradings_per_gpu
    when it is not given), with a progress bar, in `todo`'s order. `ready(name)`: waits until a
    submission's programs are built (ClassBuild), and says why it cannot be graded when the build
    failed. Returns the seconds from its start at which each grading ended, in order (steady_rate)."""
    slots = slots or grading_slots(args)
    gpus, per_gpu, why = slots.gpus, slots.per_gpu, slots.why
    shown = ", ".join(g for g in gpus if g is not None) or "none found"
    workers = slots.workers
    print(f"Grading {len(todo)} submissions with seed {seed}, {len(workers)} at a time, {per_gpu} a GPU ({why}; "
          f"GPUs: {shown})", flush=True)
    work: "queue.Queue[str]" = queue.Queue()
    for name in todo:
        work.put(name)
    bar = ProgressBar(len(todo), "graded")
    # The copy bandwidth and the reference's figures, measured once per GPU (timing_cache.py).
    cache = None if args.no_timing or getattr(args, "fresh_timings", False) else paths.timing_cache
    began = time.monotonic()
    ended: List[float] = []

    def worker(gpu: Optional[str]) -> None:
        while True:
            try:
                name = work.get_nowait()
            except queue.Empty:
                return
            intake = intakes[name]
            try:
                unbuilt = ready(name) if ready is not None and intake.get("taken") else None
                if not intake.get("taken"):
                    record = not_gradable_result(name, intake, lessons, seed, paths)
                elif unbuilt:
                    record = {"status": GRADER_ERROR, "notes": [unbuilt]}
                else:
                    code, output, seconds = grade_one(root, args, name, paths.tree(name), paths.feedback(name),
                                                      build_dir, seed, lessons, gpu, cache, shared_gpu=per_gpu > 1,
                                                      park=slots.park)
                    record = grade_result(name, code, output, seconds, lessons, paths)
            except Exception as e:  # noqa: BLE001 - one submission's trouble must not stop the class
                record = {"status": GRADER_ERROR, "notes": [f"grade-class failed on it: {type(e).__name__}: {e}"]}
            record.update(name=name, gpu=gpu, graded_at=datetime.datetime.now().isoformat(timespec="seconds"),
                          digest=intake.get("digest", ""), **key)
            write_json(paths.result(name), record)
            ended.append(time.monotonic() - began)
            total = sum(record.get("points", {}).values())
            bar.step(f"{name}: {record['status']}" + (f", {total:g} points" if record.get("points") else "") +
                     (f" ({'; '.join(record['notes'])})" if record.get("notes") else ""))

    threads = [threading.Thread(target=worker, args=(gpu,), daemon=True) for gpu in workers]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(0.5)
    except KeyboardInterrupt:
        while not work.empty():  # no worker starts another
            work.get_nowait()
        stop_build_tools()
        stopped = stop_gradings()
        print(f"\nInterrupted: stopped {stopped} grading(s) under way. Run the same command again to go on; "
              "the submissions graded so far are kept.", flush=True)
        raise
    return sorted(ended)


def steady_rate(ended: List[float], workers: int, wall_s: float, build_s: float = 0.0,
                class_size: int = 100) -> Dict[str, object]:
    """class.json's steady figures: the seconds a submission took while every grading slot was busy,
    and what a class of `class_size` would take at that rate: this class's build before its first
    gradings (`build_s`) and gradings (`wall_s`), and the submissions it lacks at the steady pace
    (their build runs beside the gradings, ClassBuild). `ended`: the seconds at which each
    grading ended (grade_submissions). The first `workers` endings are left out (the first wave
    started all at once, so its gradings end close together, faster than the class's pace), and so
    are the last `workers` (the slots empty one by one as the queue runs dry). The rest, the
    endings at the class's own pace, need a class of 2 x workers + 2 or more."""
    n = len(ended)
    if workers < 1 or n < 2 * workers + 2:
        return {}
    first, last = ended[workers - 1], ended[n - workers - 1]
    if last <= first:
        return {}
    per = (last - first) / (n - 2 * workers)
    record: Dict[str, object] = {
        "steady_s_per_submission": round(per, 2),
        "steady_note": (f"seconds per submission from grading end {workers} to grading end {n - workers} (in "
                        f"order of ending), every slot busy: the class's pace once its first wave of "
                        f"{workers} is done and before its last {workers}; projected_s_for_{class_size}: this "
                        f"class's build_s and grading_wall_s, and the submissions it lacks at that pace")}
    if n < class_size:
        record[f"projected_s_for_{class_size}"] = round(build_s + wall_s + (class_size - n) * per, 1)
    return record


# ---------------------------------------------------------------------------------------------
# Gradebook and summary


def gradebook_rows(names: List[str], lessons: List[Lesson], paths: Paths, seed: int) -> Tuple[List[str], List[list]]:
    header = ["student"]
    for lesson in lessons:
        header += [task_key(lesson, task) for task in lesson.tasks] + [f"{lesson.slug[:2]} total"]
    header += ["total", "max", "status", "notes", "seed"]
    rows = []
    for name in names:
        record = read_json(paths.result(name)) or {"status": NOT_GRADED, "notes": ["no result: see the Slurm logs"]}
        points = record.get("points", {})
        row: list = [name]
        total = 0.0
        for lesson in lessons:
            lesson_total = 0.0
            for task in lesson.tasks:
                value = float(points.get(task_key(lesson, task), 0.0))
                lesson_total += value
                row.append(f"{value:g}")
            total += lesson_total
            row.append(f"{lesson_total:g}")
        row += [f"{total:g}", f"{sum(l.max_points for l in lessons):g}", record.get("status", NOT_GRADED),
                "; ".join(record.get("notes", [])), record.get("seed", seed)]
        rows.append(row)
    return header, rows


def write_gradebook(names: List[str], lessons: List[Lesson], paths: Paths, seed: int) -> Tuple[List[str], List[list]]:
    header, rows = gradebook_rows(names, lessons, paths, seed)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    part = paths.out / "gradebook.csv.part"
    part.write_text(buffer.getvalue())
    part.replace(paths.out / "gradebook.csv")
    write_canvas_gradebook(header, rows, lessons, paths)
    return header, rows


def write_canvas_gradebook(header: List[str], rows: List[list], lessons: List[Lesson], paths: Paths) -> None:
    """gradebook_canvas.csv in the layout of Canvas's gradebook import: its identity columns, the
    submission's name as the SIS Login ID, and one new assignment column with the total."""
    assignment = f"CUDA Workbook {' '.join(l.slug[:2] for l in lessons)} ({sum(l.max_points for l in lessons):g} points)"
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment])
    total = header.index("total")
    for row in rows:
        writer.writerow([row[0], "", "", row[0], "", row[total]])
    (paths.out / "gradebook_canvas.csv").write_text(buffer.getvalue())


def class_summary(header: List[str], rows: List[list], lessons: List[Lesson]) -> str:
    status_col, total_col = header.index("status"), header.index("total")
    counts: Dict[str, int] = {}
    for row in rows:
        counts[row[status_col]] = counts.get(row[status_col], 0) + 1
    graded = [row for row in rows if row[status_col] == GRADED]
    lines = [f"{len(rows)} submissions: " + ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in sorted(counts.items()))]
    max_total = sum(l.max_points for l in lessons)
    if graded:
        totals = [float(r[total_col]) for r in graded]
        lines.append(f"Totals of the {len(graded)} graded (of {max_total:g}): median {statistics.median(totals):g}, "
                     f"mean {statistics.mean(totals):.1f}, lowest {min(totals):g}, highest {max(totals):g}")
        lines.append("")
        lines.append(f"{'task':<6} {'max':>4} {'mean':>6} {'full marks':>11} {'zero':>6}  title")
        worst = None
        for lesson in lessons:
            for task in lesson.tasks:
                col = header.index(task_key(lesson, task))
                values = [float(r[col]) for r in graded]
                mean = statistics.mean(values)
                full = sum(1 for v in values if v >= task.max_points) / len(values)
                zero = sum(1 for v in values if v == 0) / len(values)
                lines.append(f"{task_key(lesson, task):<6} {task.max_points:>4g} {mean:>6.2f} {full:>10.0%} {zero:>6.0%}  "
                             f"{task.title}" + (" (optional)" if task.optional else ""))
                if not task.optional and (worst is None or mean / task.max_points < worst[0]):
                    worst = (mean / task.max_points, task_key(lesson, task), task.title)
        if worst:
            lines.append("")
            lines.append(f"The class struggled most with task {worst[1]} ({worst[2]}): {worst[0]:.0%} of its points "
                         "on average.")
    else:
        lines.append("No submission was graded on a GPU, so there are no scores to summarise.")
    return "\n".join(lines) + "\n"


def matplotlib_python() -> Optional[str]:
    """An interpreter with matplotlib: this one, else PATH's python3 or /usr/bin/python3."""
    for python in [sys.executable, shutil.which("python3"), "/usr/bin/python3"]:
        if python and os.path.exists(python) and subprocess.run(
                [python, "-c", "import matplotlib"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return python
    return None


def write_figure(paths: Paths, lessons: List[Lesson]) -> Optional[str]:
    """score_distribution.png from the gradebook (grader/driver/class_figure.py); returns why not."""
    python = matplotlib_python()
    if python is None:
        return ("no figure: matplotlib is missing (sudo apt install python3-matplotlib, or pip install matplotlib), "
                "then run ./grade-class again with --merge")
    maxima = {task_key(l, t): t.max_points for l in lessons for t in l.tasks}
    figure = Path(__file__).with_name("class_figure.py")
    done = subprocess.run([python, str(figure), str(paths.out / "gradebook.csv"), json.dumps(maxima),
                           str(paths.out / "score_distribution.png")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        return "no figure: " + done.stdout.decode(errors="replace").strip()[-400:]
    return None


def merge(paths: Paths, lessons: List[Lesson], names: List[str], seed: int, times: Optional[dict] = None) -> int:
    """The gradebook, class.json's "time", summary.txt and the figure, in that order: everything
    but the figure is written before matplotlib starts (its first import builds a font cache)."""
    header, rows = write_gradebook(names, lessons, paths, seed)
    record = read_json(paths.record) or {}
    record["time"] = dict(times or {}, **where_the_time_went(paths, names, lessons))
    write_json(paths.record, record)
    summary = class_summary(header, rows, lessons)
    (paths.out / "summary.txt").write_text(summary)
    problem = write_figure(paths, lessons)
    if problem:
        summary += "\n" + problem + "\n"
        (paths.out / "summary.txt").write_text(summary)
    print()
    print(summary, end="")
    shown = os.path.relpath(paths.out) if not os.path.relpath(paths.out).startswith("..") else str(paths.out)
    print(f"\nWrote {shown}/gradebook.csv (and gradebook_canvas.csv), summary.txt" + ("" if problem else ", score_distribution.png") +
          f" and a feedback folder per student in {shown}/feedback/.")
    status_col = header.index("status")
    return EXIT_OK if all(row[status_col] in FINAL for row in rows) else EXIT_SOME_NOT_GRADED


# ---------------------------------------------------------------------------------------------
# Slurm


def slurm_submit(root: Path, args, paths: Paths, names: List[str], seed: int, lessons: List[Lesson],
                 build_dir: Path) -> int:
    """Writes and submits the array job (a shard of submissions per task) and the merge job."""
    if shutil.which("sbatch") is None:
        print("grade-class: --slurm needs sbatch on PATH (run it on the cluster's login node).", file=sys.stderr)
        return EXIT_USAGE
    shards = max(1, min(args.shards or -(-len(names) // 4), len(names) or 1, 32))
    slurm_dir = paths.out / "slurm"
    slurm_dir.mkdir(parents=True, exist_ok=True)
    common = [str(root / "grade-class"), str(Path(args.submissions).resolve()), *[l.slug for l in lessons],
              "--out", str(paths.out), "--seed", str(seed)]
    if args.no_timing:
        common.append("--no-timing")
    if args.no_counters:
        common.append("--no-counters")
    if args.all_counters:
        common.append("--all-counters")
    if args.timeout:
        common += ["--timeout", str(args.timeout)]
    regrade = ["--regrade-all"] if args.regrade_all else (["--regrade", *args.regrade] if args.regrade else [])
    per_shard = -(-len(names) // shards)
    minutes = max(10, int(per_shard * time_limit(lessons, args.timeout) / 60 / 2))  # half the worst case each
    if args.slurm_build == "shared":
        shard_build = ["--prebuilt", "--build-dir", str(build_dir)]
    else:
        shard_build = ["--build-dir", "${TMPDIR:-/tmp}/workbook-build-${SLURM_JOB_ID}"]
    options = [f"#SBATCH {o}" for o in args.slurm_option]
    gres = [f"#SBATCH --gres=gpu:{args.slurm_gpus}"] if args.slurm_gpus > 0 else []
    array = "\n".join([
        "#!/bin/bash",
        "#SBATCH --job-name=workbook-grade",
        f"#SBATCH --array=0-{shards - 1}",
        f"#SBATCH --output={slurm_dir}/shard-%a.log",
        f"#SBATCH --time={minutes}",
        f"#SBATCH --cpus-per-task={args.slurm_cpus}",
        *gres, *options,
        "# One shard of the class per array task: ./grade-class grades the submissions whose index modulo",
        f"# {shards} is this task's, on the GPU Slurm gave it, and writes their feedback folders.",
        "set -euo pipefail",
        f"cd {shlex.quote(str(root))}",
        " ".join([shlex.quote(sys.executable), *map(shlex.quote, common), *map(shlex.quote, regrade),
                  "--shard", f"${{SLURM_ARRAY_TASK_ID}}/{shards}", *[a if "$" in a else shlex.quote(a)
                                                                   for a in shard_build]]),
        ""])
    merge_script = "\n".join([
        "#!/bin/bash",
        "#SBATCH --job-name=workbook-merge",
        f"#SBATCH --output={slurm_dir}/merge.log",
        "#SBATCH --time=10",
        *options,
        "# After every shard (afterany: also when one failed): one gradebook, summary and figure.",
        "set -euo pipefail",
        f"cd {shlex.quote(str(root))}",
        " ".join([shlex.quote(sys.executable), *map(shlex.quote, common), "--merge"]),
        ""])
    (slurm_dir / "array.sbatch").write_text(array)
    (slurm_dir / "merge.sbatch").write_text(merge_script)
    submitted = subprocess.run(["sbatch", "--parsable", str(slurm_dir / "array.sbatch")], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    if submitted.returncode != 0:
        print(f"grade-class: sbatch refused the array job: {submitted.stdout.decode().strip()}\n"
              f"The script is {slurm_dir / 'array.sbatch'}; --slurm-option passes options such as a partition or an "
              "account, --slurm-gpus 0 asks for no GPU.", file=sys.stderr)
        return EXIT_USAGE
    array_id = submitted.stdout.decode().strip().split(";")[0]
    merge_command = ["sbatch", "--parsable", f"--dependency=afterany:{array_id}"] + (["--wait"] if args.wait else [])
    print(f"Submitted job array {array_id}: {len(names)} submissions in {shards} shards "
          f"({'build shared from ' + str(build_dir) if args.slurm_build == 'shared' else 'each shard builds its own'}).",
          flush=True)
    if args.wait:
        print("Waiting for the shards and the merge job ...", flush=True)
    merged = subprocess.run(merge_command + [str(slurm_dir / "merge.sbatch")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    out = merged.stdout.decode().strip()
    if not args.wait:
        if merged.returncode != 0:
            print(f"grade-class: sbatch refused the merge job: {out}", file=sys.stderr)
            return EXIT_USAGE
        print(f"Submitted merge job {out.split(';')[0]}: it writes {paths.out}/gradebook.csv when every shard is "
              f"done. Watch with: squeue -j {array_id}; logs in {slurm_dir}/.")
        return EXIT_OK
    summary = paths.out / "summary.txt"
    print(summary.read_text() if summary.exists() else f"(no summary: read {slurm_dir}/merge.log)")
    return EXIT_OK if merged.returncode == 0 else EXIT_SOME_NOT_GRADED


# ---------------------------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None, root: Optional[Path] = None) -> int:
    try:
        return grade_class(argv, root)
    except KeyboardInterrupt:
        return 130


def grade_class(argv: Optional[List[str]] = None, root: Optional[Path] = None) -> int:
    root = Path(root or Path(__file__).resolve().parents[2])
    args = parse_args(sys.argv[1:] if argv is None else argv)
    submissions_dir = Path(args.submissions).expanduser().resolve()
    if not submissions_dir.is_dir():
        print(f"grade-class: {args.submissions} is not a folder. Give the folder that holds one folder or archive "
              "per student.", file=sys.stderr)
        return EXIT_USAGE
    try:
        lessons = select_lessons(load_manifest(root / "lessons" / "manifest.json"), args.lessons)
    except ManifestError as e:
        print(f"grade-class: {e}", file=sys.stderr)
        return EXIT_USAGE
    if any("." in selector for selector in args.lessons):
        print("grade-class: a class is graded by whole lessons (give 01, not 01.2).", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out).expanduser() if args.out else Path.cwd() / f"{submissions_dir.name}-grades"
    paths = Paths(out.resolve())
    build_dir = Path(args.build_dir).expanduser().resolve() if args.build_dir else paths.out / "build"
    if paths.out == submissions_dir or submissions_dir in paths.out.parents:
        print("grade-class: --out must not be inside the submissions folder (it would be graded as a submission).",
              file=sys.stderr)
        return EXIT_USAGE

    try:
        subs, notes = find_submissions(submissions_dir)
    except SubmissionError as e:
        print(f"grade-class: {e}", file=sys.stderr)
        return EXIT_USAGE
    names = [s.name for s in subs]
    if not subs:
        print(f"grade-class: there are no submissions in {submissions_dir}: it needs one folder, .zip or .tar.gz per "
              "student, named after the student." + "".join(f"\n  {n}" for n in notes), file=sys.stderr)
        return EXIT_USAGE
    unknown = [n for n in args.regrade if n not in names]
    if unknown:
        print(f"grade-class: no submission named {', '.join(unknown)} in {submissions_dir} "
              f"(there are: {', '.join(names[:20])}{' ...' if len(names) > 20 else ''}).", file=sys.stderr)
        return EXIT_USAGE

    record = read_json(paths.record) or {}
    slugs = [lesson.slug for lesson in lessons]
    if record and not args.regrade_all and not args.shard:
        if args.seed and record.get("seed") != args.seed:
            print(f"grade-class: this class was graded with seed {record.get('seed')}. Give that seed (or none), or "
                  f"--regrade-all to grade every submission again with seed {args.seed}.", file=sys.stderr)
            return EXIT_USAGE
        if record.get("lessons") != slugs:
            print(f"grade-class: {paths.out} holds a grading of lessons {', '.join(record.get('lessons', []))}. Name "
                  "the same lessons, another --out, or --regrade-all to grade every submission again with these.",
                  file=sys.stderr)
            return EXIT_USAGE
    seed = args.seed or record.get("seed") or random.randrange(1, 2**31)
    if not args.shard:
        write_json(paths.record, {"seed": seed, "lessons": slugs, "submissions": str(submissions_dir),
                                  "workbook_commit": workbook_commit(root), "students": names,
                                  "created": record.get("created") or datetime.datetime.now().isoformat(
                                      timespec="seconds")})
    if args.merge:
        return merge(paths, lessons, names, seed)

    if args.shard:
        index, count = (int(x) for x in args.shard.split("/"))
        subs = [s for i, s in enumerate(subs) if i % count == index]
    for note in notes if not args.shard else []:
        print(f"note: {note}")

    # Intake, and what to grade: new or changed submissions, and those asked for.
    if not args.shard:
        print(f"Taking in {len(subs)} submissions from {submissions_dir} ...", flush=True)
    key = {"seed": seed, "lessons": slugs}
    intakes: Dict[str, dict] = {}
    todo: List[str] = []
    skipped = 0
    changed = set()  # trees whose files differ from the last intake's
    for sub in subs:
        previous = read_json(paths.work(sub.name) / "intake.json")
        intakes[sub.name] = (previous if args.prebuilt else None) or intake_one(sub, lessons, paths)
        if not previous or previous.get("digest") != intakes[sub.name].get("digest"):
            changed.add(build.tree_name(root, paths.tree(sub.name)))
        done = read_json(paths.result(sub.name))
        fresh = (done and done.get("status") in FINAL and done.get("seed") == seed and done.get("lessons") == slugs
                 and done.get("digest") == intakes[sub.name].get("digest"))
        if fresh and not args.regrade_all and sub.name not in args.regrade:
            skipped += 1
        else:
            todo.append(sub.name)
    if skipped and not args.shard:
        print(f"{skipped} submissions were graded before with the same files and seed: kept (--regrade NAME or "
              "--regrade-all to grade them again).")

    trees = {build.tree_name(root, paths.tree(n)): paths.tree(n) for n in todo if intakes[n].get("taken")}
    if args.slurm:
        if args.slurm_build == "shared" and trees:
            try:
                build_class(root, build_dir, trees, lessons, args.jobs, changed)
            except build.BuildError as e:
                print(f"grade-class: {e}", file=sys.stderr)
                return EXIT_BUILD
        return slurm_submit(root, args, paths, todo, seed, lessons, build_dir)

    times: Dict[str, object] = {}
    slots = grading_slots(args) if todo else None
    background: Optional[ClassBuild] = None
    if trees and not args.prebuilt:
        started = time.monotonic()
        # The first gradings start once their own programs are built; the others' are built
        # beside them (ClassBuild), when there are more submissions than gradings at once.
        first = [n for n in todo if build.tree_name(root, paths.tree(n)) in trees][:len(slots.workers)] if slots else []
        first_trees = {build.tree_name(root, paths.tree(n)) for n in first}
        try:
            if len(first_trees) < len(trees):
                background = ClassBuild(root, build_dir, trees, lessons, args.jobs, changed, first_trees)
                try:
                    background.wait_first()
                except KeyboardInterrupt:
                    background.stop()
                    raise
                if background.error is not None and background.first_s is None:
                    raise background.error
            else:
                build_class(root, build_dir, trees, lessons, args.jobs, changed)
        except build.BuildError as e:
            print(f"grade-class: {e}", file=sys.stderr)
            return EXIT_BUILD
        times["build_s"] = round(time.monotonic() - started, 1)
    if todo:
        started = time.monotonic()
        ready = None
        if background is not None:
            ready = lambda name: background.ready(build.tree_name(root, paths.tree(name)))  # noqa: E731
        ended = grade_submissions(root, args, todo, paths, build_dir, seed, lessons, intakes, key, slots, ready)
        wall = time.monotonic() - started
        times.update(graded_now=len(todo), grading_wall_s=round(wall, 1))
        times.update(steady_rate(ended, len(slots.workers), wall, float(times.get("build_s", 0.0))))
    if background is not None:
        background.thread.join()
        if background.all_s is not None:
            times["build_beside_grading_s"] = round(background.all_s, 1)
    if args.shard:
        return EXIT_OK
    return merge(paths, lessons, names, seed, times)
