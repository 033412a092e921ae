"""./sweep: time a lesson's kernels over sizes x block sizes x grid modes, for your code and
the reference solution, and write one tidy CSV per lesson for ./plot.

A function of your code that crashes or hangs during the sweep loses only its own rows: the
sweep program announces each check and measurement ("# measuring OP n=N ..."), so ./sweep
knows which function it was running, runs the program again with --skip OP, and notes it
after the rows ("# left out: student OP: crashed (...) while measuring n=N").

What a sweep program prints, line by line (tools/bench/sweep.hpp): "# planned N", the CSV
header, then the rows as they are measured, each after its "# checking OP" or "# measuring OP
..." marker. Two more kinds of '#' line, which only some lessons print:
  "# pass ARGS"      arguments for the later runs of the same lesson: lesson 05 prints
                     "# pass --work W", the kernel's work it calibrated, so the run after a crash
                     and the reference's are timed with the same kernel as the student's;
  "# timeline ROW"   a CSV line of a timeline (lesson 05: what the GPU did during one traced call of
                     process; the first line is the header, sweep_schema.TIMELINE_COLUMNS). ./sweep
                     keeps each implementation's first and writes them together to
                     sweep-results/<lesson>_timeline.csv (removing an old one when there is none),
                     which ./plot draws beside <lesson>.csv.

Exit codes: 0 written; 1 written, but not all of your code could be swept (it does not
compile, gives wrong results, or a function crashed or hung: the rest is still there); 2 bad
arguments; 3 no GPU; 4 the build could not be set up."""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

from driver import build, skeleton
from driver.cli import query_device, resolve_tree
from driver.file_lock import LockError
from driver.gpu_lock import GpuLock
from driver.manifest import ManifestError, load_manifest, select_lessons
import crossover
import overlap
import sweep_schema
from sweep_schema import (COLUMNS, TIMELINE_COLUMNS, TRANSFERS, CsvError, columns_for, is_transfer, left_out_note,
                          read_sweep, read_timeline)

EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, EXIT_NO_GPU, EXIT_BUILD = 0, 1, 2, 3, 4
EXIT_INCORRECT = 5  # bench::kExitIncorrect: the sweep program found the kernel wrong
PROGRAM_NO_GPU = 77  # workbook::exit_without_gpu
# Exit statuses a sweep program chooses; any other, or a signal, is a crash.
PROGRAM_EXITS = (0, EXIT_USAGE, EXIT_INCORRECT, PROGRAM_NO_GPU)
# A sweep program that prints nothing for this long is stopped: a kernel hangs. Tests set
# WORKBOOK_SWEEP_SILENCE_S to a second or two.
SILENCE_LIMIT_S = float(os.environ.get("WORKBOOK_SWEEP_SILENCE_S", "300"))
# Which measurement a row is: a run after a crash measures some again, and the first is kept. The
# axes by their places in COLUMNS, which every lesson's header shares (lesson 05 names them streams, chunks).
KEY_COLUMNS = ("implementation", "operation", "n", "block", "grid_mode", "grid")
REST = "(the rest)"  # the operation of a note for what a sweep that stopped early never reached
PASS = "# pass "          # arguments for the later runs of the same lesson
TIMELINE = "# timeline "  # a line of the lesson's timeline CSV


