"""tools/variants.py: the broken variants stored as patches against the file each breaks.

The diff and its strict applier on many random edits; the commands on a small checkout of their
own (convert picks the nearest base and gives every byte back, a patch whose context changed stops
materialize naming the variant, show marks the change, edit and refresh); and the repository's
own variants: each lays out, and none is stored whole where a patch would be shorter."""
import json
import random
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import variants  # noqa: E402
from variants import PatchError, apply_patch, make_patch, parse_patch  # noqa: E402

# Code-like lines, few enough that they repeat (as braces and blank lines do in real files).
VOCABULARY = ["{\n", "}\n", "\n", "  __syncthreads();\n", "  return;\n", "  int i = blockIdx.x;\n",
              "  if (i < n) c[i] = a[i];\n", "// a comment\n", "#include \"x.hpp\"\n", "  ++i;\n"]


def random_text(rng: random.Random, lines: int) -> str:
    return "".join(rng.choice(VOCABULARY) if rng.random() < 0.5 else f"  line {rng.randrange(1000)};\n"
                   for _ in range(lines))


def mutate(rng: random.Random, text: str) -> str:
    """A few random deletions, insertions and replacements; sometimes no last newline, or CRLF lines."""
    lines = variants.split_lines(text)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(lines))
        kind = rng.choice(("delete", "insert", "replace"))
        if kind == "delete" and lines:
            del lines[min(at, len(lines) - 1):min(at, len(lines) - 1) + rng.randint(1, 3)]
        elif kind == "insert":
            lines[at:at] = variants.split_lines(random_text(rng, rng.randint(1, 3)))
        elif lines:
            lines[min(at, len(lines) - 1)] = f"  changed {rng.randrange(1000)};\n"
    out = "".join(lines)
    if rng.random() < 0.2:
        out = out.rstrip("\n")
    if rng.random() < 0.1:
        out = out.replace("\n", "\r\n", 2)
    return out


class PatchTest(unittest.TestCase):
    def round_trip(self, base: str, target: str) -> str:
        patch = make_patch("base", "target", base, target)
        self.assertEqual(apply_patch(base, parse_patch(patch)) if patch else base, target, patch)
        return patch

    def test_random_edits_round_trip_exactly(self):
        seed = random.randrange(1 << 30)
        rng = random.Random(seed)
        for trial in range(400):
            base = random_text(rng, rng.randint(0, 60))
            if rng.random() < 0.1:
                base = base.rstrip("\n")
            with self.subTest(seed=seed, trial=trial):
                self.round_trip(base, mutate(rng, base))

    def test_missing_last_newline_and_carriage_returns_survive(self):
        patch = self.round_trip("a\nb\nc\n", "a\nB\nc")
        self.assertIn(variants.NO_NEWLINE, patch)
        self.round_trip("a\nb\nc", "a\nb\nc\n")
        self.round_trip("a\r\nb\r\n", "a\r\nx\r\nb\r\n")
        self.round_trip("", "new\n")
        self.round_trip("old\n", "")

    def test_identical_files_give_no_patch(self):
        self.assertEqual(make_patch("base", "target", "a\nb\n", "a\nb\n"), "")

    def test_a_base_that_gained_or_lost_lines_above_a_hunk_still_takes_it(self):
        base = "".join(f"line {i}\n" for i in range(40))
        patch = parse_patch(make_patch("b", "t", base, base.replace("line 30\n", "")))
        self.assertEqual(apply_patch("new first line\n" + base, patch),
                         "new first line\n" + base.replace("line 30\n", ""))
        self.assertEqual(apply_patch(base.replace("line 2\n", ""), patch),
                         base.replace("line 2\n", "").replace("line 30\n", ""))

    def test_a_hunk_whose_context_changed_is_refused_naming_the_line(self):
        base = "".join(f"line {i}\n" for i in range(40))
        patch = parse_patch(make_patch("b", "t", base, base.replace("line 30\n", "")))
        with self.assertRaisesRegex(PatchError, r"hunk 1 \(base line 28\).*line 29 is 'line 28, edited'.*"
                                                r"expects 'line 28'"):
            apply_patch(base.replace("line 28\n", "line 28, edited\n"), patch)

    def test_a_hunk_that_matches_at_two_other_places_is_refused(self):
        block = "x\ny\nz\nw\nv\nu\nt\n"
        patch = parse_patch(make_patch("b", "t", "head\n" + block, "head\n" + block.replace("w\n", "W\n")))
        with self.assertRaisesRegex(PatchError, "matches at 2 places"):
            apply_patch(block + "middle\n" + block, patch)

    def test_a_diff_whose_counts_disagree_with_its_header_is_refused(self):
        with self.assertRaisesRegex(PatchError, "holds 2 old and 2 new lines, its header says 3 and 3"):
            parse_patch("--- a\n+++ b\n@@ -1,3 +1,3 @@\n x\n-y\n+Y\n")
        with self.assertRaisesRegex(PatchError, "no '--- base' and '[+]{3} target' header"):
            parse_patch("just text\n")

    def test_an_empty_context_line_an_editor_trimmed_still_applies(self):
        base = "a\n\nb\nc\n"
        patch = make_patch("x", "y", base, "a\n\nB\nc\n").replace("\n \n", "\n\n")
        self.assertEqual(apply_patch(base, parse_patch(patch)), "a\n\nB\nc\n")


