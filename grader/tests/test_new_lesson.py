"""tools/new_lesson.py: a new lesson follows the project's conventions, builds, and is graded at once.

End to end (NewLessonTest): the tracked tree (git ls-files) is copied to a temporary folder and
lesson NN_scaffold_check (NN after the last lesson) is added there. Then, in the copy: every
generator's --check passes, the skeleton record is current, the manifest loads, the project's own tests of the manifest, the
skeletons, the hints and the generated documents pass, and only the new lesson's lines changed in the
files it shares with other lessons. Then CMake configures the copy (nvcc as CI finds it: $CUDACXX,
nvcc on PATH or /usr/local/cuda/bin; sm_75 only; no docs, no project tests; Ninja) and builds the
lesson's grader programs for exercises/ and solutions/, its worked example and the device query; the
grader programs list the task's tests; and ./grade --no-build grades the exercises with every GPU
hidden (CUDA_VISIBLE_DEVICES=-1), so on any machine it exits 3 and writes a results.json in which
the task was not run for want of a GPU. Where a GPU is visible (tools/gpu_check.sh runs ctest there),
the copy's check_grades.py also grades the exercises ("not implemented yet"), the reference and the
plain student (every point) for real. About 20 s on 2 cores with CUDA 13.0 (November 2026), 16 s of
it the build (nvcc: the helper and support libraries, the grader programs); a machine without Catch2 3
installed downloads it first, as the project's own build does.

Arguments (ArgumentsTest): a slug that is not NN_name, one that exists, a number not after the last
lesson's, a bad title and a manifest laid out otherwise are refused with exit status 2, a message
that says why, and nothing written."""
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import helpers  # noqa: F401 (puts grader/ on the path)
from driver import skeleton
from driver.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "new_lesson.py"
# The lesson the tests add is numbered after the project's last one (LAST, LAST_SLUG).
LAST_SLUG = load_manifest(ROOT / "lessons" / "manifest.json")[-1].slug
LAST = int(LAST_SLUG[:2])
NEXT = f"{LAST + 1:02d}"
SLUG, NAME, TITLE = f"{NEXT}_scaffold_check", "scaffold_check", "Scaffold check"
TARGETS = (f"grade_{SLUG}__exercises", f"grade_{SLUG}__solutions", f"example_{SLUG}_{NAME}", "workbook_device_info")
# Files other lessons share, in which adding a lesson may only add lines (hints.json: its three lines change).
PLAIN = "grader/tests/students/plain"
SHARED = ("lessons/manifest.json", "grader/tests/expected/exercises.json", "grader/tests/expected/solutions.json",
          "grader/tests/students/plain/expected.json", "grader/skeletons.json", "README.md")


def run(command, cwd, env=None, timeout=600):
    return subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def tracked_files():
    """The checkout's files as the working tree has them: tracked ones and new ones git does not
    ignore (a lesson being written, or a copy whose index lags its files); None when the project
    is not the top of a git checkout (a release folder, an unpacked archive)."""
    if shutil.which("git") is None:
        return None
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != ROOT:
        return None
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if listed.returncode != 0:
        return None
    return [name for name in listed.stdout.decode().split("\0") if name and (ROOT / name).is_file()]


def copy_files(names, dest: Path):
    for name in names:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)


def cuda_compiler():
    """The nvcc CI builds with: $CUDACXX, else nvcc on PATH, else /usr/local/cuda/bin/nvcc; None without one."""
    for candidate in (os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}


class NewLessonTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        names = tracked_files()
        if names is None:
            raise unittest.SkipTest(f"{ROOT} is not the top of a git checkout (a student release or an unpacked "
                                    "archive): there is no tracked tree to copy")
        cls.tmp = tempfile.TemporaryDirectory(prefix="new_lesson_")
        cls.root = Path(cls.tmp.name) / "workbook"
        cls.times = {}
        began = time.monotonic()
        copy_files(names, cls.root)
        cls.times["copy"] = time.monotonic() - began
        began = time.monotonic()
        cls.tool = run([sys.executable, str(TOOL), "--root", str(cls.root), SLUG, TITLE], cwd=cls.root)
        cls.times["new_lesson.py"] = time.monotonic() - began
        cls.build = None  # (status, log) once built

    @classmethod
    def tearDownClass(cls):
        print("\n" + ", ".join(f"{what} {seconds:.1f} s" for what, seconds in cls.times.items()), file=sys.stderr)
        cls.tmp.cleanup()

    def setUp(self):
        self.assertEqual(self.tool.returncode, 0, self.tool.stdout)

    def path(self, relative: str) -> Path:
        return self.root / relative

    def built(self):
        """Configures and builds the lesson's targets once, for the tests that need them; skips without
        the tools CI has."""
        missing = [tool for tool in ("cmake", "ninja") if shutil.which(tool) is None]
        nvcc = cuda_compiler()
        if missing or nvcc is None:
            self.skipTest("cannot build here: no " + ", ".join(missing + ([] if nvcc else ["nvcc ($CUDACXX, PATH, "
                                                                                       "/usr/local/cuda/bin)"])))
        cls = type(self)
        if cls.build is None:
            began = time.monotonic()
            configure = run(["cmake", "-S", str(self.root), "-B", str(self.root / "build"), "-G", "Ninja",
                             "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                             "-DCMAKE_CUDA_ARCHITECTURES=75", "-DWORKBOOK_BUILD_DOCS=OFF",
                             "-DWORKBOOK_BUILD_TESTS=OFF",
                             # the plain student as the tree "submission", built only on a GPU (below)
                             f"-DWORKBOOK_SUBMISSION_DIR={self.root / PLAIN}"], cwd=self.root)
            cls.times["configure"] = time.monotonic() - began
            if configure.returncode != 0:
                cls.build = (configure.returncode, "cmake configure failed:\n" + configure.stdout[-6000:])
            else:
                began = time.monotonic()
                build = run(["cmake", "--build", str(self.root / "build"), "--parallel", str(os.cpu_count() or 2),
                             "--target", *TARGETS], cwd=self.root, timeout=1200)
                cls.times["build"] = time.monotonic() - began
                cls.build = (build.returncode, "the build failed:\n" + build.stdout[-6000:])
        self.assertEqual(cls.build[0], 0, cls.build[1])
        return self.root / "build"

    # ---- the files ------------------------------------------------------------------------------

    def test_the_lesson_has_its_files_in_every_tree(self):
        for relative in (f"lessons/{SLUG}/README.md", f"lessons/{SLUG}/{NAME}.hpp", f"lessons/{SLUG}/examples/{NAME}.cu",
                         f"exercises/{SLUG}/{NAME}.cu", f"solutions/{SLUG}/{NAME}.cu",
                         f"grader/{SLUG}/{NAME}_test.cu", f"grader/{SLUG}/benchmark.hpp", f"{PLAIN}/{SLUG}/{NAME}.cu"):
            self.assertTrue(self.path(relative).is_file(), relative)
        self.assertIn("No sweep was declared", self.tool.stdout)

    def test_the_manifest_entry_is_one_task_with_three_hints_still_to_write(self):
        [lesson] = [l for l in load_manifest(self.path("lessons/manifest.json")) if l.slug == SLUG]
        self.assertEqual((lesson.title, lesson.sources, lesson.sanitizers), (TITLE, [f"{NAME}.cu"], ["memcheck"]))
        [task] = lesson.tasks
        self.assertGreater(task.correctness_points, 0)
        self.assertEqual((task.performance_points, task.perf_metric), (2, "fraction_of_copy_bandwidth"))
        self.assertEqual(len(task.hints), 3)
        self.assertEqual(len(set(task.hints)), 3, "a nudge, the concept, near the answer: three different hints")
        for hint in task.hints:
            self.assertTrue(hint.startswith("(to write: "), hint)
        self.assertEqual([l.slug for l in load_manifest(self.path("lessons/manifest.json"))][-1], SLUG)

    def test_shared_files_only_gain_the_new_lessons_lines(self):
        for relative in SHARED:
            old, new = (ROOT / relative).read_text().splitlines(), self.path(relative).read_text().splitlines()
            diff = list(difflib.ndiff(old, new))
            removed = [line[2:] for line in diff if line.startswith("- ")]
            added = [line[2:] for line in diff if line.startswith("+ ")]
            self.assertTrue(added, f"{relative}: nothing added")
            # At most one line changes: where the last entry gains a comma, or its closing braces move on.
            self.assertLessEqual(len(removed), 1, f"{relative}: lines changed or removed, not only added: {removed}")
            for line in removed:
                self.assertIn(line.rstrip("},"), [a.rstrip("},") for a in added], f"{relative}: {line!r} changed")
            if relative != "README.md":
                self.assertTrue(any(SLUG in line for line in added), f"{relative}: the new lesson is not in it")
        old_hints, new_hints = (ROOT / "grader/hints.json").read_text(), self.path("grader/hints.json").read_text()
        changed = [line for line in difflib.ndiff(old_hints.splitlines(), new_hints.splitlines()) if line[:2] == "+ "]
        self.assertEqual(len(changed), 3, "\n".join(changed))
        self.assertTrue(all(f'"{SLUG}": [1]' in line and '"lessons"' in line for line in changed), changed)

    def test_the_contract_hints_are_registered_for_the_new_task(self):
        hints = {h["id"]: h["lessons"] for h in json.loads(self.path("grader/hints.json").read_text())["hints"]}
        for hint_id in ("default-stream", "device-synchronize", "synchronous-copy"):
            self.assertEqual(hints[hint_id][SLUG], [1], hint_id)
        listed = self.path(f"lessons/{SLUG}/README.md").read_text()
        self.assertIn("#hint-default-stream", listed)

    def test_the_readme_quotes_the_example_and_has_the_task_heading(self):
        text = self.path(f"lessons/{SLUG}/README.md").read_text()
        self.assertIn(f"<!-- snippet: lessons/{SLUG}/examples/{NAME}.cu kernel -->\n```cpp\n// out[i] = i", text)
        for heading in (f"# Lesson {NEXT}: Scaffold check", "## What you will learn", "## Worked example", "## Task 1",
                        "## When the grader says no"):
            self.assertIn(heading, text)
        self.assertIn(f"| {NEXT} | [{TITLE}](lessons/{SLUG}/README.md) | 1 | 5 |", self.path("README.md").read_text())

    def test_the_expected_verdicts_name_the_new_task(self):
        def verdict(relative):
            return json.loads(self.path(relative).read_text())[SLUG]
        self.assertEqual(verdict("grader/tests/expected/exercises.json"),
                         {"1": {"correctness": "not_implemented", "performance": "not_run"}})
        for relative in ("grader/tests/expected/solutions.json", "grader/tests/students/plain/expected.json"):
            self.assertEqual(verdict(relative), {"1": {"correctness": "passed", "performance": "passed"}}, relative)

    # ---- the project's own checks, in the copy --------------------------------------------------

    def test_every_generators_check_passes_there(self):
        for command in (["-m", "grader.driver.skeleton", "--check"], ["tools/lesson_index.py", "--check"],
                        ["tools/snippets.py", "--check"], ["tools/hint_catalogue.py", "--check"]):
            result = run([sys.executable, *command], cwd=self.root)
            self.assertEqual(result.returncode, 0, f"{' '.join(command)}:\n{result.stdout}")

    def test_the_skeleton_is_untouched_and_the_others_are_not(self):
        recorded = skeleton.load(self.root)
        self.assertEqual(recorded[SLUG]["1"]["function"], "scale")
        self.assertEqual(skeleton.state(recorded, self.path("exercises"), SLUG, 1), skeleton.UNTOUCHED)
        self.assertEqual(skeleton.state(recorded, self.path("solutions"), SLUG, 1), skeleton.CHANGED)
        self.assertEqual(skeleton.state(recorded, self.path(PLAIN), SLUG, 1), skeleton.CHANGED)

    def test_the_projects_tests_of_lessons_hints_and_documents_pass_there(self):
        result = run([sys.executable, "-m", "unittest", "test_manifest", "test_skeleton", "test_hints", "test_project"],
                     cwd=self.path("grader/tests"))
        self.assertEqual(result.returncode, 0, result.stdout[-6000:])

    # ---- built and graded -----------------------------------------------------------------------

    def test_the_grader_programs_list_the_tasks_tests(self):
        build = self.built()
        for tree in ("exercises", "solutions"):
            listed = run([str(build / f"grade_{SLUG}__{tree}"), "--list-tests"], cwd=build)
            self.assertEqual(listed.returncode, 0, listed.stdout)
            self.assertIn("Task 1: scale is right for every size", listed.stdout)
            self.assertIn("Task 1: scale keeps its contract at every size", listed.stdout)
            self.assertIn("Task 1: scale bandwidth against the copy bandwidth", listed.stdout)
            self.assertEqual(listed.stdout.count("[task_1]"), 3, listed.stdout)

    def test_the_worked_example_runs_or_says_it_needs_a_gpu(self):
        build = self.built()
        example = run([str(build / f"example_{SLUG}_{NAME}")], cwd=build,
                      env=dict(os.environ, CUDA_VISIBLE_DEVICES="-1"))
        self.assertEqual(example.returncode, 77, example.stdout)  # no GPU visible: "skipped", as ctest reads it
        self.assertIn("needs a GPU", example.stdout)

    def test_grading_without_a_gpu_exits_3_and_every_task_says_why(self):
        build = self.built()
        results = self.path("grade-results/results.json")
        graded = run([sys.executable, "grade", "--no-build", "--build-dir", str(build), NEXT], cwd=self.root,
                     env=dict(os.environ, CUDA_VISIBLE_DEVICES="-1"))
        self.assertEqual(graded.returncode, 3, graded.stdout)
        self.assertIn(f"Compiled: {SLUG}.", graded.stdout)
        tests = json.loads(results.read_text())["tests"]
        self.assertEqual([tuple(t["tags"]) for t in tests],
                         [(SLUG, "task_1", "correctness"), (SLUG, "task_1", "performance")])
        correctness, performance = tests
        self.assertEqual(correctness["extra_data"]["status"], "skipped", correctness)
        self.assertIn("not run: No GPU to run on", correctness["output"])
        self.assertEqual((correctness["score"], correctness["max_score"]), (0, 3.0))
        self.assertEqual(performance["extra_data"]["status"], "not_run", performance)
        self.assertIn("not timed: correctness must pass first", performance["output"])
        self.assertEqual((performance["score"], performance["max_score"]), (0, 2.0))

    def test_on_a_gpu_the_verdicts_are_those_the_tool_wrote(self):
        # Graded for real where a GPU is visible (tools/gpu_check.sh runs this module there): the
        # skeleton "not implemented yet", the reference and the plain student every point, through
        # the copy's check_grades.py. Without a GPU it says so (77), and the test above covers that.
        build = self.built()
        for tree, expected, target in (("exercises", "grader/tests/expected/exercises.json", None),
                                       ("solutions", "grader/tests/expected/solutions.json", None),
                                       (PLAIN, f"{PLAIN}/expected.json", f"grade_{SLUG}__submission")):
            if target:
                made = run(["cmake", "--build", str(build), "--target", target], cwd=self.root, timeout=1200)
                self.assertEqual(made.returncode, 0, made.stdout[-6000:])
            expect = self.root / f"expected_{Path(tree).name}_{SLUG}.json"
            expect.write_text(json.dumps({SLUG: json.loads(self.path(expected).read_text())[SLUG]}))
            checked = run([sys.executable, str(self.path("grader/tests/check_grades.py")), "--build-dir", str(build),
                           "--tree", str(self.path(tree)), "--expect", str(expect)], cwd=self.root, timeout=900)
            if checked.returncode == 77:
                self.skipTest("no GPU: ./grade said so (exit 3); the verdicts without a GPU are checked above")
            self.assertEqual(checked.returncode, 0, f"{tree}:\n{checked.stdout[-6000:]}")


