#!/usr/bin/env python3
"""The tests a cut-short suite run left: those `ctest -N` lists that the run's log (ctest -V)
does not show finished, as one regular expression for `ctest -R`. A suite stopped by a time limit
(the device tool's 600 s a command) goes on in the next call with only these, instead of all of
it again (`ctest --preset test` ignores -I).

    tools/ctest_rest.py SUITE_LOG BUILD_DIR       prints the expression; exit 1 when nothing is left

tools/gpu_check.sh rest runs it."""
import re
import subprocess
import sys
from typing import List

# "  12/298 Test  #45: common.a name with spaces ......   Passed    0.02 sec" (also ***Failed, ***Skipped)
_FINISHED = re.compile(r"^\s*\d+/\d+ Test\s+#(\d+): ", re.M)
# `ctest -N`: "  Test  #45: common.a name with spaces"
_LISTED = re.compile(r"^\s*Test\s+#(\d+): (.+?)\s*$", re.M)
# What CMake's regular expressions treat specially, escaped with a backslash.
_SPECIAL = re.compile(r"([\\^$.|?*+()\[\]{}])")


def left(suite_log: str, listing: str) -> List[str]:
    """The names `listing` (ctest -N) holds whose test numbers `suite_log` does not show finished."""
    finished = set(_FINISHED.findall(suite_log))
    return [name for number, name in _LISTED.findall(listing) if number not in finished]


def cmake_regex(names: List[str]) -> str:
    """One expression that matches exactly these names (anchored, CMake's syntax)."""
    return "^(" + "|".join(_SPECIAL.sub(r"\\\1", name) for name in names) + ")$"


def main(argv: List[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[4].strip(), file=sys.stderr)
        return 2
    with open(argv[1], errors="replace") as f:
        log = f.read()
    listing = subprocess.run(["ctest", "--test-dir", argv[2], "-N"], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
    names = left(log, listing)
    if not names:
        return 1
    print(cmake_regex(names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
