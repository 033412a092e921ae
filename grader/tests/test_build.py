"""Build helpers: compiler errors pulled out of a build log, trees found in the build index."""
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


if __name__ == "__main__":
    unittest.main()