def parse_args(argv: List[str], root: Path) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="./sweep",
        description="Time a lesson's kernels over sizes, block sizes and grid modes, for your code and the "
                    "reference, and write a CSV for ./plot (one row per measurement). A function that crashes or "
                    "hangs is left out and the rest swept; the CSV ends with a note saying which and why.",
        epilog="examples:  ./sweep 02                   the full sweep (sizes 1e4 .. 1e8)\n"
               "           ./sweep 02 --sizes 1e4,1e5,1e6 --blocks 128,256,512\n"
               "           ./sweep 04                   sums of 1e3 .. 1e9 floats against CUB and the CPU\n"
               "           ./sweep 05 --streams 1,4     the streams pipeline: time against chunks for 1 and 4\n"
               "                                        streams, the overlap bound, and a timeline of one call\n"
               "           ./sweep 07                   pi's error and points/s against N (16 seeds each), the\n"
               "                                        histogram's time against its bins\n"
               "           ./plot sweep-results/02_multiply_add.csv    then the figures",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lessons", nargs="*", metavar="LESSON", help="lesson number or name (default: all with a sweep)")
    parser.add_argument("--tree", default="exercises", help="your code: a directory laid out like exercises/")
    parser.add_argument("--no-reference", action="store_true", help="sweep your code only")
    parser.add_argument("--sizes", help="comma-separated sizes, e.g. 1e4,1e5,1e6 (default: the lesson's: half "
                                            "decades 1e4 .. 1e8 in 02 and 1e3 .. 1e9 in 04, N = 128 .. 8192 in 03, "
                                            "2^26 in 05, n x n grids for n = 256 .. 8192 in 06, 1e2 .. 1e9 points in 07)")
    parser.add_argument("--blocks", help="comma-separated block sizes (default: the lesson's; 02: 32,64,...,1024, "
                                             "03 and 04: 256)")
    parser.add_argument("--grids", help="comma-separated grid modes (lesson 02: cover,wave)")
    parser.add_argument("--streams", help="lesson 05: comma-separated numbers of streams (default 1,2,3,4,8)")
    parser.add_argument("--chunks", help="lesson 05: comma-separated numbers of chunks (default 1,2,4,...,64)")
    parser.add_argument("--samples", type=int, help="timed launches per measurement (default 20)")
    parser.add_argument("--no-transfers", action="store_true",
                        help="skip the host-device copy timings and the baselines (cuBLAS in 03; CUB and the CPU in 04; "
                             "cuRAND's host API, global atomics and the CPU in 07)")
    parser.add_argument("--out", default=str(root / "sweep-results"), help="where the CSVs go (default sweep-results/)")
    parser.add_argument("--build-dir", default=str(root / "build" / "grade"), help="CMake build directory")
    parser.add_argument("--no-build", action="store_true", help="use the programs already built in --build-dir")
    args = parser.parse_args(argv)
    if args.samples is not None and args.samples < 1:
        parser.error("--samples must be at least 1")
    return args


class Progress:
    """A progress bar on a terminal; a line every 10% otherwise (logs, CI)."""

    def __init__(self, label: str, total: int):
        self.label, self.total, self.done = label, max(total, 1), 0
        self.tty = sys.stderr.isatty()
        self.last_decile = -1
        self.start = time.monotonic()

    def step(self, what: str) -> None:
        self.done += 1
        fraction = min(self.done / self.total, 1.0)
        if self.tty:
            bar = "#" * int(30 * fraction) + "-" * (30 - int(30 * fraction))
            sys.stderr.write(f"\r  {self.label:<10} [{bar}] {self.done}/{self.total}  {what:<40.40}")
            sys.stderr.flush()
        elif int(fraction * 10) > self.last_decile:
            self.last_decile = int(fraction * 10)
            print(f"  {self.label}: {self.done}/{self.total} measurements ({fraction:.0%})", flush=True)

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\n")
        print(f"  {self.label}: {self.done} measurements in {time.monotonic() - self.start:.0f} s", flush=True)


class SweepRun(NamedTuple):
    """What one run of a sweep program gave."""
    code: int         # exit status; negative: killed by that signal (EXIT_USAGE: a header not the schema's)
    rows: List[str]   # its CSV rows, in order
    errors: str       # its stderr, and why ./sweep stopped it
    marker: str = ""  # its last "# checking OP" or "# measuring OP ..." line: what it was doing at the end
    hung: bool = False  # stopped after SILENCE_LIMIT_S without output
    passes: Tuple[str, ...] = ()    # the arguments of its "# pass" lines, for the later runs
    timeline: Tuple[str, ...] = ()  # its timeline's rows (the header checked and dropped)


