"""Two gradings in one build directory: every tree gets programs of its own (a name from its
path, listed in the registry CMake reads), reports of its own, and only one process at a
time runs CMake or the build tool there."""
import contextlib
import io
import json
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

from helpers import phase  # noqa: F401  (puts the driver on sys.path)
from driver import build, cli
from lock_helpers import Holder

ROOT = Path(__file__).resolve().parents[2]


class TreeNameTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_exercises_and_solutions_keep_their_names(self):
        self.assertEqual(build.tree_name(ROOT, ROOT / "exercises"), "exercises")
        self.assertEqual(build.tree_name(ROOT, ROOT / "solutions"), "solutions")

    def test_another_tree_is_named_after_its_folder_and_a_hash_of_its_path(self):
        tree = self.base / "Alice Smith-2"
        tree.mkdir()
        name = build.tree_name(ROOT, tree)
        self.assertRegex(name, r"^alice_smith_2_[0-9a-f]{8}$")
        self.assertEqual(build.tree_name(ROOT, self.base / "x" / ".." / "Alice Smith-2"), name)  # same path

    def test_two_folders_of_the_same_name_get_two_names(self):
        (self.base / "1" / "alice").mkdir(parents=True)
        (self.base / "2" / "alice").mkdir(parents=True)
        one, two = build.tree_name(ROOT, self.base / "1" / "alice"), build.tree_name(ROOT, self.base / "2" / "alice")
        self.assertNotEqual(one, two)
        self.assertTrue(one.startswith("alice_") and two.startswith("alice_"))


class RegistryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base = Path(self.tmp.name)
        self.build_dir = self.base / "build"
        for name in ("alice", "bob"):
            (self.base / name / "01_vector_add").mkdir(parents=True)

    def tearDown(self):
        self.tmp.cleanup()

    def registry(self) -> dict:
        return json.loads((self.build_dir / build.REGISTRY).read_text())

    def test_two_trees_two_entries_the_same_tree_twice_one(self):
        alice, bob = self.base / "alice", self.base / "bob"
        self.assertTrue(build.register_tree(self.build_dir, build.tree_name(ROOT, alice), alice))
        self.assertTrue(build.register_tree(self.build_dir, build.tree_name(ROOT, bob), bob))
        self.assertFalse(build.register_tree(self.build_dir, build.tree_name(ROOT, alice), alice))
        self.assertEqual(self.registry(), {build.tree_name(ROOT, alice): str(alice.resolve()),
                                           build.tree_name(ROOT, bob): str(bob.resolve())})

    def test_a_tree_that_is_gone_is_dropped(self):
        gone = self.base / "gone"
        gone.mkdir()
        build.register_tree(self.build_dir, "gone_00000000", gone)
        gone.rmdir()
        build.register_tree(self.build_dir, "alice_11111111", self.base / "alice")
        self.assertEqual(list(self.registry()), ["alice_11111111"])

    def fake_configure(self, source_dir, build_dir):
        """What CMake does with the registry: an index with exercises/ and every registered tree."""
        trees = {"exercises": {"dir": str(ROOT / "exercises"), "lessons": {}}}
        for name, tree_dir in self.registry().items():
            trees[name] = {"dir": tree_dir, "lessons": {"01_vector_add": f"{build_dir}/grade_01_vector_add__{name}"}}
        (Path(build_dir) / "workbook_build.json").write_text(json.dumps({"trees": trees}))
        self.configured += 1
        return build.load_index(build_dir)

    def test_prepare_configures_once_per_new_tree(self):
        self.configured = 0
        with mock.patch.object(build, "configure", self.fake_configure), \
                mock.patch.object(build, "build_target", return_value=(True, "")), \
                contextlib.redirect_stdout(io.StringIO()):
            _, alice = build.prepare(ROOT, self.build_dir, self.base / "alice", no_build=False)
            _, bob = build.prepare(ROOT, self.build_dir, self.base / "bob", no_build=False)
            index, again = build.prepare(ROOT, self.build_dir, self.base / "alice", no_build=False)
            _, exercises = build.prepare(ROOT, self.build_dir, ROOT / "exercises", no_build=False)
        self.assertEqual(self.configured, 2)  # alice, then bob; nothing new after that
        self.assertEqual(again, alice)
        self.assertEqual(exercises, "exercises")
        self.assertNotEqual(build.programs(index, alice), build.programs(index, bob))
        self.assertEqual(len(self.registry()), 2)

    def test_no_build_finds_a_tree_the_build_knows_under_another_name(self):
        self.build_dir.mkdir()
        alice = (self.base / "alice").resolve()
        (self.build_dir / "workbook_build.json").write_text(json.dumps(
            {"trees": {"students_alice": {"dir": str(alice), "lessons": {"01_vector_add": "/b/g"}}}}))
        _, tree = build.prepare(ROOT, self.build_dir, alice, no_build=True)
        self.assertEqual(tree, "students_alice")


