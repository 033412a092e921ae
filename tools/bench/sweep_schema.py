"""The sweep CSV: its columns, and a reader that checks a file against them.

One row per measurement ("tidy" data). The sweep programs write the same columns
(bench::sweep_columns() in tools/bench/sweep.cpp; a test checks they agree):

  lesson, implementation, operation   what was timed: e.g. 02_multiply_add, student, multiply_add
                                      (transfers: implementation cudaMemcpy, operation h2d_pinned ...;
                                      baselines: cuBLAS, CUB or CPU, e.g. CUB cub_sum, CPU cpu_one_thread)
  n                                   problem size in elements
  block, grid_mode, grid              the launch configuration (empty for transfers; block and grid are
                                      also empty with grid_mode "own": code that chose its own launch,
                                      such as cuBLAS, lesson 03's challenge launcher, or the CPU). A
                                      lesson whose axes are not a launch names them for what they are
                                      (AXES_BY_KIND): lesson 05's CSV has the columns streams and chunks
                                      in their places, set in its pipelines (grid_mode "pipeline")
  samples, median_ms, min_ms, max_ms  the timing: CUDA events, except lesson 04's CPU rows and
                                      gpu_with_transfer, lesson 05's process, process_pageable and
                                      pageable_sequential, and lesson 07's CPU rows, timed with the
                                      host clock (copies included)
  bytes, flops                        moved per launch (a copy counts its bytes once), operations per launch
  gbps, gflops                        bytes / median time, flops / median time (1e9 per second)
  pct_of_copy_bandwidth               gbps as a percentage of copy_bandwidth_gbps
  copy_bandwidth_gbps                 the device-to-device copy bandwidth measured in the same run
  gpu, date                           the GPU's name, and when the sweep started (ISO 8601, UTC)

Lesson 05 (05_streams) at one n: student and reference process (grid_mode "pipeline") for each
number of streams and chunks, and process_pageable ("own"); cudaMemcpy h2d_pinned and d2h_pinned
and baseline transform (the lesson's kernel alone, "own") are the stages of the overlap bound
max(H2D, kernel, D2H) and of the sequential time H2D + kernel + D2H (overlap.py); cudaMemcpy
h2d_pageable and d2h_pageable, and baseline pageable_sequential (copy in, kernel, copy out one
after the other from pageable memory), are task 4's. bytes counts the n floats in and out (8n;
4n for a copy), flops 2 x work per element (one FMA per step of the kernel's work).

Lesson 07 (07_monte_carlo, kind "monte_carlo") names its axes seed and bins, and has one column
more, after date (EXTRA_COLUMNS_BY_KIND): inside, the result of a pi row, which a timing has no
column for. All its rows have grid_mode "own":
  student or reference count_inside_circle   N points (n), one row per seed (seed), the count of
                                              points inside the quarter circle (inside): pi is
                                              about 4 inside / n
  baseline host_api_pi                        cuRAND's host API draws 2n uniforms into memory, a
                                              kernel counts them (its own fixed seed: seed empty;
                                              inside is its last timed call's); bytes 16 n
  CPU cpu_one_thread, cpu_all_threads         the same on the host (xoshiro256**), timed with the
                                              host clock; seed the first of the sweep's
  student or reference histogram, baseline global_atomics_histogram
                                              n values into `bins` bins (seed and inside empty);
                                              bytes 4 n
bytes is 0 where nothing is read from memory; flops is 0 throughout.

Lines that start with '#' are notes, not rows. ./sweep writes one after the rows for each
function it left out because it crashed or hung ("# left out: student matmul_challenge:
crashed (...) while checking its results"); left_out() reads them.

The timeline CSV (lesson 05, sweep-results/05_streams_timeline.csv): what the GPU did during one
call of process (4 streams, 16 chunks, the largest n), recorded by the grader's CUPTI tracer,
one row per record; read_timeline() reads it. Its columns (TIMELINE_COLUMNS):

  lesson, implementation, operation   05_streams, student or reference, process
  n, streams, chunks, work            the call's arguments
  kind                                call (the call itself: start_ms 0, end_ms when it returned),
                                      kernel, h2d, d2h, d2d, h2h, copy (another direction) or memset
  name                                the kernel's name, or the runtime call that made the copy
  stream                              1, 2, ...: the streams in the order their first work started
                                      (empty for the call)
  start_ms, end_ms                    GPU times in ms since process was called
  bytes                               copied or set (0 for kernels and the call)
  gpu, date                           as in the sweep CSV
"""
from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Dict, List, Tuple

COLUMNS = ["lesson", "implementation", "operation", "n", "block", "grid_mode", "grid", "samples", "median_ms",
           "min_ms", "max_ms", "bytes", "flops", "gbps", "gflops", "pct_of_copy_bandwidth", "copy_bandwidth_gbps",
           "gpu", "date"]
