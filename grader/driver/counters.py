"""The hardware's counters for a kernel that fell short: what Nsight Compute's command line (ncu)
reads, and what it says.

A timed task below its threshold gets, besides its figure, the counters that tell the common
causes of a slow kernel apart, each beside its ideal (issue 23, part 1):

  global loads and stores   sectors per request: a warp's 32 four-byte accesses to consecutive
                            addresses touch 4 sectors of 32 bytes; 32 far-apart ones touch 32
  shared memory             bank conflicts per request (0 ideal)
  divergence                threads per executed instruction (32 ideal)
  occupancy                 achieved active warps, as a percentage of the SM's maximum
  DRAM                      bytes read and written, against what the task must move
  register spills           bytes of local memory loaded and stored (0 ideal)

ncu runs the grader's program on the timed test in a process of its own (ncu and the grader's
CUPTI tracer cannot share one, ../shared/PLATFORM.md), with WORKBOOK_PROFILE set: then
workbook::run_profiled runs the student's call that counted (never a yardstick's) once more inside
cudaProfilerStart/Stop, the only range ncu profiles (`command`). A timed test that opens such a
range records the metric "profiled_bytes", what that call must move; only those are profiled
(lesson 05's pipelines, timed by the host's clock, are not). This module reads ncu's CSV, describes
each kernel's counters, and names a cause only where a counter proves it (`diagnose`): each cause a
registered hint (grader/hints.json) with a broken variant that triggers it, each threshold set from
the counters of the references and of those variants on an H100 (the figures beside DIAGNOSES).

Where ncu is missing, or the counters are restricted to administrators (ERR_NVGPUCTRPERM, the
default on many course servers), `failure` says so in one line, with what an administrator does.

ncu's CSV (`ncu --csv --metrics a,b,...`) has one row per kernel launch and metric; the columns
differ between versions ("Kernel Time", "Block Size", "Grid Size", rule columns), so it is read
by the names of the columns it needs. Values may carry thousands separators ("1,048,576") and
"n/a" for a metric a kernel has no value for. Lines before the header ("==PROF== ...", the
program's own output) are passed over.
"""
from __future__ import annotations

import csv
import io
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from .scoring import hint

# What ncu reads (sm_70 and later). The first four were checked on an H100 (PLATFORM.md).
GLOBAL_LOAD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
GLOBAL_LOAD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
GLOBAL_STORE_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
GLOBAL_STORE_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
SHARED_LOAD_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SHARED_STORE_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
# Shared memory: wavefronts (the passes the data pipe makes) per shared-memory instruction. A warp's
# 4-byte accesses without conflicts take 1, 16-byte ones 4; an n-way conflict takes n times as many.
# (The bank-conflict counters above also count stalls that share L1's banks with global traffic.)
SHARED_LOAD_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SHARED_STORE_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
SHARED_LOAD_INSTRUCTIONS = "smsp__sass_inst_executed_op_shared_ld.sum"
SHARED_STORE_INSTRUCTIONS = "smsp__sass_inst_executed_op_shared_st.sum"
# Of the bytes in the sectors a global load or store fetched, the percentage its threads asked for.
GLOBAL_LOAD_EFFICIENCY = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"
GLOBAL_STORE_EFFICIENCY = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct"
THREADS_PER_INSTRUCTION = "smsp__thread_inst_executed_per_inst_executed.ratio"
ACTIVE_WARPS_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_WARPS_PCT = "sm__maximum_warps_per_active_cycle_pct"
DRAM_READ_BYTES = "dram__bytes_read.sum"
DRAM_WRITE_BYTES = "dram__bytes_write.sum"
LOCAL_LOAD_BYTES = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"
LOCAL_STORE_BYTES = "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"
DURATION = "gpu__time_duration.sum"
GRID_SIZE = "launch__grid_size"
BLOCK_SIZE = "launch__block_size"
REGISTERS = "launch__registers_per_thread"
SMS = "device__attribute_multiprocessor_count"
WAVES = "launch__waves_per_multiprocessor"
METRICS = (GLOBAL_LOAD_SECTORS, GLOBAL_LOAD_REQUESTS, GLOBAL_STORE_SECTORS, GLOBAL_STORE_REQUESTS,
           GLOBAL_LOAD_EFFICIENCY, GLOBAL_STORE_EFFICIENCY,
           SHARED_LOAD_CONFLICTS, SHARED_STORE_CONFLICTS, SHARED_LOAD_WAVEFRONTS, SHARED_STORE_WAVEFRONTS,
           SHARED_LOAD_INSTRUCTIONS, SHARED_STORE_INSTRUCTIONS,
           THREADS_PER_INSTRUCTION, ACTIVE_WARPS_PCT, THEORETICAL_WARPS_PCT, DRAM_READ_BYTES, DRAM_WRITE_BYTES,
           LOCAL_LOAD_BYTES, LOCAL_STORE_BYTES, DURATION, GRID_SIZE, BLOCK_SIZE, REGISTERS, SMS, WAVES)

