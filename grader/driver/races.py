"""Results that change from run to run: the fact a grader program reports, and the one check that
may name its cause.

A grader program that saw one call give different results on the same inputs says so in its
verdict, on a line of its own labelled "Seen [results-differ]: " (grader::results_differ in
grader/support/diagnosis.hpp). That proves the call is not deterministic, not that its threads
race: a kernel that reads memory nobody wrote (shared memory a tile load skipped, which holds what
the block before it left there) changes from run to run as well. So for such a failed task the
driver (cli.Grader._results_differ) runs the task's correctness tests once more under
compute-sanitizer racecheck, at the small sizes of the sanitizer mode, and:

- racecheck reported a shared-memory hazard: the verdict carries Hint [race], naming the kernel and
  the line of the first report and quoting it (racecheck watches shared memory only, and reports a
  hazard where two threads of a block access one address with no barrier ordering them);
- racecheck ran the task's tests and reported none: the verdict says so, names no cause, says what
  else changes from run to run, and how to look (./grade --sanitize ...);
- racecheck could not look (no compute-sanitizer, or its run did not finish): the verdict says
  that, and how to look.

Pure functions over a SanitizerRun, unit-tested without a GPU (grader/tests/test_races.py)."""
from __future__ import annotations

import os
from dataclasses import replace
from typing import List, Optional

from .sanitizer import SanitizerReport
from .scoring import FAILED, ComponentResult, SanitizerRun, hint

# The label of the fact, as grader::results_differ writes it at the start of a line.
RESULTS_DIFFER = "Seen [results-differ]: "

# What else makes results change between runs, said when no race is proven.
_OTHER_CAUSES = ("Results that change from run to run come from threads that race, and also from reading memory "
                 "that nobody wrote, whose content changes between runs: shared memory a load skipped (it holds "
                 "what an earlier block left there), or memory past the end of an array.")


def results_differ(correctness: ComponentResult) -> bool:
    """True when a failed verdict reports, on a line of its own, that the same inputs gave different results."""
    return correctness.status == FAILED and any(line.startswith(RESULTS_DIFFER)
                                                for line in correctness.details.splitlines())


def shared_memory_hazards(run: SanitizerRun) -> List[SanitizerReport]:
    """The hazards racecheck reported in `run` (its errors: warnings are left out when it is read),
    each a "Race reported between ... access and ... access" on shared memory."""
    if run.tool != "racecheck":
        return []
    return [r for r in run.phase.sanitizer_reports if r.headline.startswith("Race reported between")]


def _ran_the_tests(run: SanitizerRun, tag: str) -> bool:
    """The racecheck run reached the end of the task's tests: its records hold the task's tests
    (passed or failed: the values are wrong, which is why it runs) and the program finished."""
    phase = run.phase
    return (not phase.timed_out and phase.run_completed
            and any(tag in r.get("tags", []) for r in phase.records))


def follow_up(task, correctness: ComponentResult, run: Optional[SanitizerRun], reproduce: str,
              not_run: str = "") -> ComponentResult:
    """The verdict of a task whose results differed between runs, after racecheck had its look.
    `run` is the racecheck run of the task's tests (None when there was none, `not_run` saying
    why); `reproduce` the command that shows every report (./grade --sanitize ...)."""
    hazards = shared_memory_hazards(run) if run is not None else []
    record = {"racecheck": "not_run"}
    if run is not None:
        record["run"] = run.record("finding" if hazards else "clean")
    if hazards:
        first = next((h for h in hazards if h.kernel), hazards[0])
        record.update(racecheck="hazard", first_report={"kind": first.headline, "kernel": first.kernel,
                                                         "location": first.location,
                                                         "lines": [first.kind] + first.lines})
        where = first.kernel or "a kernel"
        if first.location:
            where += f" ({os.path.basename(first.location)})"
        text = hint("race", f"compute-sanitizer racecheck, run on this task's tests at small sizes, reported a "
                            f"shared-memory hazard in {where}: {first.headline}. Threads of a block access the "
                            "same shared memory with nothing ordering them, so which comes first changes from run "
                            "to run: a barrier is missing between the two accesses it names, __syncthreads() "
                            "across the block (in a tiled loop: after the loads, and after the tiles are used), "
                            "__syncwarp() or shuffles within a warp.")
        added = f"{text}\nThe report, as racecheck printed it:\n{first.quote()}\nEvery report: {reproduce}"
    elif run is not None and _ran_the_tests(run, task.tag):
        record["racecheck"] = "no_hazard"
        added = (f"compute-sanitizer racecheck ran this task's tests at small sizes and reported no shared-memory "
                 f"hazard, so the grader names no cause. {_OTHER_CAUSES} To look: {reproduce} runs the task's "
                 "tests under the sanitizer's tools, with every report.")
    else:
        if run is not None:
            record["racecheck"] = "not_finished"
            phase = run.phase
            why = (f"its run did not finish within {run.limit_s:.0f} s" if phase.timed_out else
                   "its run ended before it finished the task's tests")
        else:
            why = not_run or "it was not run"
        added = (f"The grader could not look for a race with compute-sanitizer racecheck: {why}. {_OTHER_CAUSES} "
                 f"To look: {reproduce}.")
    details = (correctness.details + "\n" if correctness.details else "") + added
    return replace(correctness, details=details,
                   extra_data={**correctness.extra_data, "results_differ": record})
