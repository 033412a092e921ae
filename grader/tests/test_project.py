"""Project-level promises: CI runs the README's test command verbatim, and the lessons'
code blocks and the README's lesson table are generated from their sources."""
import re
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class ProjectTest(unittest.TestCase):
    def quick_start(self):
        readme = (ROOT / "README.md").read_text()
        block = re.search(r"## Quick start.*?```sh\n(.*?)```", readme, re.S)
        self.assertIsNotNone(block, "README.md needs a Quick start section with a sh block")
        return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]

    def test_quick_start_is_two_commands_grade_and_test(self):
        commands = self.quick_start()
        self.assertEqual(len(commands), 2)
        self.assertTrue(commands[0].startswith("./grade"))

    def test_ci_runs_the_readme_test_command_verbatim(self):
        test_command = self.quick_start()[1]
        ci = (ROOT / ".ci" / "run").read_text().splitlines()
        self.assertIn(test_command, [line.strip() for line in ci])

    def test_lesson_code_blocks_match_their_sources(self):
        result = subprocess.run([sys.executable, str(ROOT / "tools" / "snippets.py"), "--check"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(result.returncode, 0, result.stdout.decode())

    def test_readme_lesson_table_matches_the_manifest(self):
        result = subprocess.run([sys.executable, str(ROOT / "tools" / "lesson_index.py"), "--check"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(result.returncode, 0, result.stdout.decode())


if __name__ == "__main__":
    unittest.main()
