#!/usr/bin/env python3
"""Writes the lesson table in README.md from lessons/manifest.json, the one list of lessons.

    tools/lesson_index.py          rewrite the table
    tools/lesson_index.py --check  exit 1 if the table is stale (a ctest test runs this)
"""
import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- lessons: generated from lessons/manifest.json by tools/lesson_index.py -->"
END = "<!-- lessons: end -->"


def table(manifest: dict) -> str:
    rows = ["| # | lesson | tasks | points |", "| --- | --- | --- | --- |"]
    for lesson in manifest["lessons"]:
        points = sum(sum(t["points"].values()) for t in lesson["tasks"] if not t.get("optional"))
        bonus = sum(sum(t["points"].values()) for t in lesson["tasks"] if t.get("optional"))
        number = lesson["slug"].split("_", 1)[0]
        rows.append(f"| {number} | [{lesson['title']}](lessons/{lesson['slug']}/README.md) | "
                    f"{len(lesson['tasks'])} | {points:g}{f' (+{bonus:g} optional)' if bonus else ''} |")
    return "\n".join(rows)


def render(readme: str, manifest: dict) -> str:
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
    if not pattern.search(readme):
        raise SystemExit(f"lesson_index: README.md has no '{BEGIN}' ... '{END}' block")
    return pattern.sub(lambda _: f"{BEGIN}\n{table(manifest)}\n{END}", readme)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    readme_path = ROOT / "README.md"
    readme = readme_path.read_text()
    new = render(readme, json.loads((ROOT / "lessons" / "manifest.json").read_text()))
    if new == readme:
        return 0
    if args.check:
        print("lesson_index: README.md's lesson table differs from lessons/manifest.json; run tools/lesson_index.py",
              file=sys.stderr)
        return 1
    readme_path.write_text(new)
    print("updated README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
