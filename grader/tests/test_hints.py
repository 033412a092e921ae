"""Every hint the grader can print is a claim backed by evidence, registered in grader/hints.json
(its id, lessons and tasks, claim, evidence, variants and a line for students), and each has a
broken variant in grader/tests/broken/ that triggers it (its expected.json lists the hint's id).
The GPU end-to-end tests (check_grades.py) then show that each variant prints exactly the hints
its expected.json lists, so a hint that fired where its cause is absent fails the suite.

This host-only test keeps the registry, the sources and the variants in step. The compiler already
refuses a C++ hint whose id the registry lacks (grader::HintId is generated from it); the driver's
Python hint() calls are checked only here."""
import json
import re
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GRADER = ROOT / "grader"
BROKEN = GRADER / "tests" / "broken"
sys.path.insert(0, str(ROOT / "tools"))
import hint_catalogue  # noqa: E402

# C++: grader::hint(HintId::off_by_one_end, ...), the id with '_' for '-'. Python: hint("id", ...).
CPP_HINT = re.compile(r"\bHintId::([a-z0-9_]+)")
PY_HINT = re.compile(r'\bhint\(\s*"([a-z0-9-]+)"')
CPP_STRING_HINT = re.compile(r'\bhint\(\s*"')


def grader_sources():
    """The grader's own sources (its tests and their broken variants left out)."""
    return sorted(p for p in GRADER.rglob("*") if p.suffix in (".cpp", ".cu", ".hpp", ".py")
                  and "tests" not in p.relative_to(GRADER).parts)


def ids_in_sources() -> dict:
    """Hint id -> the source files that can print it."""
    found = {}
    for path in grader_sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        ids = PY_HINT.findall(text) if path.suffix == ".py" else [i.replace("_", "-") for i in CPP_HINT.findall(text)]
        for hint_id in ids:
            found.setdefault(hint_id, []).append(str(path.relative_to(ROOT)))
    return found


def hints_in(expected: dict) -> dict:
    """Hint id -> the (lesson slug, task number) pairs whose verdicts in these expectations list it."""
    ids = {}
    for slug, tasks in expected.items():
        for task, kinds in tasks.items():
            for want in kinds.values():
                if isinstance(want, dict):
                    for hint_id in want.get("hints", []):
                        ids.setdefault(hint_id, set()).add((slug, int(task)))
    return ids


def expectations_of_variants() -> dict:
    """Hint id -> {variant: the (lesson slug, task number) pairs where it expects the hint}."""
    found = {}
    for path in sorted(BROKEN.glob("*/expected*.json")):
        for hint_id, where in hints_in(json.loads(path.read_text())).items():
            found.setdefault(hint_id, {}).setdefault(path.parent.name, set()).update(where)
    return found


def registry() -> dict:
    return {h["id"]: h for h in hint_catalogue.load()}


