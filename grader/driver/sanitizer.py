"""compute-sanitizer for the driver: where it is, the command line for each tool, and its reports
read into what a verdict quotes (the kind of error, the kernel, the source line).

Two uses share the command line, so that one reproduces the other:
- ./grade --sanitize runs every correctness test under the tools the manifest names per task;
- the check of a pass (cli.py) runs the correctness tests of the tasks that passed once more, at
  the small sizes of the sanitizer mode, and fails a task on a finding.

What is read here is what the sanitizer printed; nothing here guesses a cause."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

# The exit status compute-sanitizer gives a run with findings (--error-exitcode).
ERROR_EXIT_CODE = 86
# What every kernel the grader launches on its own buffers has in its name (its poison fills, its
# checks of a result on the device, its inputs), and the tools that leave such kernels unchecked
# (--kernel-name-exclude), which then run at full speed. Instrumented, they were most of a check's
# kernels: each test poisons and checks around every launch of the student's. initcheck checks them
# still: a buffer the grader wrote without its eyes on would look unwritten to it.
GRADER_KERNEL_MARK = "grader_own_"
GRADER_KERNELS_UNCHECKED_BY = ("memcheck", "racecheck", "synccheck")
# The option that leaves kernels unchecked by name: --kernel-name-exclude since compute-sanitizer
# 2023.3 (CUDA 12.3), --kernel-regex-exclude from 2021.2 to 2023.2 (CUDA 12.0-12.2 among them).
KERNEL_EXCLUDE_OPTIONS = ("--kernel-name-exclude", "--kernel-regex-exclude")


@functools.lru_cache(maxsize=None)
def kernel_exclude_option(executable: str) -> Optional[str]:
    """The option of KERNEL_EXCLUDE_OPTIONS that this compute-sanitizer's --help lists (once per
    executable and process: the Grader asks as it starts, outside any hold of the GPU); None when
    it lists neither or cannot be asked in time: then every kernel is checked, which is slower and
    finds as much."""
    try:
        done = subprocess.run([executable, "--help"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    listed = done.stdout.decode("utf-8", errors="replace")
    return next((option for option in KERNEL_EXCLUDE_OPTIONS if re.search(re.escape(option) + r"\b", listed)), None)


def find_sanitizer(index: dict) -> Tuple[Optional[str], str]:
    """The compute-sanitizer to run, and "" ; or None and why there is none. The build index
    records the one CMake found beside nvcc (cmake/Workbook.cmake, workbook_write_build_index);
    a build made on another machine may record none, so the PATH is asked next."""
    recorded = str(index.get("compute_sanitizer") or "")
    if recorded and os.path.isfile(recorded) and os.access(recorded, os.X_OK):
        return recorded, ""
    found = shutil.which("compute-sanitizer")
    if found:
        return found, ""
    where = (f"the build recorded {recorded}, which is not there" if recorded
             else "the build found none beside nvcc")
    return None, f"{where}, and there is none on PATH"


def command(executable: str, tool: str, *, check: bool = False, grader_kernels: bool = False) -> List[str]:
    """The compute-sanitizer command prefix for one tool.

    The grader's own kernels (GRADER_KERNEL_MARK in their names) are left unchecked by the tools of
    GRADER_KERNELS_UNCHECKED_BY, with the option this compute-sanitizer has for it
    (kernel_exclude_option); unless `grader_kernels`: the student's code names that mark (a kernel
    so named would go unchecked), and every kernel is checked.

    memcheck also tracks stream-ordered allocations (--track-stream-ordered-races all): a kernel
    that reads a cudaMallocAsync buffer after its cudaFreeAsync in stream order, or before its
    allocation, is reported, though the memory is still mapped and the values come out right.
    It also pads every allocation (--padding 512): cudaMalloc places allocations back to back in
    512-byte steps, so without padding a read just past an array whose size is a multiple of 512
    bytes lands in the next allocation and is not reported (H100, November 2026: a read past 1024
    floats went unseen, past 1021 it was reported; lesson 06's halo reads past the grid).

    The check of a pass (`check`) leaves CUDA API errors out (--report-api-errors no): the grader
    provokes some on purpose (a launch configuration it expects to be rejected), and they are
    judged by the tests themselves; it reports only what the tools find in kernels. Leaks are not
    checked (--leak-check stays off): memory left allocated is a contract of its own, which the
    tracer checks where a task promises to free what it allocates."""
    prefix = [executable, "--tool", tool, "--error-exitcode", str(ERROR_EXIT_CODE),
              "--print-limit", "10" if check else "20", "--show-backtrace", "device"]
    if tool == "memcheck":
        prefix += ["--track-stream-ordered-races", "all", "--padding", "512"]
    if check:
        prefix += ["--report-api-errors", "no"]
    if tool in GRADER_KERNELS_UNCHECKED_BY and not grader_kernels:
        exclude = kernel_exclude_option(executable)
        if exclude:
            prefix += [exclude, f"kns={GRADER_KERNEL_MARK}"]
    return prefix


@dataclass
class SanitizerReport:
    """One error as compute-sanitizer printed it: its first line and the lines under it."""
    kind: str                                        # "Invalid __global__ read of size 4 bytes"
    lines: List[str] = field(default_factory=list)   # "at ...", "by thread ...", "Access to ..."
    kernel: str = ""     # the function it names, without its parameters ("" when it names none)
    location: str = ""   # path:line, when the code was compiled with -lineinfo

    @property
    def headline(self) -> str:
        """The kind, without racecheck's "Error: " and the addresses of its race line."""
        kind = re.sub(r"^error:\s*", "", self.kind, flags=re.IGNORECASE)
        race = re.match(r"(Race reported between \w+ access) at .*", kind)
        if race:
            other = next((re.match(r"and (\w+ access) at", line) for line in self.lines
                          if line.startswith("and ")), None)
            kind = race.group(1) + (f" and {other.group(1)}" if other else "")
        return kind

    def short(self) -> str:
        """One line: "Invalid __global__ read of size 4 bytes in smooth_kernel (kernels.cu:27)"."""
        text = self.headline
        if self.kernel:
            text += f" in {self.kernel}"
        if self.location:
            text += f" ({os.path.basename(self.location)})"
        return text

    def quote(self, indent: str = "  ") -> str:
        """The report as printed, its first line and then the lines under it, indented."""
        return "\n".join([indent + self.kind] + [indent + "  " + line for line in self.lines])


# Top-level lines that are not errors in the student's code: the banner, the summaries, CUDA API
# errors (a kernel's memory error makes the next API call fail; the error is the kernel's),
# warnings, and the tool's own complaints.
_NOT_REPORTS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application",
                "Program hit", "Warning", "WARNING", "Saved host backtrace", "Host Frame", "Internal Sanitizer Error")