class ResultsDirTest(unittest.TestCase):
    def test_exercises_in_grade_results_another_tree_in_a_folder_of_its_own(self):
        self.assertEqual(cli.results_dir(ROOT, "exercises"), ROOT / "grade-results")
        self.assertEqual(cli.results_dir(ROOT, "solutions"), ROOT / "grade-results" / "solutions")
        self.assertEqual(cli.results_dir(ROOT, "alice_1a2b3c4d"), ROOT / "grade-results" / "alice_1a2b3c4d")

    def test_help_and_readmes_say_where_results_go(self):
        help_text = io.StringIO()
        with contextlib.redirect_stdout(help_text), self.assertRaises(SystemExit):
            cli.parse_args(["--help"], ROOT)
        for where, text in [("--help", help_text.getvalue()), ("README.md", (ROOT / "README.md").read_text()),
                            ("grader/README.md", (ROOT / "grader" / "README.md").read_text())]:
            flat = " ".join(text.split())
            self.assertIn("grade-results/<tree name>/", flat, where)

    def test_results_is_not_given_a_fixed_default(self):
        self.assertIsNone(cli.parse_args([], ROOT).results)  # so main can pick the tree's folder


class BuildLockTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = Path(self.tmp.name)
        self.env = {"TEST_BUILD_DIR": str(self.work / "build")}
        self.holders = []

    def tearDown(self):
        for holder in self.holders:
            holder.finish()
        self.tmp.cleanup()

    def start(self, name, tree):
        holder = Holder(self.work, name, "build", "EX", tree, self.env)
        self.holders.append(holder)
        return holder

    def test_the_second_process_waits_says_for_whom_then_builds(self):
        first = self.start("first", "alice_1a2b3c4d")
        first.wait_acquired()
        second = self.start("second", "bob_5e6f7a8b")
        second.wait_waiting()
        time.sleep(0.3)
        self.assertNotIn("acquired", second.output)  # still waiting while the first builds
        waiting = second.output.splitlines()[0]
        self.assertRegex(waiting, rf"^Waiting for another \./grade \(pid {first.pid}, tree alice_1a2b3c4d\) to "
                                  r"finish building in .*build \.\.\.$")
        first.finish()
        second.wait_acquired()
        self.assertIn("released", first.output)
        second.finish()
        self.assertEqual((first.process.returncode, second.process.returncode), (0, 0))

    def test_the_lock_is_reentrant_within_a_process(self):
        build_dir = self.work / "build"
        with build.locked(build_dir, "a"):
            with build.locked(build_dir, "a"):  # prepare() inside the driver's build step
                pass
            holder = json.loads((build_dir / (build.LOCK + ".holder")).read_text())
            self.assertEqual(holder["tree"], "a")
        self.assertEqual((build_dir / (build.LOCK + ".holder")).read_text(), "")  # emptied on release


if __name__ == "__main__":
    unittest.main()
