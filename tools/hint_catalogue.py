#!/usr/bin/env python3
"""Writes the hint catalogue in grader/README.md and each lesson's list of hints from grader/hints.json.

grader/hints.json is the one registry of the grader's evidence-backed hints ("Hint [id]: ..."): per
hint its id, lessons, claim, evidence, broken variants and a line for students. This tool renders
the blocks between "<!-- hints: ... -->" markers in grader/README.md (section "Hints: claims backed by
evidence": the whole catalogue) and in each lesson's README.md (section "When the grader says no":
the lesson's ids, one line each). It checks the registry first: ids, lesson slugs (lessons/manifest.json)
and the shape of every entry. The grader's C++ reads the same file (grader/CMakeLists.txt generates
grader::HintId from it); grader/tests/test_hints.py checks it against the sources and the variants.
"""
import argparse
import json
import re
import sys
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "grader" / "hints.json"
MANIFEST = ROOT / "lessons" / "manifest.json"
CATALOGUE_DOC = ROOT / "grader" / "README.md"
CATALOGUE_ANCHOR = "hints-claims-backed-by-evidence"  # the heading "### Hints: claims backed by evidence"
BEGIN = "<!-- hints: generated from grader/hints.json by tools/hint_catalogue.py -->"
END = "<!-- hints: end -->"
# Ids are printed as "Hint [id]" and become C++ enumerators with '-' read as '_': lower case, digits, dashes.
ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
FIELDS = ("id", "lessons", "claim", "evidence", "variants", "text")
TEXT_LIMIT = 120  # characters in a student's line


class RegistryError(Exception):
    pass


def lesson_slugs() -> List[str]:
    return [lesson["slug"] for lesson in json.loads(MANIFEST.read_text())["lessons"]]


def load(path: Path = REGISTRY) -> List[Dict]:
    """The registry's hints, in its order, after checking each entry's shape."""
    hints = json.loads(path.read_text())["hints"]
    slugs = set(lesson_slugs())
    seen = set()
    for i, h in enumerate(hints):
        where = f"{path.relative_to(ROOT)}: hint {h.get('id', '#' + str(i))}"
        if set(h) != set(FIELDS):
            raise RegistryError(f"{where} must have exactly the fields {', '.join(FIELDS)}")
        if not ID_PATTERN.match(h["id"]):
            raise RegistryError(f"{where}: an id is lower-case words joined by '-'")
        if h["id"] in seen:
            raise RegistryError(f"{where} appears twice")
        seen.add(h["id"])
        if h["lessons"] != "all" and (not isinstance(h["lessons"], list) or not h["lessons"]
                                      or not set(h["lessons"]) <= slugs):
            raise RegistryError(f"{where}: lessons is \"all\" or a list of lesson slugs from lessons/manifest.json")
        if not isinstance(h["variants"], list) or not h["variants"]:
            raise RegistryError(f"{where}: every hint has a broken variant that triggers it")
        for field in ("claim", "evidence", "text"):
            if not isinstance(h[field], str) or not h[field].strip() or "\n" in h[field]:
                raise RegistryError(f"{where}: {field} is one line of text")
        if len(h["text"]) > TEXT_LIMIT:
            raise RegistryError(f"{where}: text is one short line for students ({TEXT_LIMIT} characters at most)")
    return hints


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def catalogue(hints: List[Dict]) -> str:
    """The table for grader/README.md: every hint, what it claims and on what evidence."""
    rows = ["| id | lessons | claims | only when | variants |", "| --- | --- | --- | --- | --- |"]
    for h in hints:
        lessons = "any" if h["lessons"] == "all" else ", ".join(slug.split("_", 1)[0] for slug in h["lessons"])
        variants = ", ".join(f"`{v}`" for v in h["variants"])
        rows.append(f"| `{h['id']}` | {lessons} | {cell(h['claim'])} | {cell(h['evidence'])} | {variants} |")
    return "\n".join(rows)


def lesson_list(hints: List[Dict], slug: str) -> str:
    """The block for a lesson's "When the grader says no": its hints, one line each."""
    lines = ["A `Hint [id]` line names a cause only when the grader's evidence shows it;",
             f"[grader/README.md](../../grader/README.md#{CATALOGUE_ANCHOR}) says what each one checked.", ""]
    own = [h for h in hints if h["lessons"] != "all" and slug in h["lessons"]]
    everywhere = [h for h in hints if h["lessons"] == "all"]
    lines += [f"- `{h['id']}`: {h['text']}" for h in own]
    lines += [f"- `{h['id']}` (any lesson): {h['text']}" for h in everywhere]
    return "\n".join(lines)


def replace_block(document: str, content: str, name: str) -> str:
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
    if len(pattern.findall(document)) != 1:
        raise RegistryError(f"{name} needs exactly one '{BEGIN}' ... '{END}' block")
    return pattern.sub(lambda _: f"{BEGIN}\n{content}\n{END}", document)


def documents(hints: List[Dict]) -> Dict[Path, str]:
    """Each document this tool writes, as it should read."""
    wanted = {}
    text = CATALOGUE_DOC.read_text()
    wanted[CATALOGUE_DOC] = replace_block(text, catalogue(hints), str(CATALOGUE_DOC.relative_to(ROOT)))
    for slug in lesson_slugs():
        path = ROOT / "lessons" / slug / "README.md"
        wanted[path] = replace_block(path.read_text(), lesson_list(hints, slug), str(path.relative_to(ROOT)))
    return wanted


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="tools/hint_catalogue.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  tools/hint_catalogue.py          rewrite the catalogue and the lessons' lists after editing "
               "grader/hints.json\n"
               "  tools/hint_catalogue.py --check  exit 1, naming each stale document (a ctest test runs this)")
    parser.add_argument("--check", action="store_true", help="only report stale documents, change nothing")
    args = parser.parse_args()
    try:
        wanted = documents(load())
    except RegistryError as e:
        print(f"hint_catalogue: {e}", file=sys.stderr)
        return 1
    stale = [path for path, text in wanted.items() if path.read_text() != text]
    for path in stale:
        if args.check:
            print(f"hint_catalogue: {path.relative_to(ROOT)} differs from grader/hints.json; run tools/hint_catalogue.py",
                  file=sys.stderr)
        else:
            path.write_text(wanted[path])
            print(f"updated {path.relative_to(ROOT)}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
