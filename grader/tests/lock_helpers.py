"""Shared by the lock tests: a stand-in ./grade that takes a lock, says so, and holds it until
the test lets go, so two real processes can contend for the build lock or a GPU lock."""
import os
import subprocess
import sys
import time
from pathlib import Path

DRIVER_PARENT = Path(__file__).resolve().parents[1]  # grader/, where the driver package is

# Named "grade" when written out, so the lock files say "./grade" as the real one does.
HOLDER_SCRIPT = f"""\
import os, sys, time
sys.path.insert(0, {str(DRIVER_PARENT)!r})
from driver import build, gpu_lock

kind, mode, tree, release = sys.argv[1:5]
if kind == "build":
    lock = build.locked(os.environ["TEST_BUILD_DIR"], tree)
else:
    gpu = gpu_lock.GpuLock("GPU-00000000-test", tree)
    lock = gpu.shared() if mode == "SH" else gpu.exclusive()
with lock:
    print("acquired", flush=True)
    while not os.path.exists(release):
        time.sleep(0.02)
print("released", flush=True)
"""


def wait_for(predicate, timeout_s=20.0, what="a condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


class Holder:
    """One stand-in ./grade process: `release()` lets it go; `output` is what it printed."""

    def __init__(self, workdir: Path, name: str, kind: str, mode: str, tree: str, env: dict):
        self.release_file = workdir / f"{name}.release"
        self.out_path = workdir / f"{name}.out"
        script = workdir / "grade"
        if not script.exists():
            script.write_text(HOLDER_SCRIPT)
        with open(self.out_path, "w") as out:
            self.process = subprocess.Popen([sys.executable, str(script), kind, mode, tree, str(self.release_file)],
                                            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env})

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def output(self) -> str:
        return self.out_path.read_text()

    def wait_acquired(self):
        wait_for(lambda: "acquired" in self.output, what=f"pid {self.pid} to take the lock")

    def wait_waiting(self):
        wait_for(lambda: "Waiting" in self.output, what=f"pid {self.pid} to say it waits")

    def release(self):
        self.release_file.touch()

    def finish(self):
        self.release()
        try:
            self.process.wait(timeout=20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
