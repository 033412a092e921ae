#!/usr/bin/env python3
"""Keeps the code shown in lessons identical to compiled, tested files.

In a lesson's Markdown, a line
    <!-- snippet: lessons/01_vector_add/examples/scale.cu kernel -->
followed by a fenced code block means: that block is the text between the two
`//! [kernel]` markers of that file (Doxygen's \\snippet convention), dedented.

    tools/snippets.py          rewrite the blocks from the sources
    tools/snippets.py --check  exit 1, naming each stale or broken block (a ctest test runs this)
"""
import argparse
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- snippet: (\S+) (\S+) -->$")


class SnippetError(Exception):
    pass


def extract(path: Path, name: str) -> str:
    if not path.is_file():
        raise SnippetError(f"no file {path.relative_to(ROOT)}")
    lines = path.read_text().splitlines()
    marks = [i for i, line in enumerate(lines) if line.strip() == f"//! [{name}]"]
    if len(marks) != 2:
        raise SnippetError(f"{path.relative_to(ROOT)} needs exactly two '//! [{name}]' lines, has {len(marks)}")
    return textwrap.dedent("\n".join(lines[marks[0] + 1:marks[1]])).strip("\n")


def render(markdown: str, source: str) -> str:
    """The Markdown with every snippet block replaced by the current source text."""
    lines = markdown.splitlines()
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        match = MARKER.match(lines[i].strip())
        i += 1
        if not match:
            continue
        if i >= len(lines) or not lines[i].startswith("```"):
            raise SnippetError(f"{source}: the snippet marker for {match.group(1)} must be followed by a ``` block")
        fence = lines[i]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise SnippetError(f"{source}: unterminated code block after the snippet marker for {match.group(1)}")
        out.append(fence)
        out.extend(extract(ROOT / match.group(1), match.group(2)).splitlines())
        out.append(lines[end])
        i = end + 1
    return "\n".join(out) + "\n"


def documents():
    return [ROOT / "README.md"] + sorted((ROOT / "lessons").glob("*/README.md"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale blocks")
    args = parser.parse_args()
    stale = []
    for doc in documents():
        if not doc.is_file():
            continue
        text = doc.read_text()
        try:
            new = render(text, str(doc.relative_to(ROOT)))
        except SnippetError as e:
            print(f"snippets: {e}", file=sys.stderr)
            return 1
        if new != text:
            stale.append(doc.relative_to(ROOT))
            if not args.check:
                doc.write_text(new)
    if args.check and stale:
        for doc in stale:
            print(f"snippets: {doc} shows code that differs from its source; run tools/snippets.py", file=sys.stderr)
        return 1
    for doc in stale:
        print(f"updated {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