def run_sweep(program: str, implementation: str, options: List[str], env: Dict[str, str],
              columns: List[str] = COLUMNS) -> SweepRun:
    """Runs one sweep program and collects its rows as they come; its header must be `columns`
    (sweep_schema.columns_for the lesson's kind)."""
    process = subprocess.Popen([program, "--implementation", implementation] + options, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, **env}, text=True, start_new_session=True)
    lines: "queue.Queue[Optional[str]]" = queue.Queue()
    errors: List[str] = []

    def pump_stdout():
        for line in process.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def pump_stderr():
        errors.extend(process.stderr)

    threads = [threading.Thread(target=pump_stdout, daemon=True), threading.Thread(target=pump_stderr, daemon=True)]
    for t in threads:
        t.start()
    rows: List[str] = []
    progress: Optional[Progress] = None
    header_seen = False
    marker = ""
    hung = False
    bad_header = None
    passes: List[str] = []
    timeline: List[str] = []
    timeline_header: Optional[str] = None
    while True:
        try:
            line = lines.get(timeout=SILENCE_LIMIT_S)
        except queue.Empty:
            os.killpg(process.pid, signal.SIGKILL)
            hung = True
            break
        if line is None:
            break
        if line.startswith("# planned"):
            progress = Progress(implementation, int(line.split()[-1]))
        elif line.startswith(("# checking ", "# measuring ")):
            marker = line
        elif line.startswith(PASS):
            passes += line[len(PASS):].split()
        elif line.startswith(TIMELINE):
            if timeline_header is None:
                timeline_header = line[len(TIMELINE):]
            else:
                timeline.append(line[len(TIMELINE):])
        elif line.startswith("#"):
            continue
        elif not header_seen:
            header_seen = True
            if line.split(",") != columns:
                os.killpg(process.pid, signal.SIGKILL)
                bad_header = line
                break
        else:
            rows.append(line)
            if progress:
                fields = line.split(",")
                progress.step(f"n={fields[3]} {columns[4]}={fields[4] or '-'} {fields[5] or fields[2]}")
    process.wait()
    for t in threads:
        t.join(timeout=5)
    process.stdout.close()
    process.stderr.close()
    if bad_header is not None:
        return SweepRun(EXIT_USAGE, [], f"{program} wrote an unexpected CSV header:\n  {bad_header}\nexpected:\n  "
                        f"{','.join(columns)}\nRebuild it "
                        "(./sweep without --no-build) so it matches tools/bench/sweep_schema.py.")
    if progress:
        progress.finish()
    if hung:
        errors.append(f"stopped: no output for {SILENCE_LIMIT_S:g} s (does a kernel hang?)\n")
    if timeline_header is not None and next(csv.reader([timeline_header]), []) != TIMELINE_COLUMNS:
        errors.append(f"{program} wrote an unexpected timeline header, so its timeline is left out:\n  "
                      f"{timeline_header}\nRebuild it (./sweep without --no-build) so it matches "
                      "tools/bench/sweep_schema.py.\n")
        timeline = []
    return SweepRun(process.returncode, rows, "".join(errors), marker, hung, tuple(passes), tuple(timeline))


class LeftOut(NamedTuple):
    """A function left out of the sweep, and why (the CSV notes it after the rows)."""
    implementation: str
    operation: str
    why: str


class Swept(NamedTuple):
    """One implementation's sweep, after as many runs as its crashes and hangs took."""
    code: int             # the last run's exit status: 0 when it ran to the end
    rows: List[str]       # every row received, each measurement once
    left_out: List[LeftOut]
    passes: Tuple[str, ...] = ()    # "# pass" arguments, for the later runs of the lesson
    timeline: Tuple[str, ...] = ()  # the first run's timeline that had one


def row_key(row: str, columns: List[str] = COLUMNS) -> Tuple[str, ...]:
    """The KEY_COLUMNS of a CSV row under the header `columns`: which measurement it is (the key
    columns have the same places in every kind's header; lesson 07's has a column more after them)."""
    fields = next(csv.reader([row]), [])
    if len(fields) != len(columns):
        return ("", row, "", "", "")  # kept as it is: read_sweep will say what is wrong with it
    return tuple(fields[COLUMNS.index(column)] for column in KEY_COLUMNS)


def what_it_was_doing(marker: str) -> Tuple[Optional[str], str]:
    """The operation a marker line names (None without one), and "while ..." for a note."""
    match = re.match(r"# (checking|measuring) (\S+) ?(.*)", marker)
    if not match:
        return None, "before its first check or measurement"
    verb, operation, where = match.groups()
    return operation, ("while checking its results" if verb == "checking" else f"while measuring {where}".strip())


def describe_failure(run: SweepRun, program: str, doing: str) -> str:
    """Why a run ended early, in a line: how it ended, its last words on stderr, and what it was doing."""
    if run.hung:
        return f"hung: no output for {SILENCE_LIMIT_S:g} s {doing}"
    if run.code < 0:
        try:
            how = signal.Signals(-run.code).name
        except ValueError:
            how = f"signal {-run.code}"
    else:
        how = f"exit {run.code}"
    last = next((l.strip() for l in reversed(run.errors.splitlines()) if l.strip()), "")
    last = last[len(program) + 2:] if last.startswith(f"{program}: ") else last  # the program's name is no news
    if len(last) > 300:
        last = last[:297] + "..."
    return f"crashed ({how}: {last}) {doing}" if last else f"crashed ({how}) {doing}"


