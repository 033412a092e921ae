"""The file locks under the build lock (build.py) and the GPU lock (gpu_lock.py).

fcntl.flock locks belong to an open file and go away with the process that holds them, so
a ./grade that crashes or is killed never leaves a lock behind. Whoever holds a lock
exclusively writes who it is into a side file (<lock>.holder), so that a process that has to
wait can say what it is waiting for. The side file is emptied on release, not removed: in a
shared /tmp (sticky) only its owner could remove it."""
from __future__ import annotations

import fcntl
import json
import os
import sys
from pathlib import Path
from typing import Callable, Optional


def program_name() -> str:
    """"./grade" or "./sweep" (the commands that take these locks), else the script's name."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return f"./{name}" if name in ("grade", "sweep") else name


class LockError(Exception):
    """A lock file cannot be made: the message says where and what to set."""


def open_shared_file(path: Path) -> int:
    """Opens `path`, creating it readable and writable by every user: on a course server
    several users grade on the same GPU and share its lock files. An existing file is opened
    without O_CREAT, which Linux refuses on another user's file in a sticky directory such as
    /tmp (fs.protected_regular), whatever its mode."""
    while True:
        try:
            return os.open(str(path), os.O_RDWR)
        except FileNotFoundError:
            pass
        except PermissionError:  # not writable for us: a lock still works on a read-only file
            return os.open(str(path), os.O_RDONLY)
        try:
            fd = os.open(str(path), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue  # another process created it just now
        except OSError as e:
            raise LockError(f"cannot create the lock file {path} ({e.strerror}). Set WORKBOOK_LOCK_DIR to a "
                            "directory that every grading on this machine can write.") from e
        try:
            os.fchmod(fd, 0o666)  # os.open's mode went through the umask
        except OSError:
            pass
        return fd


def acquire(fd: int, mode: int, why_waiting: Callable[[], str], say: Callable[[str], None]) -> bool:
    """Takes the flock `mode` (LOCK_SH or LOCK_EX) on `fd`. When it is taken, first says in
    one line why this process waits. Returns whether it had to wait."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        say(why_waiting())
        fcntl.flock(fd, mode)
        return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process
    return True


def write_holder(path: Path, info: dict) -> None:
    """Records who holds the lock (best effort: a side file another user made read-only is skipped)."""
    try:
        fd = open_shared_file(path)
    except OSError:
        return
    try:
        os.ftruncate(fd, 0)
        os.write(fd, (json.dumps(info) + "\n").encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def clear_holder(path: Path) -> None:
    try:
        fd = os.open(str(path), os.O_WRONLY)
    except OSError:
        return
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_holder(path: Path) -> Optional[dict]:
    """Who holds the lock exclusively, if anyone does: None when the side file is empty, or
    names a process that is gone (one killed before it could empty the file)."""
    try:
        info = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int) or not _alive(info["pid"]):
        return None
    return info
