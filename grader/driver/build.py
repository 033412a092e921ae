"""Configures and builds the grader programs with CMake, one lesson at a time, so a
lesson that does not compile is reported as such while the others are still graded.

Several ./grade and ./sweep runs may share one build directory (a class graded in
parallel). Each tree gets programs of its own, under a name made from its path and listed in
the build directory's registry (workbook_trees.json, read by the top-level CMakeLists.txt),
and only one process at a time runs CMake or the build tool there (the build lock)."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

from . import file_lock

BUILTIN_TREES = ("exercises", "solutions")
REGISTRY = "workbook_trees.json"
LOCK = ".workbook-build.lock"


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


def tree_name(root: Path, tree_dir: Path) -> str:
    """The name of a tree's programs (grade_<slug>__<name>): exercises and solutions keep
    theirs; any other tree is named after its directory and a hash of its path (alice_1a2b3c4d),
    so two submissions both called alice still get programs of their own."""
    resolved = Path(tree_dir).resolve()
    for builtin in BUILTIN_TREES:
        if resolved == (Path(root) / builtin).resolve():
            return builtin
    base = re.sub(r"[^a-z0-9_]+", "_", resolved.name.lower()).strip("_")[:40] or "tree"
    return f"{base}_{hashlib.sha1(str(resolved).encode()).hexdigest()[:8]}"


def register_tree(build_dir: Path, name: str, tree_dir: Path) -> bool:
    """Adds the tree to the build directory's registry; returns whether the registry changed
    (then CMake must configure again). Trees whose directory is gone are dropped, so the
    registry of a build that grades a whole class does not only grow. Call under the build lock."""
    return register_trees(build_dir, {name: tree_dir})


def register_trees(build_dir: Path, new_trees: Dict[str, Path]) -> bool:
    """register_tree for several trees at once (a class: one configure for all of them)."""
    path = Path(build_dir) / REGISTRY
    try:
        trees = json.loads(path.read_text())
    except (OSError, ValueError):
        trees = {}
    wanted = {n: d for n, d in trees.items() if Path(d).is_dir()}
    wanted.update({name: str(Path(tree_dir).resolve()) for name, tree_dir in new_trees.items()})
    if wanted == trees:
        return False
    Path(build_dir).mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(REGISTRY + ".part")
    temporary.write_text(json.dumps(wanted, indent=2, sort_keys=True) + "\n")
    temporary.replace(path)  # CMake never reads half a file
    return True


_locked_here: Set[str] = set()  # the build directories whose lock this process holds


@contextmanager
def locked(build_dir: Path, tree: Optional[str] = None) -> Iterator[None]:
    """Holds the build directory's lock, so no other ./grade or ./sweep runs CMake or the build
    tool there meanwhile (they would reconfigure and rebuild under each other). Re-entrant
    within a process; when it has to wait, says for whom."""
    build_dir = Path(build_dir).resolve()
    if str(build_dir) in _locked_here:
        yield
        return
    build_dir.mkdir(parents=True, exist_ok=True)
    holder = build_dir / (LOCK + ".holder")

    def why_waiting() -> str:
        info = file_lock.read_holder(holder)
        shown = os.path.relpath(build_dir) if not os.path.relpath(build_dir).startswith("..") else str(build_dir)
        if not info:
            return f"Waiting for another process to finish building in {shown} ..."
        about = f"pid {info['pid']}" + (f", tree {info['tree']}" if info.get("tree") else "")
        return f"Waiting for another {info.get('program', 'process')} ({about}) to finish building in {shown} ..."

    fd = file_lock.open_shared_file(build_dir / LOCK)
    try:
        file_lock.acquire(fd, fcntl.LOCK_EX, why_waiting, lambda line: print(line, flush=True))
        file_lock.write_holder(holder, {"pid": os.getpid(), "program": file_lock.program_name(), "tree": tree})
        _locked_here.add(str(build_dir))
        try:
            yield
        finally:
            _locked_here.discard(str(build_dir))
            file_lock.clear_holder(holder)
    finally:
        os.close(fd)  # releases the lock


def _run(command, cwd=None) -> Tuple[bool, str]:
    process = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return process.returncode == 0, process.stdout.decode("utf-8", errors="replace")


def configure(source_dir: Path, build_dir: Path) -> dict:
    """Configures `build_dir` (Release, no tests, no docs) and returns its build index. The
    trees beyond exercises/ and solutions/ come from its registry (register_tree)."""
    if shutil.which("cmake") is None:
        raise BuildError("cmake was not found on PATH: install CMake 3.25 or newer.")
    command = ["cmake", "-S", str(source_dir), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
               "-DWORKBOOK_BUILD_TESTS=OFF", "-DWORKBOOK_BUILD_DOCS=OFF"]
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
    """Builds one target, under the build lock; returns (success, the build's output)."""
    tree = target.split("__")[-1] if "__" in target else None  # grade_<slug>__<tree>: for the waiting line
    with locked(build_dir, tree):
        return _run(["cmake", "--build", str(build_dir), "--target", target, "--parallel",
                     str(os.cpu_count() or 2)])


def build_targets(build_dir: Path, targets: List[str]) -> bool:
    """Builds the targets in one run of the build tool, so the work of all of them shares the
    cores (one target at a time leaves most of them idle on its longest compile), and keeps going
    past a target that fails. True when every one built; the errors are for build_target to
    collect, target by target."""
    if not targets:
        return True
    with locked(build_dir):
        ok, _ = _run(["cmake", "--build", str(build_dir), "--parallel", str(os.cpu_count() or 2), "--target",
                      *targets, "--", *keep_going(build_dir)])
    return ok


def keep_going(build_dir: Path) -> List[str]:
    """The build tool's flag to go on past a target that fails: Ninja's or make's."""
    cache = Path(build_dir) / "CMakeCache.txt"
    ninja = cache.is_file() and "CMAKE_GENERATOR:INTERNAL=Ninja" in cache.read_text(errors="replace")
    return ["-k", "0"] if ninja else ["-k"]


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
    """The build index and the name of `tree_dir` in it (tree_name), registering the tree and
    configuring the build first when it does not know the tree yet (unless no_build), under
    the build lock. Raises BuildError."""
    name = tree_name(root, tree_dir)
    if no_build:
        index = load_index(build_dir)
        # A build configured by hand or by ctest may know the tree under another name.
        tree = name if name in (index or {}).get("trees", {}) else tree_name_for(index, tree_dir)
        if index is None or tree is None:
            raise BuildError(f"{build_dir} has no programs for {tree_dir}; run again without --no-build first")
        return index, tree
    with locked(build_dir, name):
        changed = name not in BUILTIN_TREES and register_tree(build_dir, name, tree_dir)
        index = load_index(build_dir)
        if changed or index is None or name not in index.get("trees", {}):
            print(f"Configuring the build in {build_dir} ...", flush=True)
            index = configure(root, build_dir)
        if name not in index.get("trees", {}):
            raise BuildError(f"the build in {build_dir} has no programs for {tree_dir} after configuring it")
        ok, log = build_target(build_dir, "workbook_device_info")
        if not ok:
            raise BuildError("the helper library does not compile:\n" + first_errors(log))
    return index, name


def error_log_path(build_dir: Path, tree: str, slug: str) -> Path:
    """Where a class build keeps the compiler's first errors of a lesson that did not compile."""
    return Path(build_dir) / "workbook_build_errors" / tree / f"{slug}.log"


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
