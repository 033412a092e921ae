"""Runs one selection of a grader program's tests in its own process, with a time limit.

CUDA errors such as an illegal address poison the whole process, and a kernel that never
ends raises nothing, so a task runs in a fresh process that is killed at its deadline (or, with
test_limit_s, several tasks' tests in one that is killed when one test overruns: cli.py takes
from such a run only the verdicts a task gets alone).
The program reports each test's start and end as JSON lines (grader/support/report_record.hpp);
a start without an end names the test that crashed or hung."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import signal
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union

from .sanitizer import SanitizerReport, parse_reports


@dataclass
class PhaseResult:
    """What one run of a grader program left behind."""
    records: List[dict] = field(default_factory=list)  # the "end" records, in order
    # Beside each end record, the seconds its test took by the program's clock (0.0 when unknown).
    record_seconds: List[float] = field(default_factory=list)
    unfinished_test: Optional[str] = None  # a test that started and never ended
    fatal_signal: Optional[str] = None     # Catch2's report of a signal inside a test
    returncode: Optional[int] = 0
    timed_out: bool = False
    timeout_s: float = 0.0
    # Stopped because one test ran longer than run_phase's test_limit_s (timed_out is set too).
    test_over_limit: bool = False
    unfinished_tags: List[str] = field(default_factory=list)  # the tags of unfinished_test
    output_tail: str = ""
    sanitizer_tool: Optional[str] = None
    sanitizer_errors: int = 0
    sanitizer_findings: List[str] = field(default_factory=list)
    sanitizer_reports: List[SanitizerReport] = field(default_factory=list)  # the first errors, read apart
    elapsed_s: float = 0.0
    # Of elapsed_s, the seconds between the test cases' start and end records (by the program's
    # own clock): the rest is the program's loading, its start before the first test and its exit.
    # The first CUDA call's context creation falls inside the first test.
    in_tests_s: float = 0.0
    pid: Optional[int] = None  # of the grader program (nvidia-smi lists it while it runs)
    # Of elapsed_s, the seconds a parked program (ParkedRun) ran before its gate: its start and
    # first set-up, side by side with other gradings rather than in the hold of the GPU alone;
    # and of in_tests_s, those inside the test it parked in.
    before_gate_s: float = 0.0
    in_tests_before_gate_s: float = 0.0
    # The GPU waits the tests reported (grader::synchronize): how long each finished one took,
    # and the one still open when the program ended, as (what it waited for, seconds since the
    # program started). A test stopped at its deadline shows with them whether one launch never
    # finished or the checks were merely slow.
    wait_durations_s: List[float] = field(default_factory=list)
    wait_tests: List[str] = field(default_factory=list)  # beside each finished wait, its test
    open_wait: Optional[Tuple[str, float]] = None
    open_wait_test: str = ""  # the test whose wait open_wait is
    # Waits that ended by throwing ("wait_raised"), in order, as (test, what, CUDA error pending
    # then or ""): a crash verdict names the call its error surfaced in.
    raised_waits: List[Tuple[str, str, str]] = field(default_factory=list)
    # The authenticated channel (report_record.hpp): whether the run had a key, whether its last
    # record ("run_end") arrived and how many test cases it counted, and the lines that do not
    # count: forged_lines of them in all (the first kept for the verdict), of which out_of_sequence
    # carry the grader's MAC but not the next sequence number (replayed, moved, or after lines that
    # were removed). key_problem: what the program said when it found no whole key in its pipe.
    authenticated: bool = False
    report_found: bool = False
    run_completed: bool = False
    run_test_cases: Optional[int] = None
    forged_lines: int = 0
    out_of_sequence: int = 0
    first_forged: str = ""
    key_problem: str = ""

    @property
    def killed_by(self) -> Optional[str]:
        """The signal's name when the process died of one (not our timeout)."""
        if self.returncode is not None and self.returncode < 0 and not self.timed_out:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None

    def metrics(self) -> Dict[str, float]:
        merged: Dict[str, float] = {}
        for record in self.records:
            merged.update(record.get("metrics", {}))
        return merged


_SIGNED = re.compile(rb'^(.*), "mac": "([0-9a-f]{64})"\}$', re.DOTALL)