def label_untouched(errors: str, tree_dir: Path, slug: str, skeletons: dict) -> str:
    """A sweep program says "OP (student) is not timed: it wrote nothing"; where OP's task is
    still the untouched skeleton of exercises/ that is "not implemented yet" (skeleton.py)."""
    tasks = {entry.get("function"): int(task_id) for task_id, entry in skeletons.get(slug, {}).items()}

    def relabel(match: "re.Match") -> str:
        task_id = tasks.get(match.group(1))
        if task_id is None or skeleton.state(skeletons, tree_dir, slug, task_id) != skeleton.UNTOUCHED:
            return match.group(0)
        return f"{match.group(1)} (student) is not timed: not implemented yet (TODO(task {task_id}) is untouched)"

    return re.sub(r"(\w+) \(student\) is not timed: it wrote nothing[^\n]*", relabel, errors)


def sweep_implementation(program: str, implementation: str, options: List[str], env: Dict[str, str],
                         relabel=lambda errors: errors, columns: List[str] = COLUMNS) -> Swept:
    """Runs one implementation's sweep program to the end, leaving out each function that
    crashes or hangs: the rows already received are kept, and the program runs again with
    --skip and every function left out so far. Stops when a run names no new function to
    leave out (it died before announcing one, or in one already skipped): no endless loop."""
    rows: Dict[Tuple[str, ...], str] = {}
    left_out: List[LeftOut] = []
    skip: List[str] = []
    passes: Tuple[str, ...] = ()
    timeline: Tuple[str, ...] = ()
    while True:
        run = run_sweep(program, implementation,
                        options + list(passes) + (["--skip", ",".join(skip)] if skip else []), env, columns)
        if run.errors.strip():
            print(relabel(run.errors).rstrip(), file=sys.stderr)
        for row in run.rows:
            rows.setdefault(row_key(row, columns), row)  # the first measurement of each is kept
        passes = passes or run.passes  # a run after a crash keeps the first calibration
        timeline = timeline or run.timeline
        if run.code in PROGRAM_EXITS and not run.hung:  # it ended as it chose to
            return Swept(run.code, list(rows.values()), left_out, passes, timeline)
        operation, doing = what_it_was_doing(run.marker)
        why = describe_failure(run, program, doing)
        if operation is None or operation in skip:  # no new function to leave out: running again would not help
            if operation in skip:
                why += f", although --skip {operation} was given"
            left_out.append(LeftOut(implementation, REST, why))
            print(f"sweep: the {implementation} sweep stopped: {why}", file=sys.stderr)
            return Swept(run.code, list(rows.values()), left_out, passes, timeline)
        left_out.append(LeftOut(implementation, operation, why))
        skip.append(operation)
        print(f"sweep: {operation} ({implementation}) {why}.\n       Sweeping {implementation} again without it.",
              file=sys.stderr)


def write_csv(path: Path, rows: List[str], left_out: List[LeftOut], columns: List[str] = COLUMNS) -> None:
    """The header, the rows, and a note for each function left out; written whole or not at all."""
    temporary = path.with_suffix(".csv.part")
    notes = [left_out_note(*entry) for entry in left_out]
    temporary.write_text("\n".join([",".join(columns)] + rows + notes) + "\n")
    temporary.replace(path)


def write_timeline(path: Path, rows: List[str]) -> None:
    """The timeline's header and rows, written whole or not at all."""
    temporary = path.with_suffix(".csv.part")
    temporary.write_text("\n".join([",".join(TIMELINE_COLUMNS)] + rows) + "\n")
    temporary.replace(path)


def summarize_streams(rows: List[dict]) -> List[str]:
    """Lesson 05: the overlap bound and the sequential time at the pipeline's n, each
    implementation's best configuration as a fraction of the bound, and task 4's times."""
    n = overlap.pipeline_n(rows)
    stages = overlap.stage_ms(rows, n)
    bound, sequential = overlap.bound_ms(stages), overlap.sequential_ms(stages)
    lines = []
    if bound:
        lines.append(f"  at n = {crossover.format_n(n)} ({overlap.describe_stages(stages)}, each alone):")
        lines.append(f"  overlap bound max(H2D, kernel, D2H) {bound:.3g} ms; sequential H2D + kernel + D2H "
                     f"{sequential:.3g} ms")
    else:
        lines.append(f"  at n = {crossover.format_n(n)}: no overlap bound (the stages alone were not timed: "
                     "swept with --no-transfers?)")
    names = sorted({r["implementation"] for r in rows if r["operation"] == overlap.PROCESS},
                   key=lambda s: (s != "student", s))
    for name in names:
        top = overlap.best(rows, name, n)
        speedup = f", {sequential / top['median_ms']:.2f}x faster than sequential" if sequential else ""
        lines.append(f"  {name:<10} best: {overlap.describe_best(top, bound)}{speedup}")
    pageable = overlap.pageable_times(rows, n)
    if pageable:
        baseline = pageable.get("sequential")
        parts = [f"{name} {ms:.3g} ms" + (f" ({baseline / ms:.2f}x)" if baseline else "")
                 for name, ms in sorted(pageable.items(), key=lambda kv: (kv[0] != "student", kv[0]))
                 if name != "sequential"]
        parts += [f"sequential {baseline:.3g} ms"] if baseline else []
        lines.append("  pageable (task 4): " + ", ".join(parts))
    return lines


