#!/usr/bin/env python3
"""Turn a sweep CSV (from ./sweep) into figures for a report. ./plot --help tells how.

It needs matplotlib, which the python3 first on PATH may lack (a pyenv or conda Python, while
Debian's python3-matplotlib belongs to /usr/bin/python3): then it runs itself again with the
first of PATH's python3 and /usr/bin/python3 that has it, or says which it tried and how to
give each matplotlib, and exits 3."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

if sys.version_info < (3, 8):
    sys.exit("plot: needs Python 3.8 or newer")
sys.path.insert(0, str(Path(__file__).resolve().parent / "tools" / "bench"))

EXIT_NO_MATPLOTLIB = 3


def has_matplotlib(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", "import matplotlib"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def candidates():
    """The interpreters to try besides this one: WORKBOOK_PLOT_PYTHONS (os.pathsep-separated),
    else PATH's python3 and the system's /usr/bin/python3, each once."""
    given = os.environ.get("WORKBOOK_PLOT_PYTHONS")
    names = given.split(os.pathsep) if given else [shutil.which("python3"), "/usr/bin/python3"]
    seen = {os.path.realpath(sys.executable)}
    for name in names:
        if name and os.path.exists(name) and os.path.realpath(name) not in seen:
            seen.add(os.path.realpath(name))
            yield name


def how_to_install(python: str) -> str:
    if python.startswith("/usr/bin/"):
        return "sudo apt install python3-matplotlib (Debian, Ubuntu), or " + python + " -m pip install --user matplotlib"
    return python + " -m pip install matplotlib"


def find_matplotlib() -> None:
    """Returns when this interpreter has matplotlib; else runs ./plot again with one that has it,
    or exits 3 with what was tried."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    tried = [sys.executable]
    if not os.environ.get("WORKBOOK_PLOT_AGAIN"):  # once: never loop between interpreters
        for python in candidates():
            if has_matplotlib(python):
                os.execve(python, [python, str(Path(__file__).resolve()), *sys.argv[1:]],
                          dict(os.environ, WORKBOOK_PLOT_AGAIN="1"))
            tried.append(python)
    lines = ["plot: the figures need matplotlib, and none of these Python interpreters has it:"]
    lines += [f"  {python}: install it with: {how_to_install(python)}" for python in tried]
    print("\n".join(lines), file=sys.stderr)
    sys.exit(EXIT_NO_MATPLOTLIB)


if __name__ == "__main__":
    if not {"-h", "--help"} & set(sys.argv[1:]):  # the help needs no matplotlib
        find_matplotlib()
    from plot import main  # noqa: E402

    sys.exit(main())
