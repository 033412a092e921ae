"""Configuring without Catch2 3 stops within seconds and says what was found, why it is not
enough and how to install Catch2 3; it does not spend minutes on download retries. Runs
CMake on a two-line project that includes cmake/Catch2.cmake, with the pinned download
pointed at a file that does not exist (as if there were no network)."""
import shutil
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOWHERE = "file:///nonexistent/catch2-v3.7.1.tar.gz"

# A Catch2 2 package, as Debian 12 and Ubuntu 22.04 install it: config and version files only.
CATCH2_2_CONFIG = "set(Catch2_FOUND TRUE)\n"
CATCH2_2_VERSION = """set(PACKAGE_VERSION "2.13.10")
if(PACKAGE_FIND_VERSION_MAJOR AND NOT PACKAGE_FIND_VERSION_MAJOR EQUAL 2)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
"""


@unittest.skipIf(shutil.which("cmake") is None, "no cmake")
class Catch2MissingTest(unittest.TestCase):
    def configure(self, *options):
        with tempfile.TemporaryDirectory() as d:
            source = Path(d) / "project"
            source.mkdir()
            (source / "CMakeLists.txt").write_text(
                "cmake_minimum_required(VERSION 3.25)\nproject(probe LANGUAGES NONE)\n"
                f'include("{ROOT / "cmake" / "Catch2.cmake"}")\n')
            fake = Path(d) / "catch2-2"
            fake.mkdir()
            (fake / "Catch2Config.cmake").write_text(CATCH2_2_CONFIG)
            (fake / "Catch2ConfigVersion.cmake").write_text(CATCH2_2_VERSION)
            options = [o.replace("{fake}", str(fake)) for o in options]
            start = time.monotonic()
            p = subprocess.run(["cmake", "-S", str(source), "-B", str(Path(d) / "build"),
                                f"-DWORKBOOK_CATCH2_URL={NOWHERE}", *options],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            return p, time.monotonic() - start

    def assert_fails_fast_with_the_fix(self, p, seconds):
        p.stdout = " ".join(p.stdout.split())  # CMake wraps long messages
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertLess(seconds, 60, "configuring should stop within seconds")
        self.assertIn("Catch2 3 is needed", p.stdout)
        self.assertIn("sudo apt install catch2", p.stdout)
        self.assertIn("-t bookworm-backports libcatch2-dev", p.stdout)
        self.assertIn("FETCHCONTENT_SOURCE_DIR_CATCH2", p.stdout)
        self.assertIn(f"the download of {NOWHERE} failed", p.stdout)

    def test_no_catch2_at_all(self):
        p, seconds = self.configure("-DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON")
        self.assert_fails_fast_with_the_fix(p, seconds)
        self.assertIn("found: no Catch2 package at all", " ".join(p.stdout.split()))

    def test_catch2_2_is_named_and_refused(self):
        # Only the Catch2 2 package can be seen: the system prefixes are hidden from find_package.
        # (The build tool is then named, since CMake no longer searches for it either.)
        tool = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={shutil.which('ninja')}"] if shutil.which("ninja") else \
            [f"-DCMAKE_MAKE_PROGRAM={shutil.which('make')}"]
        p, seconds = self.configure("-DCatch2_DIR={fake}", "-DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF",
                                    "-DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF", *tool)
        self.assert_fails_fast_with_the_fix(p, seconds)
        text = " ".join(p.stdout.split())
        self.assertIn("found: Catch2 2.13.10", text)
        self.assertIn("Catch2 2 will not do", text)


if __name__ == "__main__":
    unittest.main()