SOLUTION = "".join(["// Lesson 01: demo. Reference solution.\n", "#include \"demo.hpp\"\n", "\n"] +
                   [f"  step({i});  // step {i}\n" for i in range(30)] +
                   ["  __syncthreads();  // the tile is complete\n"] +
                   [f"  use({i});\n" for i in range(30)])
PLAIN = SOLUTION.replace("Reference solution.", "Plain student.").replace("  step(7);", "  step(7);  // mine")
SKELETON = "// Lesson 01: demo.\n#include \"demo.hpp\"\n// TODO(task 1): the steps\n"


class CommandsTest(unittest.TestCase):
    """The commands on a checkout of their own: tools/variants.py and a one-lesson workbook."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name) / "book"
        (self.root / "tools").mkdir(parents=True)
        shutil.copy(ROOT / "tools" / "variants.py", self.root / "tools" / "variants.py")
        self.write("solutions/01_demo/demo.cu", SOLUTION)
        self.write("grader/tests/students/plain/01_demo/demo.cu", PLAIN)
        self.write("exercises/01_demo/demo.cu", SKELETON)
        # A barrier deleted from the reference; a line changed in the plain student; one written from scratch.
        self.no_barrier = SOLUTION.replace("Reference solution.", "Broken on purpose.").replace(
            "  __syncthreads();  // the tile is complete\n", "")
        self.plain_wrong = PLAIN.replace("  use(12);\n", "  use(13);\n")
        self.scratch = "// Broken on purpose.\n__global__ void k() {}\n"
        self.add_variant("no_barrier", self.no_barrier)
        self.add_variant("plain_wrong", self.plain_wrong)
        self.add_variant("scratch", self.scratch)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def add_variant(self, name: str, text: str) -> None:
        self.write(f"grader/tests/broken/{name}/expected.json", json.dumps({"01_demo": {"1": {"correctness": "failed"}}}))
        self.write(f"grader/tests/broken/{name}/01_demo/demo.cu", text)

    def variant(self, name: str) -> Path:
        return self.root / "grader" / "tests" / "broken" / name / "01_demo"

    def tool(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, str(self.root / "tools" / "variants.py"), *args], cwd=self.root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if ok:
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done

    def materialized(self, name: str) -> str:
        out = Path(self.tmp.name) / "out"
        self.tool("materialize", "--out", str(out), name)
        return (out / name / "01_demo" / "demo.cu").read_text()

    def git(self, *args: str) -> None:
        subprocess.run(["git", "-C", str(self.root), "-c", "user.name=t", "-c", "user.email=t@example.edu", *args],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def test_convert_patches_the_nearest_base_and_gives_every_byte_back(self):
        self.tool("convert", "--all")
        self.assertEqual(sorted(p.name for p in self.variant("no_barrier").iterdir()), ["demo.cu.patch"])
        patch = (self.variant("no_barrier") / "demo.cu.patch").read_text()
        self.assertTrue(patch.startswith("--- solutions/01_demo/demo.cu\n"
                                         "+++ grader/tests/broken/no_barrier/01_demo/demo.cu\n"), patch)
        self.assertTrue((self.variant("plain_wrong") / "demo.cu.patch").read_text().startswith(
            "--- grader/tests/students/plain/01_demo/demo.cu\n"))
        # Shorter whole than as a patch: kept whole.
        self.assertEqual((self.variant("scratch") / "demo.cu").read_text(), self.scratch)
        for name, text in (("no_barrier", self.no_barrier), ("plain_wrong", self.plain_wrong), ("scratch", self.scratch)):
            self.assertEqual(self.materialized(name), text, name)

    def test_convert_again_changes_nothing(self):
        self.tool("convert", "--all")
        before = {p: p.read_bytes() for p in (self.root / "grader" / "tests" / "broken").rglob("*") if p.is_file()}
        done = self.tool("convert", "--all")
        self.assertIn("no_barrier: 01_demo/demo.cu: a patch against solutions/01_demo/demo.cu; left alone", done.stdout)
        after = {p: p.read_bytes() for p in (self.root / "grader" / "tests" / "broken").rglob("*") if p.is_file()}
        self.assertEqual(before, after)

    def test_a_patch_whose_context_changed_stops_materialize_naming_the_variant(self):
        self.tool("convert", "no_barrier")
        self.write("solutions/01_demo/demo.cu", SOLUTION.replace("  use(0);\n", "  use(0);  // edited\n"))
        done = self.tool("materialize", "--out", str(Path(self.tmp.name) / "out"), ok=False)
        self.assertEqual(done.returncode, 1)
        self.assertIn("broken variant no_barrier: 01_demo/demo.cu: grader/tests/broken/no_barrier/01_demo/"
                      "demo.cu.patch no longer applies to solutions/01_demo/demo.cu", done.stderr)
        self.assertIn("tools/variants.py refresh no_barrier", done.stderr)
        self.assertNotIn("plain_wrong", done.stderr)  # the others were laid out

    def test_an_edit_elsewhere_in_the_base_reaches_the_variant(self):
        self.tool("convert", "no_barrier")
        self.write("solutions/01_demo/demo.cu", "// a new first line\n" + SOLUTION.replace("use(29)", "use(29, 1)"))
        self.assertEqual(self.materialized("no_barrier"),
                         "// a new first line\n" + self.no_barrier.replace("use(29)", "use(29, 1)"))

    def test_show_marks_the_change_in_the_whole_file(self):
        self.tool("convert", "--all")
        shown = self.tool("show", "no_barrier").stdout.splitlines()
        self.assertEqual(shown[0], "grader/tests/broken/no_barrier/01_demo/demo.cu: solutions/01_demo/demo.cu "
                                   "with 2 line(s) removed (-) and 1 added (+)")
        self.assertIn("-      |   __syncthreads();  // the tile is complete", shown)
        self.assertIn("-      | // Lesson 01: demo. Reference solution.", shown)
        self.assertIn("+    1 | // Lesson 01: demo. Broken on purpose.", shown)
        self.assertIn("    33 |   step(29);  // step 29", shown)
        self.assertEqual(len(shown), 1 + len(self.no_barrier.splitlines()) + 2)  # every line, and the two removed
        short = self.tool("show", "no_barrier", "--context", "1").stdout.splitlines()
        self.assertIn("   ... |", short)
        self.assertLess(len(short), 12)
        self.assertIn("stored whole, not as a patch", self.tool("show", "scratch").stdout)

    def test_edit_gives_the_whole_file_and_convert_takes_it_back(self):
        self.tool("convert", "no_barrier")
        patch = (self.variant("no_barrier") / "demo.cu.patch").read_text()
        self.tool("edit", "no_barrier")
        self.assertEqual([p.name for p in self.variant("no_barrier").iterdir()], ["demo.cu"])
        self.assertEqual((self.variant("no_barrier") / "demo.cu").read_text(), self.no_barrier)
        self.tool("convert", "no_barrier")
        self.assertEqual((self.variant("no_barrier") / "demo.cu.patch").read_text(), patch)

    def test_a_file_both_whole_and_patched_is_refused(self):
        self.tool("convert", "no_barrier")
        self.write("grader/tests/broken/no_barrier/01_demo/demo.cu", self.no_barrier)
        done = self.tool("show", "no_barrier", ok=False)
        self.assertIn("both 01_demo/demo.cu and 01_demo/demo.cu.patch", done.stderr)

    def test_refresh_merges_the_change_onto_a_base_that_moved(self):
        self.tool("convert", "no_barrier")
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-qm", "variants as patches")
        # Two lines after the deleted barrier: inside the hunk's context, so the patch no longer applies.
        self.write("solutions/01_demo/demo.cu", SOLUTION.replace("  use(1);\n", "  use(1, 2);\n"))
        self.git("commit", "-qam", "the reference changed")
        self.assertEqual(self.tool("materialize", "--out", str(Path(self.tmp.name) / "o"), ok=False).returncode, 1)
        self.assertIn("merged from solutions/01_demo/demo.cu at", self.tool("refresh", "no_barrier").stdout)
        self.assertEqual(self.materialized("no_barrier"), self.no_barrier.replace("  use(1);\n", "  use(1, 2);\n"))

    def test_refresh_leaves_a_conflict_to_resolve_in_the_whole_file(self):
        self.tool("convert", "no_barrier")
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-qm", "variants as patches")
        self.write("solutions/01_demo/demo.cu", SOLUTION.replace("__syncthreads();", "__syncwarp();"))
        self.git("commit", "-qam", "the reference changed the very line")
        done = self.tool("refresh", "no_barrier", ok=False)
        self.assertEqual(done.returncode, 1)
        self.assertIn("1 conflict(s)", done.stdout)
        self.assertIn("then tools/variants.py convert no_barrier", done.stdout)
        whole = (self.variant("no_barrier") / "demo.cu").read_text()
        self.assertIn("<<<<<<< no_barrier", whole)
        self.assertFalse((self.variant("no_barrier") / "demo.cu.patch").exists())


class RepositoryVariantsTest(unittest.TestCase):
    """The repository's own variants (grader/tests/broken/) and sample students of valid designs
    (grader/tests/students/, tools/variants.py --students), which a student release leaves out."""

    def setUp(self):
        self.books = [variants.Workbook(ROOT), variants.Workbook(ROOT, variants.STUDENTS)]
        if not self.books[0].names():
            self.skipTest("a student release: no broken variants")

    def each(self):
        """(book, name) for every variant and every sample student."""
        return [(book, name) for book in self.books for name in book.names()]

    def test_the_students_store_holds_the_valid_designs_and_never_the_plain_student(self):
        students = self.books[1].names()
        self.assertIn("graph_pipeline", students)
        self.assertNotIn("plain", students)  # a base of patches, written whole

    def test_every_variant_lays_out_as_a_tree_of_lesson_files(self):
        manifest = json.loads((ROOT / "lessons" / "manifest.json").read_text())
        sources = {f"{lesson['slug']}/{source}" for lesson in manifest["lessons"] for source in lesson["sources"]}
        for book, name in self.each():
            with self.subTest(variant=name):
                tree = book.tree(name)  # raises VariantError, naming the file, when a patch does not apply
                self.assertTrue(tree, f"{name} holds no student file")
                self.assertLessEqual(set(tree), sources, f"{name}: files the lessons do not have")

    def test_every_patch_is_against_a_base_the_tool_chooses_from(self):
        for book, name in self.each():
            for f in book.files(name):
                if f.is_patch:
                    self.assertIn(book.read_patch(f).base, book.candidates(f.path), f.label)

    def test_no_variant_is_stored_whole_where_a_patch_would_be_shorter(self):
        # A variant added the old way, as a whole copy of the reference: tools/variants.py convert NAME.
        for book, name in self.each():
            for f in book.files(name):
                if f.is_patch:
                    continue
                text = variants.read_text(f.stored)
                best = book.smallest_patch(f, text)
                if best is None:
                    continue
                base, patch = best
                self.assertEqual(apply_patch(variants.read_text(ROOT / base), parse_patch(patch)), text, f.label)
                store = "--students " if book.store == variants.STUDENTS else ""
                self.assertGreaterEqual(len(variants.split_lines(patch)), len(variants.split_lines(text)),
                                        f"{f.label} is stored whole, but is {base} with a few changes: "
                                        f"run tools/variants.py {store}convert {name}")


if __name__ == "__main__":
    unittest.main()
