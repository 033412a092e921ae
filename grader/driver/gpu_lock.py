"""One GPU, several gradings: correctness tests side by side, timed phases alone.

Two gradings at once on one GPU give the same verdicts, but a kernel timed while another
process runs on the GPU looks slower than it is (an H200 timed cuBLAS at half speed so). So
each GPU has a reader-writer lock: a file named after the GPU's UUID in a directory every
user can write (WORKBOOK_LOCK_DIR, else the system's temporary directory).

- A correctness phase holds it shared: any number run side by side.
- A timed phase holds it exclusive: a task's performance test with the reference's right
  after it, and the copy-bandwidth measurement.

A process holds one mode at a time and releases it before it takes the other (GpuLock
refuses anything else), so no two processes can wait for each other.

A timed phase cannot start before every correctness phase running has ended: the GPU drains,
and every grading that wants a new correctness phase meanwhile waits. In a suite or a class,
where timed phases come every few seconds, those drains were the most of the time nobody
used the GPU fully (on an H100, up to 255 s of a 500 s suite). So timed phases take turns in
batches: a timed phase first waits up to PATIENCE_S (WORKBOOK_LOCK_PATIENCE_S) while new
correctness phases still start, taking the lock at once if it falls free; then it takes its
turn (a shared flock on a third file, the turn, held until it is done), and no new correctness
phase starts while any timed phase holds a turn. A timed phase that waits while another has
its turn takes one too, so all the timed phases waiting then run one after the other after a
single drain. So that turns end, a correctness phase that has waited PATIENCE_S (for the gate,
which timed phases waiting for the lock hold, or for the turns) marks itself: a shared flock on
a fourth file, <lock>.waiting, until it has the lock. While one is marked, no timed phase joins
a turn or takes the lock, and the marked phases start once the turns under way end. A second file, the gate, orders the processes that wait for the lock itself: a
process holds it only while it waits there. (The orders above hold but for a window of a system
call or two: a turn taken between a correctness phase's look at it and its lock waits for that
phase.)

Other programs take part the same way; to time something alone on the GPU (a sweep):

    from driver.gpu_lock import GpuLock
    with GpuLock.for_device(device, tree="exercises").exclusive():   # device: workbook_device_info's JSON
        ...

With WORKBOOK_LOCK_LOG set, every acquire and release is appended to that file as
"acquire EX <pid> <unix time> <tree> <lock file>" ("release SH ..."): the tests check that timed
phases never overlapped, and tools/lock_log_summary.py says where a suite's GPU time went."""
from __future__ import annotations

import fcntl
import getpass
import os
import re
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Dict, Iterator, Optional, Set

from . import file_lock

SHARED, EXCLUSIVE = "SH", "EX"
_FLOCK = {SHARED: fcntl.LOCK_SH, EXCLUSIVE: fcntl.LOCK_EX}
LOCK_DIR_ENV = "WORKBOOK_LOCK_DIR"
LOCK_LOG_ENV = "WORKBOOK_LOCK_LOG"
PATIENCE_ENV = "WORKBOOK_LOCK_PATIENCE_S"
# How long a timed phase lets new correctness phases start before it takes its turn: about the
# time between two timed phases in a suite on an H100 (500 s, 72 holds: 7 s), so that a drain
# serves two or so. A grading alone on its GPU never waits for it (the lock is free), and one
# beside others waits no more than this before its drain begins.
PATIENCE_S = 8.0
_POLL_S = 0.05  # how often a patient timed phase looks whether the lock fell free or a turn began
_held: Dict[str, str] = {}  # lock file -> the mode this process holds it in (whichever GpuLock took it)
# Seconds this process waited for each mode and held it (every GpuLock together): where a grading's
# time went, and how much of it had the GPU alone (class.json's "time", class_grading.py).
_MODE_NAMES = {SHARED: "shared", EXCLUSIVE: "exclusive"}
_seconds: Dict[str, Dict[str, float]] = {name: {"waited": 0.0, "held": 0.0} for name in _MODE_NAMES.values()}


def lock_seconds() -> Dict[str, Dict[str, float]]:
    """{"shared": {"waited": s, "held": s}, "exclusive": {...}}: the seconds this process waited
    for the GPU lock and held it, in each mode, so far."""
    return {name: dict(spent) for name, spent in _seconds.items()}


def gpu_id(device: dict) -> str:
    """The GPU's UUID as nvidia-smi writes it; its name and index when workbook_device_info
    gave no UUID (an older build)."""
    return str(device.get("uuid") or f"{device.get('name', 'gpu')}-0")


def lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV) or tempfile.gettempdir())


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container user with no name
        return str(os.getuid())