def summarize_gflops(kernels: List[dict], largest: int) -> List[str]:
    """Compute-bound lessons (03): each function's GFLOP/s at the largest n, against cuBLAS FP32."""
    at_largest = [r for r in kernels if r["n"] == largest]
    fp32 = next((r["gflops"] for r in at_largest if r["operation"] == "cublas_fp32"), None)
    lines = []
    for name in sorted({r["implementation"] for r in at_largest}, key=lambda s: (s == "cuBLAS", s != "student", s)):
        parts = []
        for operation in dict.fromkeys(r["operation"] for r in at_largest if r["implementation"] == name):
            best = max((r for r in at_largest if r["implementation"] == name and r["operation"] == operation),
                       key=lambda r: r["gflops"])
            share = f" ({best['gflops'] / fp32:.0%} of cuBLAS FP32)" if fp32 else ""
            parts.append(f"{operation} {best['gflops']:.0f} GFLOP/s{share}")
        lines.append(f"  {name:<10} at N = {largest}: " + ", ".join(parts))
    return lines


def summarize_reduction(rows: List[dict]) -> List[str]:
    """Lesson 04: each function's GB/s at the largest n CUB was timed at, against CUB; the
    baselines; and from which n the GPU beats the CPU (crossover.py)."""
    cub = {r["n"]: r for r in rows if r["operation"] == crossover.KERNEL}
    largest = max(cub) if cub else max(r["n"] for r in rows)
    at_largest = [r for r in rows if r["n"] == largest]
    lines = []
    for name in sorted({r["implementation"] for r in at_largest} - {"CUB", "CPU"}, key=lambda s: (s != "student", s)):
        parts = []
        for operation in dict.fromkeys(r["operation"] for r in at_largest if r["implementation"] == name):
            best = min((r for r in at_largest if r["implementation"] == name and r["operation"] == operation),
                       key=lambda r: r["median_ms"])
            share = f" ({best['gbps'] / cub[largest]['gbps']:.0%} of CUB)" if cub else ""
            parts.append(f"{operation} {best['gbps']:.0f} GB/s{share}")
        lines.append(f"  {name:<10} at n = {crossover.format_n(largest)}: " + ", ".join(parts))
    baselines = {(r["operation"], r["n"]): r for r in rows if r["implementation"] in ("CUB", "CPU")}
    for operation, label in ((crossover.KERNEL, "CUB, kernel alone"),
                             (crossover.WITH_TRANSFER, "CUB after the pageable copy"),
                             ("cpu_one_thread", "CPU, one thread"), ("cpu_all_threads", "CPU, all threads")):
        sizes = [n for op, n in baselines if op == operation]
        if sizes:
            r = baselines[(operation, max(sizes))]
            lines.append(f"  {label:<28} {r['gbps']:8.1f} GB/s at n = {crossover.format_n(r['n'])} ({operation})")
    cpu = crossover.fastest_ms(rows, crossover.CPU_OPERATIONS)
    if cpu:
        label, kernel = crossover.kernel_series(rows)
        series = [(label, kernel), ("the GPU with the copy (gpu_with_transfer)",
                                    crossover.fastest_ms(rows, [crossover.WITH_TRANSFER]))]
        if any(r["implementation"] == "student" and r["operation"] == "reduce_sum" for r in rows):
            series.insert(1, ("your reduce_sum", crossover.fastest_ms(rows, ["reduce_sum"], "student")))
        lines += [f"  {crossover.describe(label, gpu, cpu)}" for label, gpu in series if gpu]
    return lines


def summarize_grid(rows: List[dict]) -> List[str]:
    """Lesson 06: each function's GB/s at the largest n, as a share of the copy of the same grid."""
    largest = max(r["n"] for r in rows)
    copy = next((r for r in rows if r["operation"] == "copy" and r["n"] == largest), None)
    lines = []
    for name in sorted({r["implementation"] for r in rows} - {"cudaMemcpy"},
                       key=lambda s: ({"student": 0, "reference": 1}.get(s, 2), s)):
        parts = [f"{r['operation']} {r['gbps']:.0f} GB/s" + (f" ({r['gbps'] / copy['gbps']:.0%})" if copy else "")
                 for r in rows if r["implementation"] == name and r["n"] == largest]
        lines.append(f"  {name:<10} at n = {largest}: " + ", ".join(parts))
    if copy:
        lines.append(f"  copy of the same grid, device to device: {copy['gbps']:.0f} GB/s")
    return lines