TRANSFERS = ("h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned")
_INTEGER = ("n", "samples")
OWN_LAUNCH = "own"
_NUMBER = ("median_ms", "min_ms", "max_ms", "bytes", "flops", "gbps", "gflops", "pct_of_copy_bandwidth",
           "copy_bandwidth_gbps")
_TEXT = ("lesson", "implementation", "operation", "gpu", "date")
PIPELINE = "pipeline"  # lesson 05's process, in the columns streams and chunks
LAUNCH_AXES = ("block", "grid")
# The names a sweep kind gives its two axis columns where they are not a launch configuration
# (bench::Defaults::block_column and grid_column in tools/bench/sweep.hpp; a test checks they agree).
AXES_BY_KIND = {"streams": ("streams", "chunks"), "monte_carlo": ("seed", "bins")}
# Columns a sweep kind writes after date: what its figures need besides the timing (lesson 07:
# the count of a pi estimate). Each is a whole number >= 0, or empty where a row has none; the
# other kinds' files have none, so their headers, and the files written before, stay as they were.
EXTRA_COLUMNS_BY_KIND = {"monte_carlo": ("inside",)}
_EXTRA_AT_MOST_N = ("inside",)  # a count of the n points drawn


def columns_for(kind: str) -> List[str]:
    """The header of a sweep of `kind`: COLUMNS with its axes named (lesson 05: streams, chunks)
    and its extra columns after them (lesson 07: inside)."""
    first, second = AXES_BY_KIND.get(kind, LAUNCH_AXES)
    return ([first if c == "block" else second if c == "grid" else c for c in COLUMNS]
            + list(EXTRA_COLUMNS_BY_KIND.get(kind, ())))


HEADERS = [COLUMNS] + [columns_for(kind) for kind in sorted(set(AXES_BY_KIND) | set(EXTRA_COLUMNS_BY_KIND))]
TIMELINE_COLUMNS = ["lesson", "implementation", "operation", "n", "streams", "chunks", "work", "kind", "name",
                    "stream", "start_ms", "end_ms", "bytes", "gpu", "date"]
TIMELINE_KINDS = ("call", "kernel", "h2d", "d2h", "d2d", "h2h", "copy", "memset")
LEFT_OUT = "# left out: "
_LEFT_OUT = re.compile("^" + re.escape(LEFT_OUT) + r"(\S+) (.+?): (.*)$")  # implementation, operation, why


class CsvError(Exception):
    """The file is not a sweep CSV; the message says where and what is wrong."""


def is_transfer(row: Dict) -> bool:
    return row["operation"] in TRANSFERS