def patience_s() -> float:
    """PATIENCE_S, or the seconds WORKBOOK_LOCK_PATIENCE_S gives (0: a timed phase takes its turn
    at once)."""
    value = os.environ.get(PATIENCE_ENV, "").strip()
    if not value:
        return PATIENCE_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise file_lock.LockError(f"{PATIENCE_ENV} is '{value}': give the seconds a timed phase lets new "
                                  f"correctness phases start before it takes its turn (0 or more; unset: "
                                  f"{PATIENCE_S:g}).")
    return seconds


def _log(event: str, mode: str, tree: str = "", lock: str = "") -> None:
    path = os.environ.get(LOCK_LOG_ENV)
    if path:
        tree = re.sub(r"[^A-Za-z0-9_.-]+", "_", tree) or "-"
        lock = re.sub(r"\s+", "_", lock) or "-"
        with open(path, "a") as f:
            f.write(f"{event} {mode} {os.getpid()} {time.time():.6f} {tree} {lock}\n")


class GpuLock:
    """The reader-writer lock of one GPU: `with lock.shared():` for correctness tests,
    `with lock.exclusive():` for timing. `tree` and the program's name are shown to the
    processes that wait; `say` prints their one-line explanation."""

    def __init__(self, gpu: str, tree: str = "", say: Callable[[str], None] = print):
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", gpu)
        self.path = lock_dir() / f"cuda-workbook-gpu-{name}.lock"
        self.gate = lock_dir() / f"cuda-workbook-gpu-{name}.gate"
        self.turn = lock_dir() / f"cuda-workbook-gpu-{name}.turn"
        self.mark = lock_dir() / f"cuda-workbook-gpu-{name}.waiting"
        self.holder = Path(f"{self.path}.holder")
        # Grader programs parked before their first timing (ParkedRun, ./grade --park-timed): a
        # file each, named by its pid, while it waits for its hold. They have a CUDA context on the
        # GPU and nothing running there, so a timed phase does not count them as others on it.
        self.parked_dir = lock_dir() / f"cuda-workbook-gpu-{name}.parked"
        self.tree, self.say = tree, say

    @property
    def held(self) -> Optional[str]:
        """The mode this process holds the lock in, if any."""
        return _held.get(str(self.path))

    @classmethod
    def for_device(cls, device: dict, tree: str = "", say: Callable[[str], None] = print) -> "GpuLock":
        """The lock of the GPU that workbook_device_info described in `device`."""
        return cls(gpu_id(device), tree, say)

    def shared(self):
        """Held while correctness tests run: other gradings' tests may run beside them."""
        return self._hold(SHARED)

    def exclusive(self):
        """Held while something is timed: nothing else that takes this lock runs on the GPU."""
        return self._hold(EXCLUSIVE)

    def mark_parked(self, pid: int) -> None:
        """Notes that program `pid` is parked (ParkedRun.wait_parked said so); best effort."""
        try:
            self.parked_dir.mkdir(mode=0o1777, exist_ok=True)
            try:
                os.chmod(self.parked_dir, 0o1777)  # mkdir's mode went through the umask; not ours: kept
            except OSError:
                pass
            (self.parked_dir / str(pid)).touch()
        except OSError:
            pass  # then nvidia-smi's listing shows it among the others: a note on the verdict, no more

    def unmark_parked(self, pid: int) -> None:
        try:
            (self.parked_dir / str(pid)).unlink()
        except OSError:
            pass

    def parked(self) -> Set[int]:
        """The pids of the programs parked on this GPU now (of every grading): those noted and
        still running."""
        pids = set()
        try:
            names = os.listdir(self.parked_dir)
        except OSError:
            return pids
        for name in names:
            if name.isdigit() and os.path.exists(f"/proc/{name}"):
                pids.add(int(name))
        return pids

    def why_waiting(self) -> str:
        holder = file_lock.read_holder(self.holder)
        if holder:
            who = "a ./sweep" if holder.get("program") == "./sweep" else "another grading"
            about = [f"pid {holder['pid']}", f"user {holder.get('user', '?')}"]
            if holder.get("tree"):
                about.append(f"tree {holder['tree']}")
            about.append(f"since {holder.get('since', '?')}")
            doing = f"{who} is timing on it ({', '.join(about)})"
        else:
            doing = "other gradings are running correctness tests on it"
        return f"Waiting for the GPU: {doing}; performance is measured alone, one grading at a time."

    @contextmanager
    def _hold(self, mode: str) -> Iterator[None]:
        if self.held:  # taking the other mode while holding one could wait forever on ourselves
            raise RuntimeError(f"the GPU lock is held ({self.held}) already: release it before taking {mode}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise file_lock.LockError(f"cannot create the lock file {self.path} ({e.strerror}). Set "
                                      f"{LOCK_DIR_ENV} to a directory that every grading on this machine can "
                                      "write.") from e
        asked = time.monotonic()
        patience = patience_s()
        fd = file_lock.open_shared_file(self.path)
        turn = None
        try:
            if mode == EXCLUSIVE:
                turn = self._take_exclusive(fd, patience)
            else:
                self._take_shared(fd, patience)
        except BaseException:
            os.close(fd)
            raise
        taken = time.monotonic()
        try:  # from here on, whatever happens (a log it cannot write, a signal) lets go of both
            _held[str(self.path)] = mode
            _seconds[_MODE_NAMES[mode]]["waited"] += taken - asked
            if mode == EXCLUSIVE:
                file_lock.write_holder(self.holder, {"pid": os.getpid(), "user": _user(), "tree": self.tree,
                                                     "program": file_lock.program_name(),
                                                     "since": time.strftime("%H:%M:%S")})
            _log("acquire", mode, self.tree, str(self.path))
            try:
                yield
            finally:
                _log("release", mode, self.tree, str(self.path))
        finally:
            try:
                _seconds[_MODE_NAMES[mode]]["held"] += time.monotonic() - taken
                _held.pop(str(self.path), None)
                if mode == EXCLUSIVE:
                    file_lock.clear_holder(self.holder)
            finally:
                try:
                    os.close(fd)  # releases the lock
                finally:
                    if turn is not None:
                        os.close(turn)  # the end of this turn

    def _held_by_anyone(self, path: Path) -> bool:
        """Whether any process holds a flock on `path` now (a turn, or the mark of a correctness
        phase that waited too long)."""
        probe = file_lock.open_shared_file(path)
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(probe)

    def _turn_taken(self) -> bool:
        """Whether a timed phase holds a turn (a shared flock on the turn file) now."""
        return self._held_by_anyone(self.turn)

    def _take_shared(self, fd: int, patience: float) -> None:
        """The lock shared, once no timed phase holds a turn: taken in the gate, whose holder
        looks at the turn without waiting for it. A correctness phase that has waited `patience`
        seconds (for the gate, which timed phases waiting for the lock hold, or for the turns to
        end) marks itself: a shared flock on the mark file, held until it has the lock. Timed
        phases then stop joining turns and taking the lock, so that the turns under way end and
        the gate falls free. Both waits poll, so that the mark can be taken while waiting."""
        asked, said, mark = time.monotonic(), False, None

        def waiting() -> None:
            nonlocal said, mark
            if not said:
                self.say(self.why_waiting())
                said = True
            if mark is None and time.monotonic() - asked >= patience:
                mark = file_lock.open_shared_file(self.mark)
                fcntl.flock(mark, fcntl.LOCK_SH)
            time.sleep(_POLL_S)

        try:
            while True:
                gate = file_lock.open_shared_file(self.gate)
                try:
                    while True:
                        try:
                            fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
                            break
                        except BlockingIOError:
                            waiting()
                    if not self._turn_taken():
                        file_lock.acquire(fd, fcntl.LOCK_SH, self.why_waiting,
                                          (lambda line: None) if said else self.say)
                        return
                finally:
                    os.close(gate)  # the next waiter's turn
                while self._turn_taken():
                    waiting()
        finally:
            if mark is not None:
                os.close(mark)

    def _take_exclusive(self, fd: int, patience: float) -> int:
        """The lock exclusive, and a turn (the turn file's descriptor, to close once the lock is
        released). For `patience` seconds, correctness phases still start: the lock is taken if
        it falls free; then, or as soon as another timed phase holds a turn, this one takes
        its turn and waits in the gate for the lock, while new correctness phases wait. While a
        correctness phase that waited too long is marked, it neither takes the lock nor joins a
        turn: it waits for the turns under way to end, and the marked phases to start."""
        deadline = time.monotonic() + patience
        said = taken = False
        while True:
            marked = self._held_by_anyone(self.mark)
            if not marked:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    taken = True
                    break
                except BlockingIOError:
                    pass
            if not said:
                self.say(self.why_waiting())
                said = True
            if not marked and (time.monotonic() >= deadline or self._turn_taken()):
                break
            time.sleep(_POLL_S)
        turn = file_lock.open_shared_file(self.turn)
        try:
            fcntl.flock(turn, fcntl.LOCK_SH)  # waits only while a correctness phase looks at the turn
            if not taken:
                gate = file_lock.open_shared_file(self.gate)
                try:
                    file_lock.acquire(gate, fcntl.LOCK_EX, self.why_waiting, lambda line: None)
                    file_lock.acquire(fd, fcntl.LOCK_EX, self.why_waiting, lambda line: None)
                finally:
                    os.close(gate)
        except BaseException:
            os.close(turn)
            raise
        return turn
