"""Project-level promises: CI runs the README's test command verbatim, and the lessons'
code blocks, the README's lesson table and the hint catalogue (grader/README.md and each
lesson's "When the grader says no") are generated from their sources."""
import re
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class ProjectTest(unittest.TestCase):
    def quick_start(self):
        readme = (ROOT / "README.md").read_text()
        section = re.search(r"## Quick start\n(.*?)\n## ", readme, re.S)
        self.assertIsNotNone(section, "README.md needs a Quick start section")
        blocks = re.findall(r"```sh\n(.*?)```", section.group(1), re.S)
        self.assertTrue(blocks, "README.md's Quick start needs sh blocks")
        return [line.split("#")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]

    def test_quick_start_is_two_commands_grade_one_lesson_then_test(self):
        commands = self.quick_start()
        self.assertEqual(len(commands), 2)
        # A newcomer's first command grades one lesson (a short build), not all of them.
        self.assertRegex(commands[0], r"^\./grade \d\d$")
        readme = (ROOT / "README.md").read_text()
        self.assertLess(readme.index(commands[0]), readme.index("lessons/01_vector_add/README.md"),
                        "the first command comes before the lesson to read")

    def test_ci_runs_the_readme_test_command_verbatim(self):
        test_command = self.quick_start()[1]
        ci = (ROOT / ".ci" / "run").read_text().splitlines()
        self.assertIn(test_command, [line.strip() for line in ci])

    def test_ci_installs_with_the_users_script_from_apts_own_mirror(self):
        ci = (ROOT / ".ci" / "run").read_text()
        self.assertRegex(ci, r"(?m)^tools/install_deps\.sh\b", ".ci/run must call the script README.md gives users")
        for path in (ROOT / ".ci" / "run", ROOT / "tools" / "install_deps.sh"):
            code = "\n".join(line.split("#")[0] for line in path.read_text().splitlines())
            self.assertNotRegex(code, r"[a-z]+://", f"{path.name} must take the mirror from apt, not name a host")

    def test_install_script_dry_run_knows_this_machine(self):
        result = subprocess.run(["bash", str(ROOT / "tools" / "install_deps.sh"), "--dry-run"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = result.stdout.decode()
        os_release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
        known = any(f"VERSION_CODENAME={c}" in os_release for c in ("bookworm", "trixie", "jammy", "noble"))
        if not known:
            self.assertEqual(result.returncode, 1, out)
            self.assertIn("knows Debian", out)
            return
        self.assertEqual(result.returncode, 0, out)
        self.assertIn("apt-get install", out)
        self.assertIn("python3-matplotlib", out)

    def test_lesson_code_blocks_match_their_sources(self):
        result = subprocess.run([sys.executable, str(ROOT / "tools" / "snippets.py"), "--check"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(result.returncode, 0, result.stdout.decode())

    def test_readme_lesson_table_matches_the_manifest(self):
        result = subprocess.run([sys.executable, str(ROOT / "tools" / "lesson_index.py"), "--check"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(result.returncode, 0, result.stdout.decode())

    def test_hint_catalogue_and_lesson_lists_match_the_registry(self):
        result = subprocess.run([sys.executable, str(ROOT / "tools" / "hint_catalogue.py"), "--check"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(result.returncode, 0, result.stdout.decode())


if __name__ == "__main__":
    unittest.main()
