"""What a cut-short suite run left (tools/ctest_rest.py): the tests ctest -N lists that the run's
log does not show finished, as one expression for ctest -R."""
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import ctest_rest  # noqa: E402

LISTING = """Test project /work/main/build/test
  Test   #1: common.a name with spaces
  Test   #2: grader.e2e.broken_hang_is_caught
  Test  #12: grader.threshold.lesson 01 threshold (plain) + one-thread [gpu]
  Test #120: tools.bench.sweep_left_out

Total Tests: 4
"""
SUITE_LOG = """        Start   2: grader.e2e.broken_hang_is_caught
  1/4 Test   #1: common.a name with spaces ..........   Passed    0.02 sec
2: Test command: /usr/bin/python3 check_grades.py
  2/4 Test   #2: grader.e2e.broken_hang_is_caught ...***Failed   31.20 sec
        Start 120: tools.bench.sweep_left_out
"""


class CtestRestTest(unittest.TestCase):
    def test_the_tests_not_finished_are_left_failed_ones_are_not(self):
        self.assertEqual(ctest_rest.left(SUITE_LOG, LISTING),
                         ["grader.threshold.lesson 01 threshold (plain) + one-thread [gpu]",
                          "tools.bench.sweep_left_out"])  # one started and cut short is left too
        self.assertEqual(ctest_rest.left("", LISTING)[0], "common.a name with spaces")
        self.assertEqual(ctest_rest.left(SUITE_LOG + "  3/4 Test  #12: x ... Passed\n  4/4 Test #120: y ... Passed\n",
                                         LISTING), [])

    def test_the_expression_matches_those_names_and_no_other(self):
        names = ctest_rest.left(SUITE_LOG, LISTING)
        expression = re.compile(ctest_rest.cmake_regex(names))  # CMake's syntax, here a subset of Python's
        for number, name in re.findall(r"#(\d+): (.+)", LISTING):
            self.assertEqual(bool(expression.search(name)), name in names, name)
        self.assertFalse(expression.search("tools.bench.sweep_left_out_too"))
        self.assertFalse(expression.search("toolsXbench.sweep_left_out"))


if __name__ == "__main__":
    unittest.main()
