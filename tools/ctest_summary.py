#!/usr/bin/env python3
"""The last lines of `cmake --workflow --preset test`: where the time went, and how many
tests were skipped and why.

ctest runs this after the tests (CTEST_CUSTOM_POST_TEST, written by the top CMakeLists.txt)
on the JUnit report the test preset writes. Without a GPU, every test that runs a kernel
reports "skipped"; this says so in one line instead of a list of a hundred names. Before it,
two lines on time: the wall time against the tests' own seconds added up, the slowest tests
(the wall time can be no shorter than the longest), and the seconds of each group of tests
(grader.e2e, grader.driver, common, ...): on a GPU machine, what to shorten first. On a GPU
machine one more: the end-to-end gradings' seconds added up phase by phase (correctness, the
sanitizer check, timed, reference, counters; of each, the seconds inside the test cases) and
their waits for the GPU lock and holds of it, from the "grading time:" line each check_grades.py
prints.

    tools/ctest_summary.py build/test/Testing/ctest-junit.xml
"""
import json
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


def group_of(name: str) -> str:
    """The group a test belongs to: its name's first part (common, lessons), or its first two
    under grader and tools (grader.e2e, grader.driver, tools.bench)."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] in ("grader", "tools") and len(parts) > 2 else parts[0]


def time_lines(suite: ET.Element, slowest: int = 5) -> list:
    """Where the time went: the wall time against the tests' own seconds, the slowest tests, and
    each group's seconds and count, largest first. None when the report gives no times."""
    seconds = {}
    for case in suite.iter("testcase"):
        try:
            seconds[case.get("name", "?")] = float(case.get("time", ""))
        except ValueError:
            return []
    if not seconds:
        return []
    total = sum(seconds.values())
    try:
        wall = float(suite.get("time", ""))
    except ValueError:
        wall = 0.0
    at_once = f" ({total / wall:.1f} at a time on average)" if wall > 0 else ""
    groups = {}
    for name, s in seconds.items():
        count, summed = groups.get(group_of(name), (0, 0.0))
        groups[group_of(name)] = (count + 1, summed + s)
    top = sorted(seconds.items(), key=lambda item: -item[1])[:slowest]
    by_group = sorted(groups.items(), key=lambda item: -item[1][1])
    return [f"ctest: time: {wall:.0f} s of wall time for {total:.0f} s of tests{at_once}",
            "ctest: slowest: " + ", ".join(f"{name} {s:.1f} s" for name, s in top),
            "ctest: by group: " + ", ".join(f"{g} {s:.0f} s ({n})" for g, (n, s) in by_group)]


GRADING_TIME = re.compile(r"(?m)^grading time: (\{.*\})$")  # grader/tests/check_grades.py's time_line


def grading_lines(suite: ET.Element) -> list:
    """The gradings' seconds, added up over the suite: each phase (largest first, with the share
    inside the test cases), and the GPU lock's waits and holds. [] when no test printed any."""
    phases, in_tests, lock, gradings = Counter(), Counter(), Counter(), 0
    for case in suite.iter("testcase"):
        for found in GRADING_TIME.finditer(case.findtext("system-out") or ""):
            try:  # all of a line or none of it
                spent = json.loads(found.group(1))
                read = [{k: float(v) for k, v in spent.get(key, {}).items()} for key in ("phases", "in_tests", "lock")]
            except (ValueError, TypeError, AttributeError):
                continue
            for into, seconds in zip((phases, in_tests, lock), read):
                into.update(seconds)
            gradings += 1
    if not gradings:
        return []
    shown = []
    for phase, seconds in phases.most_common():
        inside = in_tests.get(f"{phase}_in_tests")
        shown.append(f"{phase} {seconds:.0f} s" + (f" ({inside:.0f} s in the tests)" if inside is not None else ""))
    held = ", ".join(f"{what.replace('_', ' ')} {seconds:.0f} s" for what, seconds in sorted(lock.items()))
    return [f"ctest: the {gradings} gradings' seconds: {', '.join(shown) or 'none'}",
            f"ctest: the gradings and the GPU lock: {held or 'no lock taken'}"]


def summarize(junit_text: str) -> str:
    """Lines on time, then one or more on skips; the last says how many tests were skipped and why."""
    suite = ET.fromstring(junit_text)
    timing = time_lines(suite) + grading_lines(suite)
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
        return "\n".join(timing + [f"ctest: none of the {total} tests was skipped: every GPU test ran on this "
                                    "machine's GPU."])
    gpu = {why: n for why, n in reasons.items() if _GPU_WORDS.search(why)}
    other = {why: n for why, n in reasons.items() if why not in gpu}
    lines = timing + [f"ctest: {n} skipped: {why}" for why, n in sorted(other.items())]
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
        print(f"ctest: could not read {report} for times and skipped tests: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
