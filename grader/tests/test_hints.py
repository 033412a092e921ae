"""Every hint the grader can print is a claim backed by evidence, and each has a broken
variant in grader/tests/broken/ that triggers it (its expected.json lists the hint's id). The
GPU end-to-end tests (check_grades.py) then show that each variant prints exactly the hints
its expected.json lists, so a hint that fired where its cause is absent fails the suite.

This host-only test keeps the catalogue whole: every id used in the grader's sources has a
variant, and every id a variant expects exists."""
import json
import re
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "grader" / "tests" / "broken"
# grader::hint("id", ...) in C++, hint("id", ...) in the driver.
HINT_CALL = re.compile(r'\bhint\(\s*"([a-z0-9-]+)"')


def ids_in_sources() -> dict:
    """Hint id -> the source files that can print it."""
    found = {}
    sources = [p for p in (ROOT / "grader").rglob("*") if p.suffix in (".cpp", ".cu", ".hpp", ".py")
               and "tests" not in p.relative_to(ROOT / "grader").parts]
    for path in sources:
        for hint_id in HINT_CALL.findall(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(hint_id, []).append(str(path.relative_to(ROOT)))
    return found


def hints_in(expected: dict) -> set:
    ids = set()
    for tasks in expected.values():
        for kinds in tasks.values():
            for want in kinds.values():
                if isinstance(want, dict):
                    ids.update(want.get("hints", []))
    return ids


def ids_expected_by_variants() -> dict:
    """Hint id -> the broken variants whose expectations list it."""
    found = {}
    for path in sorted(BROKEN.glob("*/expected*.json")):
        for hint_id in hints_in(json.loads(path.read_text())):
            found.setdefault(hint_id, []).append(path.parent.name)
    return found


class HintCatalogueTest(unittest.TestCase):
    def setUp(self):
        if not BROKEN.is_dir():
            self.skipTest("a student release: no broken variants")

    def test_the_sources_use_hints(self):
        self.assertGreaterEqual(len(ids_in_sources()), 20)

    def test_every_hint_has_a_broken_variant_that_triggers_it(self):
        missing = sorted(set(ids_in_sources()) - set(ids_expected_by_variants()))
        self.assertEqual(missing, [], "hints no broken variant in grader/tests/broken/ expects: "
                         + ", ".join(f"{h} ({', '.join(ids_in_sources()[h])})" for h in missing))

    def test_every_expected_hint_exists(self):
        unknown = sorted(set(ids_expected_by_variants()) - set(ids_in_sources()))
        self.assertEqual(unknown, [], "variants expect hints the grader cannot print: "
                         + ", ".join(f"{h} ({', '.join(ids_expected_by_variants()[h])})" for h in unknown))

    def test_the_catch_all_expectations_list_no_hints(self):
        # Full marks and untouched skeletons never get a hint.
        for name in ("solutions.json", "exercises.json"):
            path = ROOT / "grader" / "tests" / "expected" / name
            self.assertEqual(hints_in(json.loads(path.read_text())), set(), name)


if __name__ == "__main__":
    unittest.main()