def _json(line: bytes) -> Optional[dict]:
    try:
        record = json.loads(line.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def verify_line(line: bytes, key: bytes) -> Optional[dict]:
    """The record `line` holds when it carries a MAC under `key` over its bytes up to the MAC
    (report_record.hpp, sign_record); else None. Its sequence number is the caller's to check.
    The MAC is checked on the bytes as written, before any decoding: a message that is not UTF-8
    (a student's exception text may hold anything) verifies like any other."""
    signed = _SIGNED.match(line)
    if not signed:
        return None
    body = signed.group(1) + b"}"
    expected = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(expected, signed.group(2)):
        return None
    return _json(body)


def _shown(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")[:300]


def _seconds(record: dict) -> Optional[float]:
    """A record's time ("t": seconds since the program started), if it has a usable one."""
    t = record.get("t")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None


def parse_records(text: Union[str, bytes], result: PhaseResult, key: Optional[str] = None) -> None:
    """Fills result.records, unfinished_test and fatal_signal from the report file's lines. With
    a key, only lines that verify, in sequence, count; the others are counted as forged, except
    a last line cut short by a crash (the run never reached its last record): anything after the
    last record counts as forged."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    open_test = None
    started_at: Optional[float] = None
    lines = data.split(b"\n")
    complete = lines[:-1]  # every line the program finished writing ends with a newline
    cut_short = lines[-1]
    result.authenticated = key is not None
    key_bytes = key.encode() if key is not None else b""
    sequence = 0
    for line in complete + ([cut_short] if cut_short and key is None else []):
        if key is not None:
            record = verify_line(line, key_bytes)
            if record is None or record.get("seq") != sequence or result.run_completed:
                result.forged_lines += 1
                result.first_forged = result.first_forged or _shown(line)
                if record is not None:
                    result.out_of_sequence += 1
                elif not result.key_problem:
                    # The program's own records say when it found no whole key (nothing verifies then).
                    result.key_problem = str((_json(line) or {}).get("key_problem", "") or "")
                continue
            sequence += 1
        else:
            record = _json(line)
            if record is None:
                continue  # a line cut short by a crash
        event = record.get("event")
        if event == "run_end":
            result.run_completed = True
            if isinstance(record.get("test_cases"), int):
                result.run_test_cases = record["test_cases"]
        if event == "wait":
            result.open_wait = (record.get("what", ""), float(record.get("t", 0.0)))
            result.open_wait_test = str(record.get("test", ""))
        elif event == "waited" and result.open_wait is not None:
            result.wait_durations_s.append(max(0.0, float(record.get("t", 0.0)) - result.open_wait[1]))
            result.wait_tests.append(str(record.get("test", "")))
            result.open_wait = None
        elif event == "wait_raised":
            result.raised_waits.append((str(record.get("test", "")), str(record.get("what", "")),
                                        " ".join(str(m) for m in record.get("messages", []))))
            result.open_wait = None
        elif event == "start":
            open_test = record.get("test")
            result.unfinished_tags = [str(tag) for tag in record.get("tags", [])]
            started_at = _seconds(record)
        elif event == "end":
            result.records.append(record)
            ended_at = _seconds(record)
            took = 0.0
            if started_at is not None and ended_at is not None and ended_at >= started_at:
                took = ended_at - started_at
                result.in_tests_s += took
            result.record_seconds.append(took)
            open_test = started_at = None
        elif event == "fatal":
            result.fatal_signal = "; ".join(record.get("messages", [])) or "a fatal signal"
    if key is not None and cut_short and result.run_completed:
        # The program finished its records, so no crash cut this line short: someone else wrote it.
        result.forged_lines += 1
        result.first_forged = result.first_forged or _shown(cut_short)
    result.unfinished_test = open_test
    if open_test is None:
        result.unfinished_tags = []


def ran_cleanly(phase: PhaseResult) -> bool:
    """Whether a run ended as a grader program ends normally: every selected test run to its end
    record and the last record written, nothing killed or stopped, every line the program's own."""
    return (phase.run_completed and not phase.timed_out and phase.returncode is not None and phase.returncode >= 0
            and not phase.fatal_signal and not phase.unfinished_test and not phase.forged_lines
            and not phase.key_problem and not phase.sanitizer_errors)


def task_phase(whole: PhaseResult, tag: str, sharing: int = 1) -> PhaseResult:
    """The part of a run that ran several tasks' tests (ran_cleanly) that is the task `tag`'s: its
    end records, the seconds of its tests, and of the seconds outside any test (the program's
    start, its CUDA context, its exit) a `sharing`th: by default all, since run alone the task
    would pay them all (a time limit follows from it); the number of tasks, for an account of
    where the time went."""
    part = PhaseResult(timeout_s=whole.timeout_s, returncode=whole.returncode, output_tail=whole.output_tail,
                       pid=whole.pid, authenticated=whole.authenticated, report_found=whole.report_found,
                       run_completed=whole.run_completed, sanitizer_tool=whole.sanitizer_tool)
    seconds_of = whole.record_seconds or [0.0] * len(whole.records)
    for record, seconds in zip(whole.records, seconds_of):
        if tag in record.get("tags", []):
            part.records.append(record)
            part.record_seconds.append(seconds)
    part.run_test_cases = len(part.records)
    part.in_tests_s = sum(part.record_seconds)
    part.elapsed_s = part.in_tests_s + max(0.0, whole.elapsed_s - whole.in_tests_s) / max(1, sharing)
    if sharing == 1 and whole.records and tag not in whole.records[0].get("tags", []):
        # The CUDA context is created inside the run's first test, another task's: alone, this
        # task's first test would pay it. That test's seconds stand in for it (more, not less).
        part.elapsed_s += seconds_of[0]
    part.raised_waits = [w for w in whole.raised_waits if any(r.get("test") == w[0] for r in part.records)]
    # Catch2's exit status counts the whole run's failures: a part none of whose tests failed
    # ended as its run alone would have, with 0.
    if (whole.run_completed and whole.returncode is not None and whole.returncode >= 0
            and not any(r.get("outcome") == "failed" for r in part.records)):
        part.returncode = 0
    return part


def hung_task_phase(whole: PhaseResult, tag: str) -> PhaseResult:
    """The part of a run stopped because a test of the task `tag` ran past its limit (run_phase's
    test_limit_s) that is that task's, as its run alone would end: stopped at the limit in that
    test, with the GPU waits of its own tests and the one still open."""
    part = task_phase(whole, tag)
    part.timed_out = part.test_over_limit = True
    part.unfinished_test, part.unfinished_tags = whole.unfinished_test, list(whole.unfinished_tags)
    ours = {r.get("test") for r in part.records} | {whole.unfinished_test}
    part.wait_durations_s = [d for d, test in zip(whole.wait_durations_s, whole.wait_tests) if test in ours]
    part.wait_tests = [test for test in whole.wait_tests if test in ours]
    # The wait still open, only where it is the hung test's own (a wait another task's test
    # opened, then left open by a call that threw, is not).
    if whole.open_wait_test == whole.unfinished_test:
        part.open_wait, part.open_wait_test = whole.open_wait, whole.open_wait_test
    part.run_completed = False
    part.returncode = whole.returncode
    # The open wait's seconds are counted on the program's clock, from its start: so is elapsed_s.
    part.elapsed_s = whole.elapsed_s
    return part


_RACECHECK_ERRORS = re.compile(r"\((\d+) errors?")


def parse_sanitizer_output(text: str, result: PhaseResult) -> None:
    """Collects compute-sanitizer's findings (lines starting with '========='): the error count,
    the lines that say what was found, and the first reports read apart (sanitizer.parse_reports)."""
    findings = []
    for line in text.splitlines():
        if not line.startswith("=========") or line.startswith("=========="):  # not Catch2's "=====...==="
            continue
        body = line[9:].strip()
        if body.startswith("ERROR SUMMARY:"):
            try:
                result.sanitizer_errors = max(result.sanitizer_errors, int(body.split()[2]))
            except (IndexError, ValueError):
                pass
        elif body.startswith("RACECHECK SUMMARY:"):  # "... 3 hazards displayed (2 errors, 1 warning)"
            errors = _RACECHECK_ERRORS.search(body)
            if errors:
                result.sanitizer_errors = max(result.sanitizer_errors, int(errors.group(1)))
        elif body and not body.startswith(("COMPUTE-SANITIZER", "Target application", "Host Frame",
                                           "Saved host backtrace")):
            findings.append(body)
    result.sanitizer_findings = findings
    result.sanitizer_reports = parse_reports(text)


# The process groups of the programs run_phase is running now, from any thread. Ctrl-C and
# SIGTERM reach the main thread only: a run_phase waiting in another thread (the sanitizer check's
# tools side by side) never sees them, so whoever started it kills them (kill_running).
_running: set = set()
_running_lock = threading.Lock()
T = TypeVar("T")


def kill_running() -> None:
    """Kills every program run_phase is running now, in any thread (their process groups): their
    run_phase calls then return at once."""
    with _running_lock:
        groups = list(_running)
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def side_by_side(calls: Sequence[Callable[[], T]], workers: int) -> List[T]:
    """Each of `calls` (each one runs programs through run_phase) in a thread of its own, at most
    `workers` at once; their results in order. Ctrl-C or SIGTERM (exit_on_sigterm) reaches the
    calling thread only: it then kills the programs the threads wait for (kill_running), so none
    runs on, holding the GPU, after the grading stopped; and raises."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(call) for call in calls]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            kill_running()
            raise


# What the driver tells a grader program through its environment, each only where the caller
# passes it: profiling (counters.profile), the reference's yardsticks (Grader._timed), the sanitizer
# mode and the copy bandwidth (Grader). One left in the grading shell would otherwise reach every
# program: a normal ./grade run in the sanitizer's small sizes, or a stale figure standing in for the
# one the reference's run is there to time.
DRIVER_SETTINGS = ("WORKBOOK_PROFILE", "WORKBOOK_YARDSTICKS", "WORKBOOK_SANITIZE", "WORKBOOK_COPY_BANDWIDTH_GBPS",
                   "WORKBOOK_TIMING_GATE", "CUDA_DEVICE_MAX_CONNECTIONS")

# What the processes that time nothing get on top of the driver's settings: the correctness tests
# (but a task's whose tests compare timings, the manifest's correctness_timed) and the check under
# compute-sanitizer. One hardware work queue a context instead of CUDA's 8: creating a context then
# cost 0.16 s instead of 0.22 s alone on an H100, and 8 at once took 0.68 s instead of 1.53 s
# (December 7, 2026), one after another on the GPU, where a class's grading starts about 21 such
# processes. Streams stay streams (their order, events and waits are CUDA's as ever); only their
# work may overlap less: these tests measure no durations, and a lesson whose tests look at how
# its streams ran together (the manifest's streams_side_by_side: lesson 05) keeps CUDA's queues, as
# the timed runs do. From the shell, the setting is never inherited (DRIVER_SETTINGS), so every
# grader program's queues are the driver's choice and a verdict is the same on any machine.
UNTIMED_SETTINGS = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}


def untimed_settings(lesson) -> Dict[str, str]:
    """What a process of `lesson` (a manifest.Lesson) that times nothing gets: UNTIMED_SETTINGS,
    but where the lesson's tests look at how work on its streams ran together (streams_side_by_side)."""
    return {} if lesson.streams_side_by_side else dict(UNTIMED_SETTINGS)


def program_environment(env: Dict[str, str]) -> Dict[str, str]:
    """A grader program's environment: this process's, with `env` on top. The settings the driver
    gives a grader program come from the caller only, never from the user's shell
    (DRIVER_SETTINGS)."""
    inherited = {k: v for k, v in os.environ.items() if k not in DRIVER_SETTINGS}
    return dict(inherited, **env)


class _TestWatch:
    """Follows a running program's report file: how long its open test has been running, as the
    driver saw it start, or, with none open, how long since the last one ended (or the program
    started): a hang before the first test, between two or at the exit counts too (run_phase's
    test_limit_s). The lines are not verified here: a line that is not the program's can at
    worst keep a test from looking open, and the run's own time limit still holds."""
    POLL_S = 0.2

    def __init__(self, report: str, started: float):
        self.report, self.read = report, 0
        self.since = started  # when the open test's start line, or the last end line, was first seen

    def stalled_for(self, now: float) -> float:
        try:
            with open(self.report, "rb") as f:
                f.seek(self.read)
                data = f.read()
        except OSError:
            return 0.0
        complete = data[:data.rfind(b"\n") + 1]
        self.read += len(complete)
        for line in complete.splitlines():
            if (_json(line) or {}).get("event") in ("start", "end"):
                self.since = now
        return now - self.since


def run_phase(program: str, test_spec: str, *, seed: int, timeout_s: float, env: Dict[str, str],
              sanitizer: Optional[Sequence[str]] = None, sanitizer_tool: Optional[str] = None,
              wrapper: Optional[Sequence[str]] = None, test_limit_s: Optional[float] = None) -> PhaseResult:
    """Runs `program test_spec` (a Catch2 test spec such as "[task_1]~[perf]") and collects
    its records. `sanitizer` is the compute-sanitizer command prefix, if any; `wrapper` another
    tool's (Nsight Compute's, counters.py), whose output is not read as the sanitizer's.
    `test_limit_s`: the program is also stopped when one test runs longer than this (several
    tasks' tests in one run, timeout_s for all of them: one hung test need not wait out the rest),
    or when no test starts for that long after the program started or after the last test ended."""
    with _Launch(program, test_spec, seed=seed, env=env, prefix=sanitizer or wrapper) as run:
        return run.collect(timeout_s, test_limit_s, sanitizer=bool(sanitizer), sanitizer_tool=sanitizer_tool)


class _Launch:
    """One grader program started (run_phase, ParkedRun): its report file and key, its output
    (a pipe), its process in a session of its own (so a timeout kills the sanitizer and the
    program it started), counted among the running ones (kill_running) until it ends. A context
    manager: leaving it kills the program if it still runs, and removes its files."""

    def __init__(self, program: str, test_spec: str, *, seed: int, env: Dict[str, str],
                 prefix: Optional[Sequence[str]] = None, pass_fds: Sequence[int] = ()):
        self._tmp = tempfile.TemporaryDirectory(prefix="workbook-grade-")
        self.report = os.path.join(self._tmp.name, "report.jsonl")
        self.early_output = b""  # what a parked program wrote before it parked (ParkedRun)
        command = list(prefix or []) + [program, test_spec, "--rng-seed", str(seed), "--reporter", "compact"]
        # This run's key goes through a pipe the program reads at start-up, not the environment:
        # 32 random bytes as 64 hex digits (report_record.hpp, kReportKeyChars).
        self.key = secrets.token_hex(32)
        key_read, key_write = os.pipe()
        os.write(key_write, self.key.encode())
        os.close(key_write)
        child_env = program_environment(dict(env, WORKBOOK_REPORT=self.report, WORKBOOK_REPORT_KEY_FD=str(key_read)))
        self.start = time.monotonic()
        try:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=child_env,
                                            start_new_session=True, pass_fds=(key_read,) + tuple(pass_fds))
        except BaseException:
            self._tmp.cleanup()
            raise
        finally:
            os.close(key_read)
        with _running_lock:
            _running.add(self.process.pid)

    def __enter__(self) -> "_Launch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.process.returncode is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.communicate()
        if self.process.stdout is not None and not self.process.stdout.closed:
            self.process.stdout.close()  # a program that ended by itself, whose output nobody read
        with _running_lock:
            _running.discard(self.process.pid)
        self._tmp.cleanup()

    def collect(self, timeout_s: float, test_limit_s: Optional[float] = None, *, sanitizer: bool = False,
                sanitizer_tool: Optional[str] = None, since: Optional[float] = None, used_s: float = 0.0,
                left_out_s: float = 0.0) -> PhaseResult:
        """Waits for the program (timeout_s, and test_limit_s as run_phase says) from `since` (its
        start by default), less `used_s` it already ran before, and reads what it left.
        `left_out_s`: seconds not counted in elapsed_s (a parked program's wait)."""
        result = PhaseResult(timeout_s=timeout_s, sanitizer_tool=sanitizer_tool)
        since = self.start if since is None else since
        deadline = since + max(0.0, timeout_s - used_s)
        try:
            output = _wait(self.process, deadline, _TestWatch(self.report, since) if test_limit_s else None,
                           test_limit_s or 0.0)
            if output is None:  # past its time: the run's, or its open test's
                result.timed_out = True
                result.test_over_limit = time.monotonic() < deadline
                if result.test_over_limit:
                    result.timeout_s = test_limit_s or timeout_s
                os.killpg(self.process.pid, signal.SIGKILL)
                output, _ = self.process.communicate()
        except BaseException:
            # Ctrl-C, or SIGTERM from ./grade-class (exit_on_sigterm): the program runs in a session
            # of its own, so nothing else would stop it, and a hung kernel would keep the GPU.
            self.close()
            raise
        result.elapsed_s = max(0.0, time.monotonic() - self.start - left_out_s)
        result.pid = self.process.pid
        result.returncode = self.process.returncode
        text = (self.early_output + (output or b"")).decode("utf-8", errors="replace")
        result.output_tail = "\n".join(text.splitlines()[-25:])
        if sanitizer:
            parse_sanitizer_output(text, result)
        if os.path.exists(self.report):
            result.report_found = True
            with open(self.report, "rb") as f:  # the MACs are over the bytes as written
                parse_records(f.read(), result, self.key)
        return result


GATE_ENV = "WORKBOOK_TIMING_GATE"  # "<gate fd>,<parked fd>", as grader_main.cpp reads it


class ParkedRun:
    """A timed run started before its hold of the GPU alone (./grade --park-timed): the program
    starts, creates its CUDA context and does its first test's set-up while other gradings share
    the GPU, then parks before its first timing (grader_main.cpp) until go() lets it time, inside
    the hold; what it then reports is collected as run_phase would. Its PhaseResult's elapsed_s
    leaves out the wait, and `before_gate_s` says how long it ran before parking.

    Until it has parked (wait_parked), the caller holds the GPU shared, as for a correctness
    phase: its set-up uses the GPU. A program that ended, or did not park in time, is of no use
    (close() it, and run the tests again in the hold): its tests must not count."""

    def __init__(self, program: str, test_spec: str, *, seed: int, env: Dict[str, str]):
        self.program, self.test_spec, self.seed, self.env = program, test_spec, seed, dict(env)
        gate_read, self._gate = os.pipe()
        self._parked_read, parked_write = os.pipe()
        try:
            self._launch = _Launch(program, test_spec, seed=seed, prefix=None, pass_fds=(gate_read, parked_write),
                                   env=dict(env, **{GATE_ENV: f"{gate_read},{parked_write}"}))
        except BaseException:
            for fd in (self._gate, self._parked_read):
                os.close(fd)
            raise
        finally:
            os.close(gate_read)
            os.close(parked_write)
        self.pid = self._launch.process.pid
        self.parked_at: Optional[float] = None  # when the driver read that it parked
        self.before_gate_s = 0.0  # the seconds it ran before its gate, by its own clock
        self.in_test_before_gate_s = 0.0  # of those, inside the test it parked in
        self.given_up = False  # it ended, said something else, or did not park in time
        self._said = b""

    @property
    def waiting(self) -> bool:
        return self.parked_at is None and not self.given_up

    def _heard(self, fd: int) -> int:
        """Reads what is ready on one of its pipes (wait_all_parked); how many bytes."""
        chunk = os.read(fd, 1 << 16)
        if fd != self._parked_read:  # its output, read as it comes: a full pipe never keeps it from parking
            self._launch.early_output += chunk
            return len(chunk)
        self._said += chunk
        line, newline, _ = self._said.partition(b"\n")
        if not chunk or (newline and not line.startswith(b"parked ")) or len(self._said) > 64:
            self.given_up = True  # ended, or closed the pipe, without parking; or not the grader's word
            return len(chunk)
        if not newline:
            return len(chunk)
        try:
            self.before_gate_s = float(line[len(b"parked "):])
        except ValueError:
            self.before_gate_s = -1.0
        if not 0.0 <= self.before_gate_s < 1e9:  # not a number of seconds: not the grader's word
            self.before_gate_s = 0.0
            self.given_up = True
            return len(chunk)
        self.parked_at = time.monotonic()
        # The test it parked in started at its last "start" record, on the same clock.
        started = None
        try:
            with open(self._launch.report, "rb") as f:
                for raw in f.read().split(b"\n"):
                    record = _json(raw)
                    if record and record.get("event") == "start" and _seconds(record) is not None:
                        started = _seconds(record)
        except OSError:
            pass
        if started is not None:
            self.in_test_before_gate_s = max(0.0, self.before_gate_s - started)
        return len(chunk)

    def wait_parked(self, limit_s: float) -> bool:
        """Whether the program parked within `limit_s` of its start; False when it ended first
        (its tests failed before any timing, it crashed, or it never times) or is still busy."""
        wait_all_parked([(self, limit_s)])
        return self.parked_at is not None

    def still_parked(self) -> bool:
        return self.parked_at is not None and self._launch.process.poll() is None

    def go(self, timeout_s: float, test_limit_s: Optional[float] = None) -> PhaseResult:
        """Lets a parked program time (inside the hold) and collects its run: its time limits
        count from now."""
        went = time.monotonic()
        try:
            os.write(self._gate, b"g")
        except OSError:  # it ended meanwhile: collected as it ended
            pass
        os.close(self._gate)
        self._gate = -1
        try:
            # Its time limit counts what it ran before the gate, as it would alone.
            result = self._launch.collect(timeout_s, test_limit_s, since=went, used_s=self.before_gate_s,
                                          left_out_s=went - (self.parked_at or went))
        finally:
            self.close()
        result.before_gate_s = min(self.before_gate_s, result.elapsed_s)
        result.in_tests_before_gate_s = min(self.in_test_before_gate_s, result.in_tests_s)
        return result

    def close(self) -> None:
        """Stops the program if it still runs (a parked program whose gate closes exits at once)."""
        for fd in (self._gate, self._parked_read):
            if fd >= 0:
                os.close(fd)
        self._gate = self._parked_read = -1
        self._launch.close()


def wait_all_parked(runs: Sequence[Tuple["ParkedRun", float]]) -> None:
    """Waits for several ParkedRuns at once, each until it parks, ends or passes its limit (seconds
    from its own start): one wait over all their pipes, so that none is kept waiting, its output
    unread, and none is read late (ParkedRun.parked_at)."""
    import selectors
    with selectors.DefaultSelector() as selector:
        def drop(run: "ParkedRun", fd: Optional[int] = None) -> None:
            for each in ([fd] if fd is not None else [run._parked_read, run._launch.process.stdout.fileno()]):
                try:
                    selector.unregister(each)
                except (KeyError, ValueError):
                    pass

        def hear(run: "ParkedRun", fd: int) -> None:
            try:
                if not run._heard(fd) and fd != run._parked_read:
                    drop(run, fd)  # its output closed: nothing more to read there
            except OSError:
                run.given_up = True
            if not run.waiting:
                drop(run)

        for run, _ in runs:
            for fd in (run._parked_read, run._launch.process.stdout.fileno()):
                selector.register(fd, selectors.EVENT_READ, run)
        limits = {id(run): run._launch.start + limit for run, limit in runs}
        while True:
            now = time.monotonic()
            for run, _ in runs:
                if run.waiting and (now >= limits[id(run)] or run._launch.process.poll() is not None):
                    # Past its limit, or ended: what it said before is read first.
                    for key, _ in selector.select(0):
                        if key.data is run and run.waiting:
                            hear(run, key.fd)
                    if run.waiting:
                        run.given_up = True
                        drop(run)
            waiting = [run for run, _ in runs if run.waiting]
            if not waiting:
                return
            step = min(min(limits[id(run)] for run in waiting) - now, 0.5)
            for key, _ in selector.select(max(step, 0.0)):
                if key.data.waiting:
                    hear(key.data, key.fd)


def _wait(process: subprocess.Popen, deadline: float, watch: Optional[_TestWatch],
          test_limit_s: float) -> Optional[bytes]:
    """The program's output once it ends; None when it is still running at `deadline`, or (with
    a watch) once one of its tests has run longer than test_limit_s. communicate() called again
    after its timeout loses no output."""
    while True:
        now = time.monotonic()
        step = deadline - now if watch is None else min(deadline - now, _TestWatch.POLL_S)
        try:
            output, _ = process.communicate(timeout=max(step, 0.0))
            return output
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if now >= deadline or (watch is not None and watch.stalled_for(now) > test_limit_s):
                return None


def exit_on_sigterm() -> None:
    """Makes SIGTERM end the process through SystemExit, so run_phase stops the program it runs
    (./grade-class stops a grading this way)."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    if threading.current_thread() is threading.main_thread():  # only there can a handler be set
        signal.signal(signal.SIGTERM, handler)
