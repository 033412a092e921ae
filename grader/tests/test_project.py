"""Project-level promises: CI runs the README's test command verbatim and builds everything with
CUDA 12.4 through the project's own script, and the lessons' code blocks, the README's lesson
table and the hint catalogue (grader/README.md and each lesson's "When the grader says no") are
generated from their sources."""
import re
import subprocess
import sys
import tempfile
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
        for path in (ROOT / ".ci" / "run", ROOT / "tools" / "install_deps.sh", ROOT / "tools" / "apt_mirror.sh"):
            code = "\n".join(line.split("#")[0] for line in path.read_text().splitlines())
            self.assertNotRegex(code, r"[a-z]+://", f"{path.name} must take the mirror from apt, not name a host")

    def test_ci_builds_everything_with_cuda12_through_the_projects_own_script(self):
        ci = (ROOT / ".ci" / "run").read_text()
        code = "\n".join(line.split("#")[0] for line in ci.splitlines())
        self.assertRegex(code, r"(?m)^tools/ci/cuda12_toolkit\.sh\b",
                         ".ci/run must lay out CUDA 12 with tools/ci/cuda12_toolkit.sh")
        self.assertIn('-DCMAKE_CUDA_ARCHITECTURES="75;86;90"', code, "CUDA 12 is built for T4, A10 and H100")
        self.assertRegex(code, r"cmake --build build/cuda12\b.* -- -k 0", "the CUDA 12 build shows every failure")
        self.assertRegex(code, r"ctest --test-dir build/cuda12\b", "the CUDA 12 build's tests run")
        self.assertLess(code.index("cmake --workflow --preset test"), code.index("tools/ci/cuda12_toolkit.sh"),
                        "the CUDA 13 workflow comes first")
        self.assertNotIn("shared", code, "CI must not depend on ../shared")

    def test_cuda12_script_names_no_host_and_pins_its_versions(self):
        script = ROOT / "tools" / "ci" / "cuda12_toolkit.sh"
        text = script.read_text()
        code = "\n".join(line.split("#")[0] for line in text.splitlines())
        self.assertNotRegex(code, r"[a-z]+://", "it takes the mirror from apt and the index from pip")
        self.assertNotRegex(code, r"\b[a-z0-9-]+\.(org|com|net|io|dev)\b", "it names no host")
        self.assertNotIn("shared", code, "the project's script stands on its own")
        # CUDA 12.4's own versions; cuRAND numbers its releases apart (10.3.5 came with 12.4).
        own_numbering = {"nvidia-curand-cu12": "==10.3.5."}
        for name, version in re.findall(r'"(nvidia-[a-z0-9-]+-cu12)(==[0-9.a-z]+) --hash=sha256:[0-9a-f]{64}"', text):
            self.assertTrue(version.startswith(own_numbering.get(name, "==12.4.")), (name, version))
        self.assertEqual(len(re.findall(r"--hash=sha256:[0-9a-f]{64}", text)), 8, "eight wheels, each with its hash")
        self.assertRegex(text, r"DEBS=\(nvidia-cuda-toolkit=12\.4\.\S+ nvidia-cuda-dev=12\.4\.\S+\)")
        for args, status, says in (([], 2, "PREFIX"), (["--help"], 0, "PREFIX"), (["--bogus"], 2, "--help")):
            result = subprocess.run(["bash", str(script)] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.assertEqual(result.returncode, status, result.stdout.decode())
            self.assertIn(says, result.stdout.decode())

    def test_cuda12_script_refuses_a_folder_it_did_not_lay_out(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "precious.txt").write_text("keep me")
            result = subprocess.run(["bash", str(ROOT / "tools" / "ci" / "cuda12_toolkit.sh"), tmp],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = result.stdout.decode()
            if "x86_64 only" in out or "needs " in out:
                self.skipTest(f"the script cannot run on this machine: {out.strip()}")
            self.assertEqual(result.returncode, 1, out)
            self.assertIn("not a toolkit this script laid out", out)
            self.assertEqual((Path(tmp) / "precious.txt").read_text(), "keep me")

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

    def test_the_graders_copy_of_a_given_kernel_is_the_exercises(self):
        # Lesson 06's task 5: the grader profiles field_strength_as_given as "before" beside the
        # student's kernel, so it must be the kernel the exercise gives, under another name.
        def kernel(path, name):
            text = (ROOT / path).read_text()
            start = text.index(f"__global__ void {name}(")
            body = text[start:text.index("\n}\n", start)]
            body = re.sub(r"//[^\n]*", "", body).replace(name, "KERNEL")
            return " ".join(body.split())
        self.assertEqual(kernel("exercises/06_debugging_profiling/debugging_profiling.cu", "field_strength_kernel"),
                         kernel("grader/06_debugging_profiling/field_strength_as_given.cu", "field_strength_as_given"))

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