def _whole_number(text: str, column: str, where: str, at_least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CsvError(f"{where}: column {column} is {text!r}, not a whole number") from None
    if value < at_least:
        raise CsvError(f"{where}: column {column} is {value}; it must be at least {at_least}")
    return value


def _parse_row(raw: Dict[str, str], where: str, axes: Tuple[str, str], extras: Tuple[str, ...] = ()) -> Dict:
    row: Dict = {}
    for column in _TEXT:
        if not raw[column].strip():
            raise CsvError(f"{where}: column {column} is empty")
        row[column] = raw[column].strip()
    row["grid_mode"] = raw["grid_mode"].strip()
    for column in _INTEGER + axes:  # the axes are empty for transfers and for grid_mode OWN_LAUNCH
        text = raw[column].strip()
        if not text and column in axes and (row["operation"] in TRANSFERS or row["grid_mode"] == OWN_LAUNCH):
            row[column] = None
            continue
        row[column] = _whole_number(text, column, where, at_least=1)
    for column in _NUMBER:
        text = raw[column].strip()
        try:
            row[column] = float(text)
        except ValueError:
            raise CsvError(f"{where}: column {column} is {text!r}, not a number") from None
        if not row[column] >= 0:  # also rejects nan
            raise CsvError(f"{where}: column {column} is {text}; it must be a number >= 0")
    if not 0 < row["min_ms"] <= row["median_ms"] <= row["max_ms"]:
        raise CsvError(f"{where}: the times must satisfy 0 < min_ms <= median_ms <= max_ms, got "
                       f"{row['min_ms']}, {row['median_ms']}, {row['max_ms']}")
    if row["operation"] not in TRANSFERS and not row["grid_mode"]:
        raise CsvError(f"{where}: column grid_mode is empty for a kernel row")
    if row["grid_mode"] == PIPELINE and axes == LAUNCH_AXES:
        raise CsvError(f"{where}: a '{PIPELINE}' row (lesson 05) in a file whose header names block and grid, not "
                       "streams and chunks: an older ./sweep 05 wrote it; run ./sweep 05 again")
    if row["grid_mode"] == PIPELINE and None in (row[axes[0]], row[axes[1]]):
        raise CsvError(f"{where}: a '{PIPELINE}' row needs the columns {axes[0]} and {axes[1]} set")
    for column in extras:  # EXTRA_COLUMNS_BY_KIND: a whole number >= 0, or empty
        text = raw[column].strip()
        if not text:
            row[column] = None
            continue
        row[column] = _whole_number(text, column, where, at_least=0)
        if column in _EXTRA_AT_MOST_N and row[column] > row["n"]:
            raise CsvError(f"{where}: column {column} is {row[column]}, more than the n = {row['n']} points drawn")
    return row


# What lesson 07's pi rows mean (./plot's figures and ./sweep's summary read them the same way).
PI_COUNT = "count_inside_circle"  # task 1's rows: one per N and seed, with the count in `inside`


def pi_standard_error(n: int) -> float:
    """The standard deviation of 4 inside / n about pi: 4 sqrt(p (1 - p) / n) with p = pi / 4."""
    return math.sqrt(math.pi * (4 - math.pi) / n)


def pi_errors(rows: List[Dict], implementation: str, operation: str = PI_COUNT) -> Dict[int, List[float]]:
    """For each n, the signed errors 4 inside / n - pi of `implementation`'s rows, one per seed."""
    errors: Dict[int, List[float]] = {}
    for r in rows:
        if r["implementation"] == implementation and r["operation"] == operation and r.get("inside") is not None:
            errors.setdefault(r["n"], []).append(4.0 * r["inside"] / r["n"] - math.pi)
    return {n: errors[n] for n in sorted(errors)}


def rms(values: List[float]) -> float:
    """The root mean square: of errors about the true value, the spread a standard error predicts."""
    return math.sqrt(sum(v * v for v in values) / len(values))


def median_row(rows: List[Dict]) -> Dict:
    """Of several timings of one thing (a row per seed), the one with the median time (the lower middle one)."""
    ordered = sorted(rows, key=lambda r: r["median_ms"])
    return ordered[(len(ordered) - 1) // 2]


def points_per_second(rows: List[Dict], implementation: str, operation: str) -> Dict[int, float]:
    """For each n, n / the median time of `implementation`'s `operation` (over its seeds' rows)."""
    by_n: Dict[int, List[Dict]] = {}
    for r in rows:
        if r["implementation"] == implementation and r["operation"] == operation:
            by_n.setdefault(r["n"], []).append(r)
    return {n: n / (median_row(by_n[n])["median_ms"] * 1e-3) for n in sorted(by_n)}


def left_out_note(implementation: str, operation: str, why: str) -> str:
    """The note ./sweep writes for a function it left out, on one line."""
    return f"{LEFT_OUT}{implementation} {operation}: {' '.join(why.split())}"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CsvError(f"{path}: no such file; ./sweep writes it (sweep-results/<lesson>.csv)") from None
    except UnicodeDecodeError:
        raise CsvError(f"{path}: not a text file") from None


def left_out(path: Path) -> List[Dict[str, str]]:
    """The functions a sweep CSV says were left out: implementation, operation and why."""
    notes = [_LEFT_OUT.match(line) for line in _read_text(Path(path)).splitlines()]
    return [dict(zip(("implementation", "operation", "why"), m.groups())) for m in notes if m]


def _header_of(path: Path, text: str) -> Tuple[int, List[str], List[Tuple[int, str]]]:
    """The first line that is not a note, as fields, with its number and the lines after it."""
    numbered = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
                if line.strip() and not line.startswith("#")]
    if not numbered:
        raise CsvError(f"{path}: the file is empty")
    return numbered[0][0], next(csv.reader([numbered[0][1]])), numbered[1:]


def _header_error(path: Path, number: int, header: List[str], columns: List[str], what: str) -> CsvError:
    missing = [c for c in columns if c not in header]
    extra = [c for c in header if c not in columns]
    detail = (f"missing {', '.join(missing)}" if missing else "") + \
             ("; " if missing and extra else "") + (f"unexpected {', '.join(extra)}" if extra else "")
    return CsvError(f"{path}: line {number} is not the {what} header ({detail or 'columns out of order'}). "
                    "Expected: " + ",".join(columns))


def is_timeline(path: Path) -> bool:
    """Whether the file's header is the timeline's (lesson 05), not the sweep's."""
    try:
        _, header, _ = _header_of(Path(path), _read_text(Path(path)))
    except CsvError:
        return False
    return header == TIMELINE_COLUMNS


def _number(raw: Dict[str, str], column: str, where: str) -> float:
    text = raw[column].strip()
    try:
        value = float(text)
    except ValueError:
        raise CsvError(f"{where}: column {column} is {text!r}, not a number") from None
    if not math.isfinite(value):
        raise CsvError(f"{where}: column {column} is {text}; it must be a finite number")
    return value


def read_timeline(path: Path) -> List[Dict]:
    """The records of a timeline CSV (lesson 05), typed. Raises CsvError naming the file, the
    line and the problem when the file is not one."""
    path = Path(path)
    header_number, header, lines = _header_of(path, _read_text(path))
    if header != TIMELINE_COLUMNS:
        raise _header_error(path, header_number, header, TIMELINE_COLUMNS, "timeline")
    rows = []
    for number, line in lines:
        where = f"{path}: line {number}"
        fields = next(csv.reader([line]))
        if len(fields) != len(TIMELINE_COLUMNS):
            raise CsvError(f"{where}: {len(fields)} fields, expected {len(TIMELINE_COLUMNS)}")
        raw = dict(zip(TIMELINE_COLUMNS, (f.strip() for f in fields)))
        row: Dict = {}
        for column in ("lesson", "implementation", "operation", "kind", "gpu", "date"):
            if not raw[column]:
                raise CsvError(f"{where}: column {column} is empty")
            row[column] = raw[column]
        row["name"] = raw["name"]
        if row["kind"] not in TIMELINE_KINDS:
            raise CsvError(f"{where}: kind {row['kind']!r} is none of {', '.join(TIMELINE_KINDS)}")
        for column in ("n", "streams", "chunks", "work", "stream"):
            if column == "stream" and row["kind"] == "call":
                if raw[column]:
                    raise CsvError(f"{where}: the call's row has a stream ({raw[column]!r}); it must be empty")
                row[column] = None
                continue
            try:
                row[column] = int(raw[column])
            except ValueError:
                raise CsvError(f"{where}: column {column} is {raw[column]!r}, not a whole number") from None
            if row[column] < 1:
                raise CsvError(f"{where}: column {column} is {row[column]}; it must be at least 1")
        for column in ("start_ms", "end_ms", "bytes"):
            row[column] = _number(raw, column, where)
        if row["end_ms"] < row["start_ms"]:
            raise CsvError(f"{where}: it ends (end_ms {row['end_ms']}) before it starts (start_ms {row['start_ms']})")
        if row["bytes"] < 0:
            raise CsvError(f"{where}: column bytes is {row['bytes']}; it must be >= 0")
        rows.append(row)
    implementations = sorted({r["implementation"] for r in rows})
    if not implementations:
        raise CsvError(f"{path}: no records in the file")
    for name in implementations:
        calls = [r for r in rows if r["implementation"] == name and r["kind"] == "call"]
        if len(calls) != 1:
            raise CsvError(f"{path}: {name} has {len(calls)} rows of kind 'call'; a timeline has one per "
                           "implementation")
    gpus = sorted({r["gpu"] for r in rows})
    if len(gpus) > 1:
        raise CsvError(f"{path}: the records come from several GPUs ({'; '.join(gpus)})")
    return rows


def read_sweep(path: Path) -> List[Dict]:
    """The rows of a sweep CSV, typed; notes (lines starting with '#') are passed over.
    Raises CsvError naming the file, the line and the problem when the file is not one."""
    path = Path(path)
    # Line numbers as in the file, so that a message points at the right line past a note.
    header_number, header, lines = _header_of(path, _read_text(path))
    if header not in HEADERS:
        if header == TIMELINE_COLUMNS:
            raise CsvError(f"{path}: this is a timeline (lesson 05), not a sweep CSV; ./plot draws both")
        closest = max(HEADERS, key=lambda h: len(set(h) & set(header)))
        raise _header_error(path, header_number, header, closest, "sweep")
    axes = (header[COLUMNS.index("block")], header[COLUMNS.index("grid")])
    extras = tuple(header[len(COLUMNS):])
    rows = []
    for number, line in lines:
        where = f"{path}: line {number}"
        fields = next(csv.reader([line]))
        if len(fields) != len(header):
            raise CsvError(f"{where}: {len(fields)} fields, expected {len(header)}")
        rows.append(_parse_row(dict(zip(header, fields)), where, axes, extras))
    if not any(not is_transfer(r) for r in rows):
        raise CsvError(f"{path}: no kernel measurements in the file")
    gpus = sorted({r["gpu"] for r in rows})
    if len(gpus) > 1:
        raise CsvError(f"{path}: the rows come from several GPUs ({'; '.join(gpus)}); plot one GPU's sweep at a time, "
                       "since every figure compares measurements from the same run")
    return rows
