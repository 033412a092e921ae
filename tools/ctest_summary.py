#!/usr/bin/env python3
"""The last line of `cmake --workflow --preset test`: how many tests were skipped and why.

ctest runs this after the tests (CTEST_CUSTOM_POST_TEST, written by the top CMakeLists.txt)
on the JUnit report the test preset writes. Without a GPU, every test that runs a kernel
reports "skipped"; this says so in one line instead of a list of a hundred names.

    tools/ctest_summary.py build/test/Testing/ctest-junit.xml
"""
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

# Where each kind of test states why it skipped: a lesson example, a Catch2 SKIP(), ./grade or ./sweep.
_REASONS = [
    re.compile(r"needs a GPU: (?P<why>.+)"),
    re.compile(r"SKIPPED:\s*\n\s*explicitly with message:\s*\n\s*(?P<why>.+)"),
    re.compile(r"No GPU to run on: (?P<why>[^\n]+?)\.(?:\)|\s|$)"),  # ./grade, ./sweep, quoted in parentheses
    re.compile(r"(?m)^skipped: (?P<why>[^\n]+)"),  # the project's check scripts (check_class.py: no Slurm)
]
_GPU_WORDS = re.compile(r"GPU|CUDA|NVIDIA|driver|device", re.I)


def skip_reason(output: str) -> str:
    """The reason a skipped test printed, or '' when it printed none that is recognised."""
    for pattern in _REASONS:
        found = pattern.search(output)
        if found:
            return found.group("why").strip().rstrip(".")
    return ""


def summarize(junit_text: str) -> str:
    """One or more lines; the last says how many tests were skipped and why."""
    suite = ET.fromstring(junit_text)
    cases = suite.iter("testcase")
    total, reasons = 0, Counter()
    for case in cases:
        total += 1
        if case.find("skipped") is None:
            continue
        why = skip_reason(case.findtext("system-out") or "")
        reasons[why or f"no reason printed ({case.find('skipped').get('message', 'skip exit code')})"] += 1
    skipped = sum(reasons.values())
    if skipped == 0:
        return f"ctest: none of the {total} tests was skipped: every GPU test ran on this machine's GPU."
    gpu = {why: n for why, n in reasons.items() if _GPU_WORDS.search(why)}
    other = {why: n for why, n in reasons.items() if why not in gpu}
    lines = [f"ctest: {n} skipped: {why}" for why, n in sorted(other.items())]
    if gpu:
        why = "; ".join(f"{w} ({n})" if len(gpu) > 1 else w for w, n in sorted(gpu.items()))
        lines.append(f"ctest: {sum(gpu.values())} of {total} tests skipped because they need an NVIDIA GPU and "
                     f"found none ({why}); they pass or fail only on a machine with a GPU, and the other "
                     f"{total - skipped} ran here.")
    else:
        lines.append(f"ctest: {skipped} of {total} tests skipped (reasons above); the other {total - skipped} ran.")
    return "\n".join(lines)


def main(argv) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    report = Path(argv[1])
    if not report.is_file():  # plain `ctest`, without the preset: no report, nothing to say
        return 0
    try:
        print(summarize(report.read_text(errors="replace")))
    except ET.ParseError as error:
        print(f"ctest: could not read {report} to count skipped tests: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
