#!/usr/bin/env python3
"""Writes the hint catalogue in grader/README.md and each lesson's list of hints from grader/hints.json.

grader/hints.json is the one registry of the grader's evidence-backed hints ("Hint [id]: ..."): per
hint its id, the lessons and tasks whose verdicts can carry it, claim, evidence, broken variants and a
line for students. This tool renders the blocks between "<!-- hints: ... -->" markers in
grader/README.md (section "Hints: claims backed by evidence": the whole catalogue, one row per hint,
anchored "hint-<id>") and in each lesson's README.md (section "When the grader says no": the lesson's
ids, a line per task and one for those any task can print, each linked to its row; the lesson keeps
an index, the catalogue the text). It checks the registry first: ids, lesson slugs and task numbers
(lessons/manifest.json) and the shape of every entry. The grader's C++ reads the same file
(grader/CMakeLists.txt generates grader::HintId from it); grader/tests/test_hints.py checks it against
the sources and the variants.
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
CATALOGUE_LINK = "../../grader/README.md"  # from lessons/<slug>/README.md
BEGIN = "<!-- hints: generated from grader/hints.json by tools/hint_catalogue.py -->"
END = "<!-- hints: end -->"
# Ids are printed as "Hint [id]" and become C++ enumerators with '-' read as '_': lower case, digits, dashes.
ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
FIELDS = ("id", "lessons", "claim", "evidence", "variants", "text")
TEXT_LIMIT = 120  # characters in a student's line


class RegistryError(Exception):
    pass


def lesson_tasks() -> Dict[str, List[int]]:
    """Each lesson's slug and its task numbers, in the manifest's order."""
    return {lesson["slug"]: [int(task["id"]) for task in lesson["tasks"]]
            for lesson in json.loads(MANIFEST.read_text())["lessons"]}


def lesson_slugs() -> List[str]:
    return list(lesson_tasks())


def load(path: Path = REGISTRY) -> List[Dict]:
    """The registry's hints, in its order, after checking each entry's shape."""
    hints = json.loads(path.read_text())["hints"]
    tasks = lesson_tasks()
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
        if h["lessons"] != "all" and (
                not isinstance(h["lessons"], dict) or not h["lessons"]
                or not all(slug in tasks and isinstance(numbers, list) and numbers and numbers == sorted(set(numbers))
                           and all(isinstance(n, int) and n in tasks[slug] for n in numbers)
                           for slug, numbers in h["lessons"].items())):
            raise RegistryError(f"{where}: lessons is \"all\" or an object from lesson slugs to the numbers of their "
                                f"tasks that can print it (ascending), as lessons/manifest.json names them")
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


def anchor(hint_id: str) -> str:
    """The anchor of a hint's row in the catalogue."""
    return f"hint-{hint_id}"


def where_printed(h: Dict) -> str:
    """A catalogue cell: "any", or each lesson's number with its tasks, "04: 2, 4"."""
    if h["lessons"] == "all":
        return "any"
    return "; ".join(f"{slug.split('_', 1)[0]}: {', '.join(map(str, numbers))}"
                     for slug, numbers in h["lessons"].items())


def catalogue(hints: List[Dict]) -> str:
    """The table for grader/README.md: every hint, where it can appear, what it claims, on what evidence, and its
    line for students."""
    rows = ["| id | lessons: tasks | claims | only when | tells students | variants |",
            "| --- | --- | --- | --- | --- | --- |"]
    for h in hints:
        variants = ", ".join(f"`{v}`" for v in h["variants"])
        rows.append(f"| <a id=\"{anchor(h['id'])}\"></a>`{h['id']}` | {where_printed(h)} | {cell(h['claim'])} | "
                    f"{cell(h['evidence'])} | {cell(h['text'])} | {variants} |")
    return "\n".join(rows)


def lesson_list(hints: List[Dict], slug: str) -> str:
    """The block for a lesson's "When the grader says no": per task, the ids only some of its tasks' verdicts can
    carry, each linked to its row in the catalogue; then, once, those every task can carry (the driver's among them)."""
    def links(chosen: List[Dict]) -> str:
        return ", ".join(f"[`{h['id']}`]({CATALOGUE_LINK}#{anchor(h['id'])})" for h in chosen)

    tasks = lesson_tasks()[slug]
    own = [h for h in hints if h["lessons"] != "all" and slug in h["lessons"]]
    everywhere = [h for h in own if set(h["lessons"][slug]) >= set(tasks)] + [h for h in hints if h["lessons"] == "all"]
    lines = ["A `Hint [id]` line names a cause only when the grader's evidence shows it. Each id links to its row",
             f"in [grader/README.md]({CATALOGUE_LINK}#{CATALOGUE_ANCHOR}): the cause, the evidence, what to do.", ""]
    for number in tasks:
        chosen = [h for h in own if number in h["lessons"][slug] and h not in everywhere]
        if chosen:
            lines.append(f"- Task {number}: {links(chosen)}.")
    lines.append(f"- Any task: {links(everywhere)}.")
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