# Each kind of access with the counters that describe it: (what, sectors, requests, sector use) for
# global memory, (what, wavefronts, instructions) for shared memory.
GLOBAL_ACCESSES = (("loads", GLOBAL_LOAD_SECTORS, GLOBAL_LOAD_REQUESTS, GLOBAL_LOAD_EFFICIENCY),
                   ("stores", GLOBAL_STORE_SECTORS, GLOBAL_STORE_REQUESTS, GLOBAL_STORE_EFFICIENCY))
SHARED_ACCESSES = (("loads", SHARED_LOAD_WAVEFRONTS, SHARED_LOAD_INSTRUCTIONS),
                   ("stores", SHARED_STORE_WAVEFRONTS, SHARED_STORE_INSTRUCTIONS))

PROFILE_SLOWDOWN = 4  # a timed test under ncu: the profiled kernels replayed once per pass, the rest unchanged
PROFILE_ENV = {"WORKBOOK_PROFILE": "1"}  # workbook::profiling_requested() (common/include/workbook/timer.hpp)
# The metric a timed test records when it opens a profiled range: the bytes its profiled call must move.
PROFILED_BYTES = "profiled_bytes"
PERMISSION_ERROR = "ERR_NVGPUCTRPERM"
PERMISSION_HELP = ("the GPU's performance counters are restricted to administrators on this machine "
                   f"({PERMISSION_ERROR}). An administrator allows them with the line "
                   "'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in a file in /etc/modprobe.d/ and a "
                   "reboot (https://developer.nvidia.com/ERR_NVGPUCTRPERM)")


class Kernel(NamedTuple):
    """One profiled launch: its name, launch shape as ncu printed it, and its counters
    (None where ncu printed n/a)."""
    launch: str
    name: str
    block: str
    grid: str
    values: Dict[str, Optional[float]]

    def value(self, metric: str) -> Optional[float]:
        return self.values.get(metric)

    def ratio(self, numerator: str, denominator: str) -> Optional[float]:
        top, bottom = self.value(numerator), self.value(denominator)
        return None if top is None or not bottom else top / bottom


class CountersError(Exception):
    """ncu's output could not be read; the message says what was wrong."""


# ncu scales a value to a "fitting" unit unless told --print-units base (command() tells it):
# "Mbyte", "Ksector". A prefix left anyway is undone here (decimal, as ncu prints them).
_PREFIXES = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _number(text: str, unit: str = "") -> Optional[float]:
    text = text.strip().replace(",", "")
    if text in ("", "n/a", "N/A"):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    unit = unit.strip()
    if len(unit) > 1 and unit[0] in _PREFIXES and unit[1].islower():
        value *= _PREFIXES[unit[0]]
    return value