_TOOL_ERROR = re.compile(r"^error:(?!\s*(?:race reported|potential))", re.IGNORECASE)
# "at" and what follows it, in the forms compute-sanitizer has printed over the years:
_FRAMES = [
    re.compile(r"^0x[0-9a-fA-F]+ in (?P<path>[^\s:]+):(?P<line>\d+):(?P<fn>.+)$"),   # at 0x70 in f.cu:12:kernel(int*)
    re.compile(r"^0x[0-9a-fA-F]+ in (?P<path>[^\s:]+):(?P<line>\d+)(?:\s|$)"),        # at 0x70 in f.cu:51 [n hazards]
    re.compile(r"^0x[0-9a-fA-F]+ in (?P<fn>.+)$"),                                     # at 0x70 in kernel(int*)
    re.compile(r"^(?P<fn>.+?)\+0x[0-9a-fA-F]+(?: in (?P<path>\S+):(?P<line>\d+))?"),   # at k(int *)+0x70 in f.cu:12
]
_AT = re.compile(r"(?:^|\s)at (?P<rest>\S.*)$")
_IN = re.compile(r"^in (?P<path>\S+):(?P<line>\d+)")  # a location printed on a line of its own


def function_name(printed: str) -> str:
    """A function as the sanitizer prints it, without its parameter list and anonymous namespaces:
    "<unnamed>::smooth_kernel(const float *, float *, unsigned long)" -> "smooth_kernel"."""
    name = printed.strip()
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            if name[i] == ")":
                depth += 1
            elif name[i] == "(":
                depth -= 1
                if depth == 0:
                    name = name[:i]
                    break
    for anonymous in ("<unnamed>::", "(anonymous namespace)::"):
        name = name.replace(anonymous, "")
    return name.strip()


def _where(text: str) -> Tuple[str, str]:
    """(kernel, path:line) from a line that says "at ...", each "" when it does not say."""
    at = _AT.search(text)
    if not at:
        return "", ""
    for form in _FRAMES:
        m = form.match(at.group("rest"))
        if m:
            groups = m.groupdict()
            location = f"{groups['path']}:{groups['line']}" if groups.get("path") else ""
            return function_name(groups.get("fn") or ""), location
    return "", ""


def parse_reports(text: str, limit: int = 3) -> List[SanitizerReport]:
    """The first `limit` error reports in compute-sanitizer's output. A report is a line of its own
    after "=========" with the indented lines under it; the program's own output may come in
    between and is skipped."""
    reports: List[SanitizerReport] = []
    current: Optional[SanitizerReport] = None
    for line in text.splitlines():
        if not line.startswith("=========") or line.startswith("=========="):  # not Catch2's "=====...==="
            continue
        body = line[len("========="):]
        stripped = body.strip()
        if not stripped:  # "========= " closes a report
            current = None
            continue
        if body.startswith("  "):
            if current is not None and not stripped.startswith(_NOT_REPORTS) and len(current.lines) < 12:
                current.lines.append(stripped)
            continue
        current = None
        if stripped.startswith(_NOT_REPORTS) or _TOOL_ERROR.match(stripped) or len(reports) >= limit:
            continue
        current = SanitizerReport(kind=stripped)
        reports.append(current)
    # A line alone that names no code is the tool talking about itself, not an error it found.
    reports = [r for r in reports if r.lines or _where(r.kind)[0]]
    for report in reports:
        report.kernel, report.location = _where(report.kind)
        for i, line in enumerate(report.lines):
            if report.kernel and report.location:
                break
            kernel, location = _where(line)
            if not location and kernel and i + 1 < len(report.lines):
                following = _IN.match(report.lines[i + 1])
                if following:
                    location = f"{following.group('path')}:{following.group('line')}"
            report.kernel, report.location = report.kernel or kernel, report.location or location
    return reports
