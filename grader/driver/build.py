"""Configures and builds the grader programs with CMake, one lesson at a time, so a
lesson that does not compile is reported as such while the others are still graded."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Optional, Tuple


class BuildError(Exception):
    """The build itself (not a student's lesson) could not be set up."""


def load_index(build_dir: Path) -> Optional[dict]:
    """The build index CMake writes (workbook_build.json), or None before the first configure."""
    path = Path(build_dir) / "workbook_build.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())


def tree_name_for(index: Optional[dict], tree_dir: Path) -> Optional[str]:
    """The name under which the build knows the tree at `tree_dir`, if it does."""
    if not index:
        return None
    for name, tree in index.get("trees", {}).items():
        if Path(tree["dir"]).resolve() == Path(tree_dir).resolve():
            return name
    return None


def _run(command, cwd=None) -> Tuple[bool, str]:
    process = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return process.returncode == 0, process.stdout.decode("utf-8", errors="replace")


def configure(source_dir: Path, build_dir: Path, submission_dir: Optional[Path] = None) -> dict:
    """Configures `build_dir` (Release, no tests, no docs) and returns its build index."""
    if shutil.which("cmake") is None:
        raise BuildError("cmake was not found on PATH: install CMake 3.25 or newer.")
    command = ["cmake", "-S", str(source_dir), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
               "-DWORKBOOK_BUILD_TESTS=OFF", "-DWORKBOOK_BUILD_DOCS=OFF",
               f"-DWORKBOOK_SUBMISSION_DIR={submission_dir or ''}"]
    if not (Path(build_dir) / "CMakeCache.txt").exists() and shutil.which("ninja"):
        command += ["-G", "Ninja"]
    ok, log = _run(command)
    if not ok:
        raise BuildError("CMake could not configure the grader build:\n" + first_errors(log, 30))
    index = load_index(build_dir)
    if index is None:
        raise BuildError(f"CMake ran but wrote no {build_dir}/workbook_build.json")
    return index


def build_target(build_dir: Path, target: str) -> Tuple[bool, str]:
    """Builds one target; returns (success, the build's output)."""
    return _run(["cmake", "--build", str(build_dir), "--target", target, "--parallel", str(os.cpu_count() or 2)])


_ERROR_LINE = re.compile(r"(\berror\b|undefined reference|multiple definition)")
_BUILD_TOOL_NOISE = re.compile(r"^(FAILED:|ninja:|g?make(\[\d+\])?:|\[\s*\d+%\])")


def first_errors(log: str, max_lines: int = 20) -> str:
    """The compiler's errors in a build log, each with the source line it quotes, at most
    max_lines; the build tool's own lines and command lines are left out."""
    lines = log.splitlines()
    picked = []
    skip_command = False
    for i, line in enumerate(lines):
        if skip_command:  # the line after ninja's "FAILED:" is the whole compiler command
            skip_command = False
            continue
        if line.startswith("FAILED:"):
            skip_command = True
            continue
        if _ERROR_LINE.search(line) and not _BUILD_TOOL_NOISE.match(line):
            picked.append(line)
            if i + 1 < len(lines) and not _ERROR_LINE.search(lines[i + 1]) and not _BUILD_TOOL_NOISE.match(lines[i + 1]):
                picked.append(lines[i + 1])
        if len(picked) >= max_lines:
            break
    return "\n".join(picked[:max_lines]) if picked else "\n".join(lines[-max_lines:])


def prepare(root: Path, build_dir: Path, tree_dir: Path, no_build: bool) -> Tuple[dict, str]:
    """The build index and the name of `tree_dir` in it, configuring the build first when
    it does not know the tree yet (unless no_build). Raises BuildError."""
    index = load_index(build_dir)
    tree = tree_name_for(index, tree_dir)
    if not no_build:
        if index is None or tree is None:
            builtin = Path(tree_dir).resolve() in ((root / "exercises").resolve(), (root / "solutions").resolve())
            print(f"Configuring the build in {build_dir} ...", flush=True)
            index = configure(root, build_dir, None if builtin else tree_dir)
            tree = tree_name_for(index, tree_dir)
        ok, log = build_target(build_dir, "workbook_device_info")
        if not ok:
            raise BuildError("the helper library does not compile:\n" + first_errors(log))
    if index is None or tree is None:
        raise BuildError(f"{build_dir} has no programs for {tree_dir}; run again without --no-build first")
    return index, tree


def grader_target(slug: str, tree: str) -> str:
    return f"grade_{slug}__{tree}"


def programs(index: dict, tree: str) -> Dict[str, str]:
    """Lesson slug -> grader program for the named tree."""
    return dict(index.get("trees", {}).get(tree, {}).get("lessons", {}))


def sweep_target(slug: str, tree: str) -> str:
    return f"sweep_{slug}__{tree}"


def sweep_programs(index: dict, tree: str) -> Dict[str, str]:
    """Lesson slug -> sweep program for the named tree (lessons that have a sweep)."""
    return dict(index.get("trees", {}).get(tree, {}).get("sweeps", {}))