def parse(text: str) -> List[Kernel]:
    """The launches in ncu's CSV, in the order ncu printed them, each with its counters."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        raise CountersError("ncu printed no CSV table (no line starting with \"ID\")")
    reader = csv.DictReader(io.StringIO("\n".join(lines[start:])))
    needed = ("ID", "Kernel Name", "Metric Name", "Metric Value")
    missing = [c for c in needed if c not in (reader.fieldnames or [])]
    if missing:
        raise CountersError(f"ncu's CSV has no column {', '.join(missing)}")
    kernels: Dict[str, Kernel] = {}
    for row in reader:
        if row.get("ID") is None or row.get("Metric Name") is None:
            continue  # a line after the table (ncu's own notes)
        launch = row["ID"]
        if launch not in kernels:
            kernels[launch] = Kernel(launch, row["Kernel Name"], row.get("Block Size") or "",
                                     row.get("Grid Size") or "", {})
        kernels[launch].values[row["Metric Name"]] = _number(row["Metric Value"] or "", row.get("Metric Unit") or "")
    return list(kernels.values())


def failure(output: str, returncode: int) -> Optional[str]:
    """Why ncu gave no counters, in one line (None when it gave some): the restriction to
    administrators, a metric this ncu does not know, or its own first error line."""
    if PERMISSION_ERROR in output:
        return "No counters: " + PERMISSION_HELP + "."
    unknown = re.search(r"Failed to find metric (\S+)", output)
    if unknown:
        return f"No counters: this ncu does not know the metric {unknown.group(1)} on this GPU."
    if '"ID",' in output:  # counters, whatever the program's own exit status
        return None
    errors = [line.strip() for line in output.splitlines() if "==ERROR==" in line]
    if errors:
        return "No counters: ncu said: " + errors[0].replace("==ERROR==", "").strip()
    if returncode == 0:
        return "No counters: ncu profiled no kernel of the timed call."
    return f"No counters: ncu exited with status {returncode}."


def _per(value: Optional[float], unit: str, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f} {unit}"


def describe(kernel: Kernel, least_bytes: Optional[float] = None) -> List[str]:
    """The kernel's counters, each beside its ideal, one line each; counters ncu did not give
    are left out. `least_bytes` is what the task must move to and from DRAM, when known."""
    lines = []
    for what, sectors, requests, _ in GLOBAL_ACCESSES:
        per_request = kernel.ratio(sectors, requests)
        if per_request is not None:
            lines.append(f"global {what}: {per_request:.1f} sectors of 32 bytes per warp request (a warp's 4-byte accesses "
                         "to consecutive addresses take 4, 16-byte ones 16; 4-byte ones to 32 far-apart addresses 32)")
    for what, wavefronts, instructions in SHARED_ACCESSES:
        per_instruction = kernel.ratio(wavefronts, instructions)
        if per_instruction is not None:
            lines.append(f"shared {what}: {per_instruction:.1f} wavefronts per warp instruction (1 for 4-byte accesses "
                         "without bank conflicts, 4 for 16-byte ones; an n-way conflict takes n times as many)")
    threads = kernel.value(THREADS_PER_INSTRUCTION)
    if threads is not None:
        lines.append(f"threads per executed instruction: {threads:.1f} (32 when no warp diverges)")
    warps = kernel.value(ACTIVE_WARPS_PCT)
    if warps is not None:
        lines.append(f"achieved occupancy: {warps:.0f}% of the warps an SM can hold were active")
    read, written = kernel.value(DRAM_READ_BYTES), kernel.value(DRAM_WRITE_BYTES)
    if read is not None and written is not None:
        moved = read + written
        line = f"DRAM: {moved / 1e6:.1f} MB read and written"
        if least_bytes:
            line += f" ({moved / least_bytes:.2f} x the {least_bytes / 1e6:.1f} MB the task must move)"
        lines.append(line)
    local = [kernel.value(m) for m in (LOCAL_LOAD_BYTES, LOCAL_STORE_BYTES)]
    if all(v is not None for v in local):
        lines.append(f"local memory (register spills, or arrays the compiler could not keep in registers): "
                     f"{_per(sum(local) / 1e6, 'MB')} loaded and stored (0 when there are none)")
    return lines


# What proves a cause, and the thresholds, measured with ncu on an H100 (November 2026, the
# timed call of each task; tools/gpu_check.sh ncu records them, grader/tests/data/ncu/ holds them):
#   global accesses       the references' loads use 100% of the bytes of the sectors they touch, at 4
#                         (4-byte) or 16 (16-byte) sectors per request; their stores too, but for small
#                         streams left out by SHARE_OF_SECTORS (lesson 04's one partial per block 12.5%,
#                         lesson 03's challenge 50%). vector_add_uncoalesced: 12.5% at 32 sectors per
#                         request. A warp that broadcasts one element, or has one active thread, also
#                         uses 12.5% of one sector per request: not uncoalesced, and left out by
#                         MANY_SECTORS_PER_REQUEST
#   shared wavefronts     references 1.0 per instruction, 5.0 and 2.4 in lesson 03's challenge (16-byte
#                         and transposing accesses); tiled_bank_conflicts 17 and 16.6
#   threads/instruction   references 31.9-32; sum_one_thread_per_block 1.0
#   blocks                references a grid of at least the SM count; sum_few_blocks 8 blocks for 132 SMs
#   DRAM / task minimum   references and students 1.00-1.03 (vector_add_uncoalesced too: L2 absorbs its
#                         waste); sum_via_doubles 5.1
LEAST_SECTOR_USE_PCT = 40.0   # below: a warp's access uses less than 40% of the bytes of the sectors it touches
MANY_SECTORS_PER_REQUEST = 8  # and touches at least 8 sectors per request (4-byte coalesced: 4)
SHARE_OF_SECTORS = 0.1        # loads (or stores) count when they are at least this share of the kernel's sectors
MOST_WAVEFRONTS = 8.0         # 16-byte accesses without conflicts take 4; 8 takes a 2-way conflict at least
FEWEST_THREADS = 16.0         # half of each warp idle, on average over every instruction
MOST_DRAM = 1.5               # x the bytes the task must move, on a task measured in bandwidth
# The figures of merit that are a bandwidth (the manifest's performance metrics): moving more bytes
# than the task needs is a cause of its own there.
BANDWIDTH_METRICS = frozenset({"fraction_of_copy_bandwidth", "fraction_of_cub"})
SHARE_OF_TIME = 0.25          # a kernel is diagnosed when it took at least this share of the call's time


class Diagnosis(NamedTuple):
    """A cause a counter proves: the registered hint's id, the kernel, and the line the verdict shows."""
    hint_id: str
    kernel: str
    line: str


