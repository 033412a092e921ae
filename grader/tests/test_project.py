"""Project-level promises: CI runs the README's test command verbatim and builds everything with
CUDA 12.4 through the project's own script, and the lessons' code blocks, the README's lesson
table and the hint catalogue (grader/README.md and each lesson's "When the grader says no") are
generated from their sources."""
import json
import os
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

    def slots_for(self, smi_output, smi_status=0, **definitions):
        """The slots cmake/GpuTestSlots.cmake writes where nvidia-smi prints smi_output and exits
        with smi_status, and what it said (None and what it said, where it stopped with an error)."""
        with tempfile.TemporaryDirectory() as tmp:
            smi = Path(tmp) / "nvidia-smi"  # named to the function, so no real one is asked
            smi.write_text(f"#!/bin/sh\nprintf '%s' '{smi_output}'\nexit {smi_status}\n")
            smi.chmod(0o755)
            script = Path(tmp) / "slots.cmake"
            spec = Path(tmp) / "slots.json"
            script.write_text(f'include("{ROOT}/cmake/GpuTestSlots.cmake")\n'
                              f'workbook_write_gpu_test_slots("{spec}")\n')
            args = [f"-DWORKBOOK_NVIDIA_SMI={smi}"] + [f"-D{k}={v}" for k, v in definitions.items()]
            result = subprocess.run(["cmake", *args, "-P", str(script)], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)
            said = result.stdout.decode()
            if result.returncode != 0:
                return None, said
            local = json.loads(spec.read_text())["local"]
            self.assertEqual(len(local[0]["gpus"]), 1)
            return local[0]["gpus"][0]["slots"], said

    def test_gpu_test_slots_follow_the_gpus_memory_and_the_cores(self):
        cores = os.cpu_count() or 1
        for mib in (81559, 143771, 23028, 15360):  # H100, H200, A10, T4
            slots, said = self.slots_for(f"{mib}, Disabled\n{mib + 8192}, [N/A]\n")  # two GPUs: the smaller counts
            self.assertEqual(slots, max(2, min(12, mib // 6144, cores)), said)
            self.assertIn(f"{mib} MiB", said)
        for unsure in ("81559, Enabled\n", "[N/A], [N/A]\n"):  # a MIG slice; a memory it cannot read
            slots, said = self.slots_for(unsure)
            self.assertEqual(slots, 2, said)
            self.assertIn("MIG mode, or its memory not readable", said)
        for no_gpu, status in (("NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver", 9),
                               ("No devices were found\n", 6), ("No devices were found\n", 0)):
            slots, said = self.slots_for(no_gpu, status)
            self.assertEqual(slots, 12, said)
            self.assertIn("no GPU visible", said)
        self.assertEqual(self.slots_for("81559, Disabled\n", WORKBOOK_GPU_TEST_SLOTS=3)[0], 3)
        for bad in ("1", "x"):
            slots, said = self.slots_for("81559, Disabled\n", WORKBOOK_GPU_TEST_SLOTS=bad)
            self.assertIsNone(slots)
            self.assertIn("2 or more", said)

    def test_ctest_reads_the_slots_and_keeps_to_them(self):
        """The spec the configure writes is one ctest accepts: tests asking for one slot or two run,
        one asking for more slots than there are does not."""
        with tempfile.TemporaryDirectory() as tmp:
            source, build = Path(tmp) / "src", Path(tmp) / "build"
            source.mkdir()
            (source / "CMakeLists.txt").write_text(f"""cmake_minimum_required(VERSION 3.25)
project(slots NONE)
enable_testing()
include("{ROOT}/cmake/GpuTestSlots.cmake")
workbook_write_gpu_test_slots(${{CMAKE_BINARY_DIR}}/gpu_test_slots.json)
foreach(groups IN ITEMS "gpus:1" "2,gpus:1" "9,gpus:1")
  string(MAKE_C_IDENTIFIER "g${{groups}}" name)
  add_test(NAME ${{name}} COMMAND ${{CMAKE_COMMAND}} -E echo ran)
  set_tests_properties(${{name}} PROPERTIES RESOURCE_GROUPS "${{groups}}")
endforeach()
""")
            configured = subprocess.run(["cmake", "-S", str(source), "-B", str(build), "-DWORKBOOK_GPU_TEST_SLOTS=2"],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.assertEqual(configured.returncode, 0, configured.stdout.decode())
            ran = subprocess.run(["ctest", "--test-dir", str(build), "-j", "4", "--resource-spec-file",
                                  str(build / "gpu_test_slots.json")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = ran.stdout.decode()
            self.assertRegex(out, r"ggpus_1 \.+ +Passed", out)
            self.assertRegex(out, r"g2_gpus_1 \.+ +Passed", out)
            self.assertRegex(out, r"g9_gpus_1 \.+\*+Not Run", out)  # 9 slots asked, 2 there

    def test_the_test_preset_runs_gradings_side_by_side_in_the_slots_the_configure_writes(self):
        presets = json.loads((ROOT / "CMakePresets.json").read_text())
        configure = next(p for p in presets["configurePresets"] if p["name"] == "test")
        test = next(p for p in presets["testPresets"] if p["name"] == "test")
        self.assertEqual(test["execution"]["resourceSpecFile"], configure["binaryDir"] + "/gpu_test_slots.json")
        self.assertGreaterEqual(test["execution"]["jobs"], 14, "room for the host tests beside 12 gradings")
        top = (ROOT / "CMakeLists.txt").read_text()
        self.assertIn("workbook_write_gpu_test_slots(${CMAKE_BINARY_DIR}/gpu_test_slots.json)", top)
        # The GPU tests that are not gradings hold the GPU lock shared, so none runs while a
        # grading times (grader/tests/with_gpu_lock.py).
        for path, target in (("common/CMakeLists.txt", "common_tests"), ("grader/CMakeLists.txt", "grader_support_tests")):
            self.assertIn(f"set_property(TARGET {target} PROPERTY CROSSCOMPILING_EMULATOR ${{WORKBOOK_GPU_TEST_LAUNCHER}})",
                          (ROOT / path).read_text())
        self.assertIn("COMMAND ${WORKBOOK_GPU_TEST_LAUNCHER} $<TARGET_FILE:example_${slug}_${name}>",
                      (ROOT / "cmake" / "Workbook.cmake").read_text())
        tests = (ROOT / "grader" / "tests" / "CMakeLists.txt").read_text()
        self.assertIn("set_tests_properties(${e2e_tests} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 RESOURCE_GROUPS gpus:1)",
                      tests)

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