def summarize_monte_carlo(rows: List[dict]) -> List[str]:
    """Lesson 07: pi at the largest N, each implementation's points per second (against cuRAND's
    host API) and its RMS error over the seeds (against the standard error); the CPU's points per
    second; the histogram at 256 bins (or the nearest swept), against global atomics."""
    lines = []
    host_api = sweep_schema.points_per_second(rows, "baseline", "host_api_pi")
    for name in sorted({r["implementation"] for r in rows if r["operation"] == sweep_schema.PI_COUNT},
                       key=lambda s: (s != "student", s)):
        rate = sweep_schema.points_per_second(rows, name, sweep_schema.PI_COUNT)
        errors = sweep_schema.pi_errors(rows, name)
        n = max(rate)
        versus = f" ({rate[n] / host_api[n]:.2g}x the cuRAND host API)" if n in host_api else ""
        error = (f"; RMS error over {len(errors[n])} seeds {sweep_schema.rms(errors[n]):.2g} (standard error "
                 f"{sweep_schema.pi_standard_error(n):.2g})") if n in errors else ""
        lines.append(f"  {name:<10} pi at N = {crossover.format_n(n)}: {rate[n]:.3g} points/s{versus}{error}")
    for (name, operation), label in ((("baseline", "host_api_pi"), "cuRAND host API"),
                                     (("CPU", "cpu_one_thread"), "CPU, one thread"),
                                     (("CPU", "cpu_all_threads"), "CPU, all threads")):
        rate = sweep_schema.points_per_second(rows, name, operation)
        if rate:
            n = max(rate)
            lines.append(f"  {label:<18} {rate[n]:.3g} points/s at N = {crossover.format_n(n)} ({operation})")
    histograms = [r for r in rows if r["operation"] in ("histogram", "global_atomics_histogram")]
    if histograms:
        bins = min({r["bins"] for r in histograms}, key=lambda b: (abs(math.log2(b / 256)), b))
        at = sorted((r for r in histograms if r["bins"] == bins), key=lambda r: (r["implementation"] != "student",
                                                                                 r["implementation"] == "baseline"))
        lines.append(f"  histogram of n = {crossover.format_n(at[0]['n'])} values into {bins} bins: " + ", ".join(
            f"{'global atomics' if r['implementation'] == 'baseline' else r['implementation']} "
            f"{r['median_ms']:.3g} ms" for r in at))
    return lines


def summarize(path: Path, kind: str) -> List[str]:
    """One line per implementation: its best configuration at the largest n, the way the
    lesson's sweep kind (the manifest's "sweep": {"kind"}) reads."""
    rows = read_sweep(path)
    kernels = [r for r in rows if not is_transfer(r)]
    largest = max(r["n"] for r in kernels)
    if kind == "streams":
        return summarize_streams(rows)
    if kind == "reduction":
        return summarize_reduction(kernels)
    if kind == "gflops":
        return summarize_gflops(kernels, largest)
    if kind == "grid":
        return summarize_grid(kernels)
    if kind == "monte_carlo":
        return summarize_monte_carlo(kernels)
    lines = []
    for name in sorted({r["implementation"] for r in kernels}, key=lambda s: (s != "student", s)):
        best = min((r for r in kernels if r["implementation"] == name and r["n"] == largest),
                   key=lambda r: r["median_ms"])
        lines.append(f"  {name:<10} best at n = {largest:.3g}: {best['gbps']:.0f} GB/s, "
                     f"{best['pct_of_copy_bandwidth']:.0f}% of the copy bandwidth (block {best['block']}, "
                     f"grid '{best['grid_mode']}', {best['median_ms']:.4g} ms)")
    transfers = {r["operation"]: r for r in rows if is_transfer(r) and r["n"] == largest}
    if transfers:
        lines.append("  copies at n = {:.3g}: ".format(largest) + ", ".join(
            f"{op} {r['gbps']:.1f} GB/s" for op, r in sorted(transfers.items())))
    return lines


# The options of each sweep kind's axes beyond the sizes: ./sweep's flags, which its sweep
# program takes by the same names.
AXES = {"bandwidth": ("--blocks", "--grids"), "gflops": ("--blocks",), "reduction": ("--blocks",),
        "streams": ("--streams", "--chunks"), "grid": (), "monte_carlo": ()}