# A kernel whose name holds this is the lesson's own starting point, not the student's (lesson 06's
# task 5 runs field_strength_as_given inside the profiled range before the student's kernel): its
# counters are shown as "before", and no cause is ever found in it. (A student's kernel named so
# would be taken for it: the two names are the same, both in an anonymous namespace.)
AS_GIVEN = "_as_given"


def as_given(kernel: Kernel) -> bool:
    return AS_GIVEN in short_name(kernel.name)


def _timed_kernels(kernels: Sequence[Kernel]) -> List[Kernel]:
    """The launches that took a real share of the call (all of them when ncu gave no durations): a
    one-block kernel that adds 100 partial sums is not why a reduction is slow."""
    kernels = [k for k in kernels if not as_given(k)]
    durations = [k.value(DURATION) for k in kernels]
    total = None if any(d is None for d in durations) else sum(durations)
    if not total:
        return list(kernels)
    return [k for k, d in zip(kernels, durations) if d >= SHARE_OF_TIME * total]


def wide_access_use(kernel: Kernel) -> Dict[str, Tuple[float, float]]:
    """Global loads and stores that carry the kernel's traffic (some sectors, and at least
    SHARE_OF_SECTORS of them): what -> (sectors per request, % of their bytes used)."""
    sectors = {what: kernel.value(count) or 0.0 for what, count, _, _ in GLOBAL_ACCESSES}
    found = {}
    for what, _, requests, use_metric in GLOBAL_ACCESSES:
        used, requested, count = kernel.value(use_metric), kernel.value(requests), sectors[what]
        if used is not None and requested and count > 0 and count >= SHARE_OF_SECTORS * sum(sectors.values()):
            found[what] = (count / requested, used)
    return found


def shared_passes(kernel: Kernel) -> Dict[str, float]:
    """Shared-memory loads and stores: what -> wavefronts per warp instruction."""
    ratios = {what: kernel.ratio(wavefronts, instructions) for what, wavefronts, instructions in SHARED_ACCESSES}
    return {what: r for what, r in ratios.items() if r is not None}


