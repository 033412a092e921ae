#!/usr/bin/env python3
"""Turn a sweep CSV (from ./sweep) into figures for a report. ./plot --help tells how.
Needs matplotlib in the python3 that runs it."""
import sys
from pathlib import Path

if sys.version_info < (3, 8):
    sys.exit("plot: needs Python 3.8 or newer")
sys.path.insert(0, str(Path(__file__).resolve().parent / "tools" / "bench"))

from plot import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
