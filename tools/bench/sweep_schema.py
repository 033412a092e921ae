"""The sweep CSV: its columns, and a reader that checks a file against them.

One row per measurement ("tidy" data). The sweep programs write the same columns
(bench::sweep_columns() in tools/bench/sweep.cpp; a test checks they agree):

  lesson, implementation, operation   what was timed: e.g. 02_multiply_add, student, multiply_add
                                      (transfers: implementation cudaMemcpy, operation h2d_pinned ...;
                                      baselines: cuBLAS, CUB or CPU, e.g. CUB cub_sum, CPU cpu_one_thread)
  n                                   problem size in elements
  block, grid_mode, grid              the launch configuration (empty for transfers; block and grid are
                                      also empty with grid_mode "own": code that chose its own launch,
                                      such as cuBLAS, lesson 03's challenge launcher, or the CPU)
  samples, median_ms, min_ms, max_ms  the timing: CUDA events, except lesson 04's CPU rows and
                                      gpu_with_transfer, timed with the host clock (copies included)
  bytes, flops                        moved per launch (a copy counts its bytes once), operations per launch
  gbps, gflops                        bytes / median time, flops / median time (1e9 per second)
  pct_of_copy_bandwidth               gbps as a percentage of copy_bandwidth_gbps
  copy_bandwidth_gbps                 the device-to-device copy bandwidth measured in the same run
  gpu, date                           the GPU's name, and when the sweep started (ISO 8601, UTC)

Lines that start with '#' are notes, not rows. ./sweep writes one after the rows for each
function it left out because it crashed or hung ("# left out: student matmul_challenge:
crashed (...) while checking its results"); left_out() reads them.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Dict, List

COLUMNS = ["lesson", "implementation", "operation", "n", "block", "grid_mode", "grid", "samples", "median_ms",
           "min_ms", "max_ms", "bytes", "flops", "gbps", "gflops", "pct_of_copy_bandwidth", "copy_bandwidth_gbps",
           "gpu", "date"]
TRANSFERS = ("h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned")
_INTEGER = ("n", "samples")
_OPTIONAL_INTEGER = ("block", "grid")  # empty for transfers and for grid_mode OWN_LAUNCH
OWN_LAUNCH = "own"
_NUMBER = ("median_ms", "min_ms", "max_ms", "bytes", "flops", "gbps", "gflops", "pct_of_copy_bandwidth",
           "copy_bandwidth_gbps")
_TEXT = ("lesson", "implementation", "operation", "gpu", "date")
LEFT_OUT = "# left out: "
_LEFT_OUT = re.compile("^" + re.escape(LEFT_OUT) + r"(\S+) (.+?): (.*)$")  # implementation, operation, why


class CsvError(Exception):
    """The file is not a sweep CSV; the message says where and what is wrong."""


def is_transfer(row: Dict) -> bool:
    return row["operation"] in TRANSFERS


def _parse_row(raw: Dict[str, str], where: str) -> Dict:
    row: Dict = {}
    for column in _TEXT:
        if not raw[column].strip():
            raise CsvError(f"{where}: column {column} is empty")
        row[column] = raw[column].strip()
    row["grid_mode"] = raw["grid_mode"].strip()
    for column in _INTEGER + _OPTIONAL_INTEGER:
        text = raw[column].strip()
        if not text and column in _OPTIONAL_INTEGER and (row["operation"] in TRANSFERS
                                                         or row["grid_mode"] == OWN_LAUNCH):
            row[column] = None
            continue
        try:
            row[column] = int(text)
        except ValueError:
            raise CsvError(f"{where}: column {column} is {text!r}, not a whole number") from None
        if row[column] < 1:
            raise CsvError(f"{where}: column {column} is {row[column]}; it must be at least 1")
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
    return row


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


def read_sweep(path: Path) -> List[Dict]:
    """The rows of a sweep CSV, typed; notes (lines starting with '#') are passed over.
    Raises CsvError naming the file, the line and the problem when the file is not one."""
    path = Path(path)
    text = _read_text(path)
    # Line numbers as in the file, so that a message points at the right line past a note.
    numbered = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
                if line.strip() and not line.startswith("#")]
    if not numbered:
        raise CsvError(f"{path}: the file is empty")
    header_number, header_line = numbered[0]
    header = next(csv.reader([header_line]))
    if header != COLUMNS:
        missing = [c for c in COLUMNS if c not in header]
        extra = [c for c in header if c not in COLUMNS]
        detail = (f"missing {', '.join(missing)}" if missing else "") + \
                 ("; " if missing and extra else "") + (f"unexpected {', '.join(extra)}" if extra else "")
        raise CsvError(f"{path}: line {header_number} is not the sweep header ({detail or 'columns out of order'}). "
                       "Expected: " + ",".join(COLUMNS))
    rows = []
    for number, line in numbered[1:]:
        where = f"{path}: line {number}"
        fields = next(csv.reader([line]))
        if len(fields) != len(COLUMNS):
            raise CsvError(f"{where}: {len(fields)} fields, expected {len(COLUMNS)}")
        rows.append(_parse_row(dict(zip(COLUMNS, fields)), where))
    if not any(not is_transfer(r) for r in rows):
        raise CsvError(f"{path}: no kernel measurements in the file")
    gpus = sorted({r["gpu"] for r in rows})
    if len(gpus) > 1:
        raise CsvError(f"{path}: the rows come from several GPUs ({'; '.join(gpus)}); plot one GPU's sweep at a time, "
                       "since every figure compares measurements from the same run")
    return rows