def diagnose(kernels: Sequence[Kernel], least_bytes: Optional[float] = None,
             bandwidth_bound: bool = False) -> List[Diagnosis]:
    """The causes the counters prove, each once per kernel name. `least_bytes` is what the task must
    move; `bandwidth_bound` says the task is measured against a bandwidth (lessons 01, 02, 04), where
    moving more than that is itself a cause (a matrix multiply reads its inputs many times, and must)."""
    found: List[Diagnosis] = []
    seen = set()

    def add(hint_id: str, kernel: Kernel, line: str) -> None:
        if (hint_id, kernel.name) not in seen:
            seen.add((hint_id, kernel.name))
            found.append(Diagnosis(hint_id, short_name(kernel.name), line))

    for kernel in _timed_kernels(kernels):
        name = short_name(kernel.name)
        use = wide_access_use(kernel)
        for what, (per_request, used) in use.items():
            if used < LEAST_SECTOR_USE_PCT and per_request >= MANY_SECTORS_PER_REQUEST:
                add("uncoalesced-access", kernel,
                    f"{name}'s global {what} touch {per_request:.1f} sectors of 32 bytes per warp request and use "
                    f"{used:.1f}% of their bytes (a warp's 4-byte accesses to consecutive addresses: 4 sectors, 100%)")
        for what, per_instruction in shared_passes(kernel).items():
            if per_instruction >= MOST_WAVEFRONTS:
                add("bank-conflicts", kernel,
                    f"{name}'s shared-memory {what} take {per_instruction:.1f} wavefronts per warp instruction "
                    "(1 without bank conflicts for 4-byte accesses, 4 for 16-byte ones)")
        threads, block = kernel.value(THREADS_PER_INSTRUCTION), kernel.value(BLOCK_SIZE)
        if threads is not None and threads < FEWEST_THREADS:
            small = f" (its blocks have {block:.0f} threads: a warp holds 32)" if block is not None and block < 32 else ""
            add("idle-lanes", kernel,
                f"{name}: {threads:.1f} of a warp's 32 threads executed each instruction, on average{small}")
        grid, sms = kernel.value(GRID_SIZE), kernel.value(SMS)
        if grid is not None and sms and grid < sms:
            add("too-few-blocks", kernel,
                f"{name} ran {grid:.0f} blocks on a GPU of {sms:.0f} SMs: {sms - grid:.0f} SMs had no block")
    kernels = [k for k in kernels if not as_given(k)]
    if bandwidth_bound and least_bytes and kernels:
        moved = [(k.value(DRAM_READ_BYTES), k.value(DRAM_WRITE_BYTES)) for k in kernels]
        if moved and all(r is not None and w is not None for r, w in moved):
            total = sum(r + w for r, w in moved)
            if total >= MOST_DRAM * least_bytes:
                kernel = max(kernels, key=lambda k: (k.value(DRAM_READ_BYTES) or 0) + (k.value(DRAM_WRITE_BYTES) or 0))
                add("excess-dram", kernel,
                    f"the call's kernels read and wrote {total / 1e6:.0f} MB of DRAM, {total / least_bytes:.1f} x "
                    f"the {least_bytes / 1e6:.0f} MB the task must move")
    return found


def hint_lines(diagnoses: Sequence[Diagnosis]) -> List[str]:
    """The verdict's lines for the proven causes: each hint once, with the counters that prove it
    (the claims are grader/hints.json's)."""
    lines = []
    for hint_id in dict.fromkeys(d.hint_id for d in diagnoses):
        evidence = "; ".join(d.line for d in diagnoses if d.hint_id == hint_id)
        if hint_id == "uncoalesced-access":
            lines.append(hint("uncoalesced-access", f"{evidence}. The threads of a warp access addresses far "
                              "apart, so each access is split over many sectors: let consecutive threads "
                              "(threadIdx.x) access consecutive elements."))
        elif hint_id == "bank-conflicts":
            lines.append(hint("bank-conflicts", f"{evidence}. The threads of a warp hit one shared-memory bank at "
                              "different addresses, so each access is split into several passes: make consecutive "
                              "threads access consecutive words (swap the tile's indices, or pad each row by one)."))
        elif hint_id == "idle-lanes":
            lines.append(hint("idle-lanes", f"{evidence}. Most threads of each warp sit idle while a few work (a "
                              "branch only some take, one thread doing a block's work, or blocks smaller than a "
                              "warp): give every thread of a warp the same work."))
        elif hint_id == "too-few-blocks":
            lines.append(hint("too-few-blocks", f"{evidence}. Launch at least one block per SM, better enough to fill "
                              "each (a grid-stride loop covers any n with any grid)."))
        elif hint_id == "excess-dram":
            lines.append(hint("excess-dram", f"{evidence}. DRAM sets the speed of this task: read the input once "
                              "and keep what comes between in registers or shared memory."))
    return lines