class RegistryAndSourcesTest(unittest.TestCase):
    """The registry against the code that prints hints: both in a release and in the repository."""

    def test_the_registry_is_well_formed(self):
        hint_catalogue.load()  # raises RegistryError, naming the entry, when it is not

    def test_the_sources_use_hints(self):
        self.assertGreaterEqual(len(ids_in_sources()), 20)

    def test_every_id_the_sources_print_is_registered(self):
        unknown = sorted(set(ids_in_sources()) - set(registry()))
        self.assertEqual(unknown, [], "hints printed by the grader but missing from grader/hints.json: "
                         + ", ".join(f"{h} ({', '.join(ids_in_sources()[h])})" for h in unknown))

    def test_every_registered_id_is_printed_somewhere(self):
        unused = sorted(set(registry()) - set(ids_in_sources()))
        self.assertEqual(unused, [], "grader/hints.json holds hints no source prints: " + ", ".join(unused))

    def test_cpp_names_hints_by_their_registered_enumerator(self):
        # A string id in C++ would escape both the compiler's check and this test's count.
        for path in grader_sources():
            if path.suffix != ".py":
                self.assertIsNone(CPP_STRING_HINT.search(path.read_text(encoding="utf-8", errors="replace")),
                                  f"{path.relative_to(ROOT)}: grader::hint takes a grader::HintId, not a string")

    def test_a_lesson_graders_hints_are_registered_for_that_lesson(self):
        # grader/<slug>/ prints hints of that lesson; the driver prints hints of every lesson, or of the
        # lessons and tasks its registry entry lists (the counters' causes: the timed tasks only).
        hints = registry()
        for hint_id, files in ids_in_sources().items():
            if hint_id not in hints:
                continue
            lessons = hints[hint_id]["lessons"]
            for file in files:
                parts = Path(file).relative_to("grader").parts
                if parts[0] == "driver":
                    self.assertTrue(lessons == "all" or set(lessons) <= set(hint_catalogue.lesson_slugs()),
                                    f"{hint_id} is printed by the driver ({file}): \"all\" or lessons that exist")
                elif parts[0] in hint_catalogue.lesson_slugs():
                    self.assertTrue(lessons == "all" or parts[0] in lessons,
                                    f"{hint_id} is printed by {file}, but grader/hints.json does not list {parts[0]}")


class RegistryAndVariantsTest(unittest.TestCase):
    """The registry against the broken variants, which a student release leaves out."""

    def setUp(self):
        if not BROKEN.is_dir():
            self.skipTest("a student release: no broken variants")

    def test_every_hint_has_a_broken_variant_that_triggers_it(self):
        missing = sorted(set(registry()) - set(expectations_of_variants()))
        self.assertEqual(missing, [], "hints no broken variant in grader/tests/broken/ expects: " + ", ".join(missing))

    def test_every_expected_hint_is_registered(self):
        unknown = sorted(set(expectations_of_variants()) - set(registry()))
        self.assertEqual(unknown, [], "variants expect hints missing from grader/hints.json: "
                         + ", ".join(f"{h} ({', '.join(expectations_of_variants()[h])})" for h in unknown))

    def test_each_hint_lists_exactly_the_variants_that_expect_it(self):
        expected = expectations_of_variants()
        for hint_id, hint in registry().items():
            self.assertEqual(sorted(hint["variants"]), sorted(expected.get(hint_id, {})),
                             f"{hint_id}: grader/hints.json's variants against the expected*.json that list it")

    def test_a_hint_is_registered_for_the_lessons_and_tasks_its_variants_expect_it_in(self):
        # The lesson lists group ids by task from the registry: a variant's task must be among them.
        hints = registry()
        for hint_id, variants in expectations_of_variants().items():
            if hint_id not in hints or hints[hint_id]["lessons"] == "all":
                continue
            registered = {(slug, task) for slug, tasks in hints[hint_id]["lessons"].items() for task in tasks}
            for variant, where in variants.items():
                self.assertLessEqual(where, registered, f"{variant} expects {hint_id} in (lesson, task) "
                                     f"{sorted(where - registered)}, which grader/hints.json does not list")

    def test_the_catch_all_expectations_list_no_hints(self):
        # Full marks and untouched skeletons never get a hint, and a hint that may be seen only on
        # a task whose skeleton is code given broken (lesson 06's task 1), whose verdict fails.
        for name in ("solutions.json", "exercises.json"):
            path = GRADER / "tests" / "expected" / name
            expected = json.loads(path.read_text())
            self.assertEqual(hints_in(expected), {}, name)
            for slug, tasks in expected.items():
                for task, kinds in tasks.items():
                    for kind, want in kinds.items():
                        if isinstance(want, dict) and want.get("hints_if_seen"):
                            self.assertEqual((name, want["status"]), ("exercises.json", "failed"),
                                             f"{name} {slug} task {task} {kind}: hints_if_seen on a verdict "
                                             "that should carry no hint")


if __name__ == "__main__":
    unittest.main()