class ArgumentsTest(unittest.TestCase):
    """Refusals, on a copy of the files the tool reads: exit status 2, the reason, nothing written."""
    READ = ("lessons/manifest.json", "grader/hints.json", "grader/tests/expected/exercises.json",
            "grader/tests/expected/solutions.json", "grader/tests/students/plain/expected.json")

    def setUp(self):
        if not all((ROOT / name).is_file() for name in self.READ):
            self.skipTest("a student release: no expected verdicts of the solutions to add a lesson to")
        self.tmp = tempfile.TemporaryDirectory(prefix="new_lesson_args_")
        self.root = Path(self.tmp.name)
        copy_files(self.READ, self.root)

    def tearDown(self):
        self.tmp.cleanup()

    def refused(self, *args, because: str):
        before = snapshot(self.root)
        result = subprocess.run([sys.executable, str(TOOL), "--root", str(self.root), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn(because, " ".join(result.stderr.split()), args)
        self.assertEqual(result.stdout, "", "a refused lesson writes nothing")
        self.assertEqual(snapshot(self.root), before, "a refused lesson changes nothing")

    def test_a_slug_that_is_not_two_digits_and_a_name(self):
        for slug in ("6_scans", "006_scans", "06-scans", "06_Scans", "06_", "scans", "06_3d_stencil", "06 scans"):
            with self.subTest(slug=slug):
                self.refused(slug, "Scans", because="is not a lesson slug: two digits, an underscore")

    def test_a_lesson_that_exists(self):
        self.refused("05_streams", "Streams again", because="lesson 05_streams exists already")

    def test_a_number_not_after_the_last_lessons(self):
        before = f"{LAST - 1:02d}"
        self.refused(f"{before}_scans", "Scans",
                     because=f"lesson number {before} is not after the last lesson's ({LAST:02d}, {LAST_SLUG})")
        self.refused(f"{LAST:02d}_scans", "Scans", because=f"a new lesson is numbered {NEXT} or later")

    def test_a_folder_of_that_slug_that_is_already_there(self):
        (self.root / "solutions" / f"{NEXT}_scans").mkdir(parents=True)
        self.refused(f"{NEXT}_scans", "Scans", because=f"solutions/{NEXT}_scans exists already")

    def test_a_title_that_is_not_one_line_for_the_lesson_table(self):
        for title in ("", "Scans | prefix sums", "Scans\nand more", " Scans"):
            with self.subTest(title=title):
                self.refused(f"{NEXT}_scans", title, because="must be one line of text without '|'")

    def test_a_manifest_laid_out_otherwise(self):
        manifest = self.root / "lessons" / "manifest.json"
        manifest.write_text(json.dumps(json.loads(manifest.read_text()), indent=4) + "\n")
        self.refused(f"{NEXT}_scans", "Scans", because="is not laid out as json.dumps(..., indent=2) writes it")

    def test_a_folder_that_is_not_the_project(self):
        (self.root / "lessons" / "manifest.json").unlink()
        self.refused(f"{NEXT}_scans", "Scans", because="has no lessons/manifest.json: is --root the project's top folder?")

    def test_help_shows_an_example_and_says_no_sweep_is_declared(self):
        result = subprocess.run([sys.executable, str(TOOL), "--help"], stdout=subprocess.PIPE, text=True)
        self.assertEqual(result.returncode, 0)
        text = " ".join(result.stdout.split())
        self.assertIn(f'tools/new_lesson.py {NEXT}_scans "Scans:', text)
        self.assertIn("--root", text)
        self.assertIn("The placeholder task is timed: its [task_1][perf] test measures scale at benchmark.hpp's size",
                      text)
        self.assertIn("It declares no sweep: a lesson that gets one adds tools/bench/NN_name.cu, which includes the "
                      "same benchmark.hpp, and its manifest entry's \"sweep\"", text)


if __name__ == "__main__":
    unittest.main()