def command(ncu: str, log_file: str, kernels: int = 4) -> List[str]:
    """The ncu command prefix that profiles the first `kernels` launches inside the program's
    profiled range (cudaProfilerStart/Stop) with METRICS and writes its CSV and messages to
    `log_file`. Run it with PROFILE_ENV in the environment, or the program opens no range and
    nothing is profiled."""
    return [ncu, "--csv", "--print-units", "base", "--log-file", log_file, "--profile-from-start", "off",
            "--launch-count", str(kernels), "--metrics", ",".join(METRICS)]


def find_ncu(index: dict) -> Tuple[Optional[str], str]:
    """Nsight Compute's command line, and ""; or None and why there is none. It sits beside
    compute-sanitizer in the toolkit the build used (the build index records that one), or on PATH."""
    recorded = str(index.get("compute_sanitizer") or "")
    if recorded:
        beside = os.path.join(os.path.dirname(recorded), "ncu")
        if os.path.isfile(beside) and os.access(beside, os.X_OK):
            return beside, ""
    found = shutil.which("ncu")
    if found:
        return found, ""
    return None, "no Nsight Compute (ncu) beside the toolkit's compute-sanitizer or on PATH"


def short_name(kernel: str) -> str:
    """A kernel's name without its parameter list: 'vector_add(const float *, ...)' -> 'vector_add'."""
    return kernel.split("(", 1)[0].strip() or kernel


REPORT_HEADING = "Counters of the timed call (Nsight Compute), each beside its ideal"


def report(kernels: Sequence[Kernel], least_bytes: Optional[float] = None, bandwidth_bound: bool = False,
           causes: bool = True) -> List[str]:
    """The lines a verdict shows: the causes the counters prove (hints; only with `causes`, for a
    task that fell short), then each kernel the timed call launched (its first launch), with its
    counters beside their ideals; a kernel as the lesson gives it (AS_GIVEN) first, as "before"."""
    diagnoses = diagnose(kernels, least_bytes, bandwidth_bound) if causes else []
    lines = hint_lines(diagnoses)
    if not causes:
        lines.append(f"{REPORT_HEADING}:")
    else:
        lines.append(REPORT_HEADING + (":" if diagnoses else "; none of them proves a cause of its own, so no hint:"))
    seen = set()
    for kernel in sorted(kernels, key=lambda k: not as_given(k)):  # stable: launch order otherwise
        if kernel.name in seen:
            continue
        seen.add(kernel.name)
        shape = f" <<<{kernel.grid}, {kernel.block}>>>" if kernel.grid and kernel.block else ""
        role = (" (before: the kernel as the lesson gives it)" if as_given(kernel)
                else " (yours)" if any(as_given(k) for k in kernels) else "")
        lines.append(f"  {short_name(kernel.name)}{shape}{role}:")
        lines += [f"    - {line}" for line in describe(kernel, least_bytes)] or ["    - (no counters)"]
    return lines


def profile(run_phase: Callable, program: str, spec: str, *, ncu: str, seed: int, timeout_s: float,
            env: Dict[str, str], least_bytes: Optional[float] = None,
            bandwidth_bound: bool = False, causes: bool = True) -> Tuple[List[str], float]:
    """Runs `program spec` (a task's timed test) under ncu and returns what the verdict shows
    (report(), or the one line of failure()) and how long it took."""
    with tempfile.TemporaryDirectory(prefix="workbook-counters-") as tmp:
        log = Path(tmp) / "ncu.csv"
        phase = run_phase(program, spec, seed=seed, timeout_s=timeout_s, env={**env, **PROFILE_ENV},
                          wrapper=command(ncu, str(log)))
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    if phase.timed_out:
        return [f"No counters: profiling did not end within {timeout_s:.0f} s."], phase.elapsed_s
    why = failure(text + "\n" + phase.output_tail, phase.returncode or 0)
    if why:
        return [why], phase.elapsed_s
    try:
        kernels = parse(text)
    except CountersError as e:
        return [f"No counters: {e}."], phase.elapsed_s
    return (report(kernels, least_bytes, bandwidth_bound, causes) if kernels else ["No counters: ncu profiled no kernel of the timed call."],
            phase.elapsed_s)
