#!/usr/bin/env python3
"""Runs a command as one of the GPU's correctness phases: holding the per-GPU lock shared
(grader/driver/gpu_lock.py), beside other correctness phases, and never while a grading times
something on that GPU.

ctest runs the project's GPU tests that are not gradings through it (the Catch2 GPU tests and
the lessons' examples, cmake's WORKBOOK_GPU_TEST_LAUNCHER): the test preset runs tests side by
side (cmake/GpuTestSlots.cmake), and a kernel of theirs running while a grading's timed phase
measures would make that figure look slower than it is, and could change its verdict.

    with_gpu_lock.py --device-info build/test/common/workbook_device_info -- program [args...]

Which GPU: the one workbook_device_info describes (the one a CUDA program gets by default).
When it finds no GPU (no driver, or none visible) the command runs as it is, without the lock:
there is nothing to share. Exit status: the command's own (128 + N when signal N ended it);
SIGTERM and SIGINT are passed on to it, so ctest's time limit stops it."""
import argparse
import json
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from driver.gpu_lock import GpuLock  # noqa: E402


def device(device_info: str):
    """workbook_device_info's description of the GPU, or None where it finds none."""
    try:
        found = subprocess.run([device_info], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
        described = json.loads(found.stdout) if found.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return described if isinstance(described, dict) else None


def run(command) -> int:
    """The command's exit status, with SIGTERM and SIGINT passed on to it."""
    child = subprocess.Popen(command)
    forward = lambda signum, frame: child.send_signal(signum)  # noqa: E731
    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        status = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - status if status < 0 else status


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device-info", required=True, help="the build's workbook_device_info")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    gpu = device(args.device_info)
    if gpu is None:
        return run(command)
    with GpuLock.for_device(gpu, tree=Path(command[0]).name, say=lambda line: print(line, file=sys.stderr)).shared():
        return run(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
