"""Whether a task's code is still the untouched skeleton of exercises/.

A grader program reports a task whose code wrote nothing at all; only the driver can tell why.
"not implemented yet" is true only of the skeleton: the task's `TODO(task N)` still there and
the body of the function that holds it unchanged (comments and spacing aside). A body the
student wrote that writes nothing is a failure, told with the facts the grader saw.

The skeleton bodies are recorded in grader/skeletons.json, written from exercises/ by

    python3 -m grader.driver.skeleton --write      (from the project root, after editing a skeleton)
    python3 -m grader.driver.skeleton --check      (exit 1 when the file is stale; a ctest test)

A body is the code between the braces of the innermost block around the marker, with comments
removed and spacing made canonical (one space between two words, none elsewhere), so that a
student's notes in comments or a reformatting do not count as code."""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from .manifest import Lesson, load_manifest

ROOT = Path(__file__).resolve().parents[2]
SKELETONS = Path("grader") / "skeletons.json"

UNTOUCHED = "untouched"  # the marker and the body are the skeleton's
CHANGED = "changed"      # the student changed the body, or removed the marker
UNKNOWN = "unknown"      # no record of the skeleton, or the file cannot be read


def _code_mask(text: str) -> List[bool]:
    """For each character of C++ source: True when it is code, False inside a comment, a string
    or a character literal (whose braces must not count). Raw strings are treated as strings
    up to the next quote, which is enough for skeletons and never crashes on other text."""
    mask = [True] * len(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
        elif c in "\"'":
            end = i + 1
            while end < n and text[end] != c and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, n)
        else:
            i += 1
            continue
        for k in range(i, end):
            mask[k] = False
        i = end
    return mask


def _normalise(code: str) -> str:
    """Spacing made canonical: one space between two words, none anywhere else."""
    code = re.sub(r"\s+", " ", code).strip()
    return re.sub(r"(?<!\w) | (?!\w)", "", code)


@dataclass
class TaskCode:
    function: str  # the name before the block's parameter list ("" when none is found)
    body: str      # normalised code of the block, comments removed


def task_code(text: str, task_id: int) -> Optional[TaskCode]:
    """The code of the block that holds `TODO(task N)` in text, or None when the marker is
    not in a comment there or stands outside every block."""
    mask = _code_mask(text)
    marker = re.compile(rf"TODO\(task {task_id}\)")
    where = next((m.start() for m in marker.finditer(text) if not mask[m.start()]), None)
    if where is None:
        return None
    # The innermost '{' before the marker that is still open there.
    opened: List[int] = []
    for i in range(where):
        if mask[i] and text[i] == "{":
            opened.append(i)
        elif mask[i] and text[i] == "}" and opened:
            opened.pop()
    if not opened:
        return None
    start = opened[-1]
    depth, end = 0, len(text)
    for i in range(start, len(text)):
        if mask[i] and text[i] == "{":
            depth += 1
        elif mask[i] and text[i] == "}":
            depth -= 1
            if depth == 0:
                end = i
                break
    code = "".join(ch if mask[start + 1 + k] else " " for k, ch in enumerate(text[start + 1:end]))
    head = "".join(ch if mask[k] else " " for k, ch in enumerate(text[:start]))
    name = re.search(r"([A-Za-z_]\w*)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*(?:const\s*)?(?:noexcept\s*)?$", head)
    return TaskCode(function=name.group(1) if name else "", body=_normalise(code))


def record(root: Path, lessons: List[Lesson]) -> Dict[str, Dict[str, dict]]:
    """The skeleton of every task of lessons, read from root/exercises."""
    out: Dict[str, Dict[str, dict]] = {}
    for lesson in lessons:
        tasks: Dict[str, dict] = {}
        for task in lesson.tasks:
            for source in lesson.sources:
                path = root / "exercises" / lesson.slug / source
                code = task_code(path.read_text(), task.id) if path.is_file() else None
                if code is not None:
                    tasks[str(task.id)] = {"file": source, "function": code.function, "body": code.body}
                    break
        out[lesson.slug] = tasks
    return out


def load(root: Path = ROOT) -> Dict[str, Dict[str, dict]]:
    """grader/skeletons.json, or {} when it is missing or unreadable (every state is then UNKNOWN)."""
    try:
        return json.loads((root / SKELETONS).read_text())
    except (OSError, ValueError):
        return {}


def state(skeletons: Dict[str, Dict[str, dict]], tree_dir: Path, slug: str, task_id: int) -> str:
    """UNTOUCHED, CHANGED or UNKNOWN for task task_id of lesson slug in tree_dir."""
    known = skeletons.get(slug, {}).get(str(task_id))
    if not known:
        return UNKNOWN
    try:
        text = (Path(tree_dir) / slug / known["file"]).read_text(errors="replace")
    except OSError:
        return UNKNOWN
    code = task_code(text, task_id)
    return UNTOUCHED if code is not None and code.body == known["body"] else CHANGED


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Record (or check) the skeleton of every task in "
                                                 "grader/skeletons.json, read from exercises/.")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="rewrite grader/skeletons.json")
    group.add_argument("--check", action="store_true", help="exit 1 when grader/skeletons.json is stale")
    args = parser.parse_args(argv)
    lessons = load_manifest(ROOT / "lessons" / "manifest.json")
    fresh = record(ROOT, lessons)
    missing = [f"{l.slug} task {t.id}" for l in lessons for t in l.tasks if str(t.id) not in fresh[l.slug]]
    if missing:
        print("no TODO(task N) marker inside a function of exercises/ for: " + ", ".join(missing), file=sys.stderr)
        return 1
    text = json.dumps(fresh, indent=2, sort_keys=True) + "\n"
    if args.write:
        (ROOT / SKELETONS).write_text(text)
        print(f"wrote {SKELETONS}")
        return 0
    current = (ROOT / SKELETONS).read_text() if (ROOT / SKELETONS).is_file() else ""
    if current != text:
        print(f"{SKELETONS} does not match exercises/: run python3 -m grader.driver.skeleton --write",
              file=sys.stderr)
        return 1
    print(f"{SKELETONS} matches exercises/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
