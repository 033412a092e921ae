"""Build helpers: compiler errors pulled out of a build log, trees found in the build index, every
lesson built in one run of the build tool."""
import unittest
from pathlib import Path

from helpers import phase  # noqa: F401  (puts the driver on sys.path)
from driver.build import first_errors, programs, tree_name_for

NINJA_LOG = """\
[1/3] Building CUDA object CMakeFiles/impl.dir/vector_add.cu.o
FAILED: CMakeFiles/impl_01_vector_add__submission.dir/vector_add.cu.o
/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -O3 -x cu -c /tmp/bob/01_vector_add/vector_add.cu -o x.o
/tmp/bob/01_vector_add/vector_add.cu(27): error: identifier "undefined_thing" is undefined
    int x = undefined_thing;
1 error detected in the compilation of "/tmp/bob/01_vector_add/vector_add.cu".
ninja: build stopped: subcommand failed.
"""


class FirstErrorsTest(unittest.TestCase):
    def test_keeps_the_error_and_its_source_line_and_drops_the_noise(self):
        text = first_errors(NINJA_LOG)
        self.assertIn('vector_add.cu(27): error: identifier "undefined_thing" is undefined', text)
        self.assertIn("int x = undefined_thing;", text)
        self.assertNotIn("FAILED:", text)
        self.assertNotIn("-forward-unknown-to-host-compiler", text)
        self.assertNotIn("ninja:", text)

    def test_a_link_error_is_kept(self):
        text = first_errors("[3/3] Linking\n/usr/bin/ld: x.o: undefined reference to `vector_add_host'\n")
        self.assertIn("undefined reference to `vector_add_host'", text)

    def test_without_recognisable_errors_the_end_of_the_log_is_shown(self):
        self.assertIn("something odd", first_errors("a\nb\nsomething odd"))


class IndexTest(unittest.TestCase):
    def test_trees_are_found_by_directory(self):
        index = {"trees": {"exercises": {"dir": "/r/exercises", "lessons": {"01_vector_add": "/b/g"}}}}
        self.assertEqual(tree_name_for(index, Path("/r/exercises")), "exercises")
        self.assertIsNone(tree_name_for(index, Path("/r/other")))
        self.assertIsNone(tree_name_for(None, Path("/r/exercises")))
        self.assertEqual(programs(index, "exercises"), {"01_vector_add": "/b/g"})
        self.assertEqual(programs(index, "solutions"), {})


class BuildLessonsTest(unittest.TestCase):
    """./grade builds every lesson's program and the reference's in one run of the build tool;
    only when that fails does it build each target alone, for each one's own errors."""

    def setUp(self):
        from driver import build, cli
        from driver.manifest import load_manifest
        self.build, self.cli = build, cli
        root = Path(__file__).resolve().parents[2]
        self.lessons = [l for l in load_manifest(root / "lessons" / "manifest.json")
                        if l.slug in ("01_vector_add", "02_multiply_add", "03_matmul")]
        self.programs = {l.slug: f"/b/grade_{l.slug}__alice" for l in self.lessons}

    def run_build(self, together_ok, failing=()):
        import contextlib
        import io
        from unittest import mock
        calls = []
        reference = {l.slug: f"/b/grade_{l.slug}__solutions" for l in self.lessons}

        def alone(build_dir, target):
            calls.append(target)
            return (target not in failing, f"x.cu(3): error: {target} does not compile\n")
        with mock.patch.object(self.build, "build_targets", return_value=together_ok) as together, \
                mock.patch.object(self.build, "build_target", side_effect=alone), \
                contextlib.redirect_stdout(io.StringIO()) as out:
            failures = self.cli.build_lessons(Path("/b"), self.lessons, "alice", Path("/t/alice"), self.programs,
                                              reference)
        return together.call_args[0][1], calls, failures, reference, out.getvalue()

    def test_every_target_in_one_build(self):
        targets, alone, failures, reference, out = self.run_build(True)
        self.assertEqual(sorted(targets), sorted([f"grade_{l.slug}__alice" for l in self.lessons] +
                                                 [f"grade_{l.slug}__solutions" for l in self.lessons]))
        self.assertEqual((alone, failures, len(reference)), ([], {}, 3))
        self.assertIn("Building 01_vector_add, 02_multiply_add, 03_matmul from /t/alice", out)

    def test_a_failed_build_names_the_lessons_that_do_not_compile(self):
        _, alone, failures, reference, _ = self.run_build(
            False, failing=("grade_02_multiply_add__alice", "grade_03_matmul__solutions"))
        self.assertEqual(len(alone), 6)  # each target alone: the built ones return at once
        self.assertEqual(list(failures), ["02_multiply_add"])
        self.assertIn("grade_02_multiply_add__alice does not compile", failures["02_multiply_add"])
        self.assertEqual(sorted(reference), ["01_vector_add", "02_multiply_add"])  # its reference dropped

    def test_keep_going_follows_the_generator(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(self.build.keep_going(Path(d)), ["-k"])  # no cache: make's flag
            (Path(d) / "CMakeCache.txt").write_text("CMAKE_GENERATOR:INTERNAL=Ninja\n")
            self.assertEqual(self.build.keep_going(Path(d)), ["-k", "0"])


if __name__ == "__main__":
    unittest.main()