def sweep_options(args: argparse.Namespace, kind: str, kinds: List[str]) -> List[str]:
    """The sweep program's options for a lesson of `kind`: the sizes and samples, and the axes its
    kind has. An axis no lesson swept has (--streams for lesson 02 alone) is refused, naming the
    axes there are."""
    given = {flag: getattr(args, flag[2:]) for flag in ("--blocks", "--grids", "--streams", "--chunks")}
    axes = sorted({axis for k in kinds for axis in AXES[k]})
    for flag, value in given.items():
        if value is not None and flag not in axes:
            raise ValueError(f"{flag} is not an axis of the lessons swept here; theirs: {', '.join(axes)}"
                             + (" (lesson 05 sweeps streams and chunks, not block sizes)" if "streams" in kinds
                                and flag in ("--blocks", "--grids") else ""))
    options = []
    for flag, value in (("--sizes", args.sizes), ("--samples", args.samples)):
        if value is not None:
            options += [flag, str(value)]
    for axis in AXES[kind]:
        if given[axis] is not None:
            options += [axis, str(given[axis])]
    return options


def main(argv: Optional[List[str]] = None, root: Optional[Path] = None) -> int:
    root = Path(root or Path(__file__).resolve().parents[2])
    args = parse_args(sys.argv[1:] if argv is None else argv, root)
    try:
        lessons = select_lessons(load_manifest(root / "lessons" / "manifest.json"), args.lessons)
    except ManifestError as e:
        print(f"sweep: {e}", file=sys.stderr)
        return EXIT_USAGE
    # A lesson has a sweep when its manifest entry declares one ("sweep": its kind and figures).
    with_sweep = [l for l in lessons if l.sweep]
    if not with_sweep:
        print(f"sweep: {', '.join(l.slug for l in lessons)} has no sweep; lessons with one: "
              + ", ".join(l.slug for l in load_manifest(root / "lessons" / "manifest.json") if l.sweep),
              file=sys.stderr)
        return EXIT_USAGE
    missing = [l.slug for l in with_sweep if not (root / "tools" / "bench" / f"{l.slug}.cu").exists()]
    if missing:
        print(f"sweep: lessons/manifest.json declares a sweep for {', '.join(missing)}, but there is no "
              + ", ".join(f"tools/bench/{slug}.cu" for slug in missing) + " to run it", file=sys.stderr)
        return EXIT_USAGE
    try:
        options = {l.slug: sweep_options(args, l.sweep.kind, [m.sweep.kind for m in with_sweep]) for l in with_sweep}
    except ValueError as e:
        print(f"sweep: {e}", file=sys.stderr)
        return EXIT_USAGE
    tree_dir = resolve_tree(root, args.tree)
    if not tree_dir.is_dir():
        print(f"sweep: there is no directory {args.tree!r}. Give --tree a directory laid out like exercises/.",
              file=sys.stderr)
        return EXIT_USAGE
    build_dir = Path(args.build_dir).resolve()
    try:
        index, tree = build.prepare(root, build_dir, tree_dir, args.no_build)
    except build.BuildError as e:
        print(f"sweep: {e}", file=sys.stderr)
        return EXIT_BUILD

    try:
        device_query = query_device(index)
    except LockError as e:
        print(f"sweep: {e}", file=sys.stderr)
        return EXIT_BUILD
    if device_query.returncode != 0:
        reason = device_query.stderr.decode(errors="replace").strip() or "the GPU could not be queried."
        print(f"sweep: nothing was timed. {reason}", file=sys.stderr)
        return EXIT_NO_GPU if device_query.returncode == EXIT_NO_GPU else EXIT_BUILD
    device = json.loads(device_query.stdout)
    # A sweep times everything it runs: it holds the GPU alone, as a grading's timed phase does.
    gpu = GpuLock.for_device(device, tree)
    env = {"WORKBOOK_COPY_BANDWIDTH_GBPS": str(device.get("copy_bandwidth_gbps", ""))}
    print(f"Sweeping on {device.get('name')} (copy bandwidth {float(device.get('copy_bandwidth_gbps', 0)):.0f} GB/s)",
          flush=True)

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    skeletons = skeleton.load(root)
    status = EXIT_OK
    for lesson in with_sweep:
        runs = [("student", tree)]
        # The reference runs beside the student's code only where solutions/ has the lesson: a
        # student release holds the solutions of the lessons published so far, or none.
        reference_sweeps = index.get("trees", {}).get("solutions", {}).get("sweeps", {})
        if not args.no_reference and tree != "solutions" and lesson.slug in reference_sweeps:
            runs.append(("reference", "solutions"))
        elif tree == "solutions":
            runs = [("reference", "solutions")]
        rows: Dict[Tuple[str, ...], str] = {}  # by row_key: each measurement once, the first kept
        left_out: List[LeftOut] = []
        transfers_done = args.no_transfers
        passes: Tuple[str, ...] = ()  # what the first run calibrated, for the later ones
        timeline: List[str] = []
        for implementation, tree_name in runs:
            target = build.sweep_target(lesson.slug, tree_name)
            if not args.no_build:
                print(f"Building {target} ...", flush=True)
                ok, log = build.build_target(build_dir, target)
                if not ok:
                    print(f"sweep: {lesson.slug} ({implementation}) does not compile, so it is not swept:\n"
                          f"{build.first_errors(log)}", file=sys.stderr)
                    status = EXIT_PARTIAL
                    continue
                index = build.load_index(build_dir) or index  # the build may have reconfigured itself
            program = build.sweep_programs(index, tree_name).get(lesson.slug)
            if not program or not Path(program).exists():
                print(f"sweep: no sweep program for {lesson.slug} in {build_dir}; run without --no-build",
                      file=sys.stderr)
                status = EXIT_PARTIAL
                continue
            # Transfers (and the baselines of lessons 03 and 04) are timed by the first run that gets to the end;
            # a run after a crash times them again and the repeats are dropped, so none is lost.
            try:
                with gpu.exclusive():
                    swept = sweep_implementation(
                        program, implementation, options[lesson.slug] + list(passes) +
                        ([] if not transfers_done else ["--no-transfers"]), env,
                        lambda errors: label_untouched(errors, tree_dir, lesson.slug, skeletons),
                        columns_for(lesson.sweep.kind))
            except LockError as e:
                print(f"sweep: {e}", file=sys.stderr)
                return EXIT_BUILD
            if swept.code == PROGRAM_NO_GPU:
                return EXIT_NO_GPU
            for row in swept.rows:
                rows.setdefault(row_key(row, columns_for(lesson.sweep.kind)), row)
            left_out += swept.left_out
            passes = passes or swept.passes
            timeline += swept.timeline
            if swept.code == EXIT_INCORRECT:
                print(f"sweep: {implementation} was not swept: fix it first (./grade {lesson.number:02d}).",
                      file=sys.stderr)
            elif swept.code not in (0, EXIT_INCORRECT) and not swept.left_out:
                print(f"sweep: the {implementation} sweep failed (exit {swept.code}).", file=sys.stderr)
            if swept.code != 0 or swept.left_out:
                status = EXIT_PARTIAL
            transfers_done = transfers_done or swept.code == 0
        if not any(key[1] not in TRANSFERS for key in rows):
            print(f"sweep: nothing was measured for {lesson.slug}", file=sys.stderr)
            print_left_out(left_out)
            status = EXIT_PARTIAL
            continue
        path = out_dir / f"{lesson.slug}.csv"
        write_csv(path, list(rows.values()), left_out, columns_for(lesson.sweep.kind))
        try:
            summary = summarize(path, lesson.sweep.kind)
        except CsvError as e:
            print(f"sweep: the CSV written does not read back: {e}", file=sys.stderr)
            return EXIT_PARTIAL
        shown = shown_path(path)
        print(f"\nWrote {shown} ({len(rows)} rows).")
        timeline_path = out_dir / f"{lesson.slug}_timeline.csv"
        if timeline:
            write_timeline(timeline_path, timeline)
            try:
                read_timeline(timeline_path)
            except CsvError as e:
                print(f"sweep: the timeline written does not read back: {e}", file=sys.stderr)
                return EXIT_PARTIAL
            print(f"Wrote {shown_path(timeline_path)} ({len(timeline)} records of traced calls of process).")
        elif timeline_path.exists():  # an older sweep's: it would be drawn beside this one's rows
            timeline_path.unlink()
        print("\n".join(summary))
        print_left_out(left_out)
        print(f"Figures: ./plot {shown}" + (" (the timeline beside it too)" if timeline else ""))
    return status


def shown_path(path: Path) -> str:
    """A path as the user would type it: relative to here when below here."""
    return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)


def print_left_out(left_out: List[LeftOut]) -> None:
    if left_out:
        print("Left out (the CSV notes it after the rows):")
        for entry in left_out:
            print(f"  {entry.implementation} {entry.operation}: {entry.why}")
