#!/usr/bin/env python3
"""Write the student release of the workbook, with the reference solutions of chosen lessons.

The release is the repository at a commit (HEAD unless --ref says otherwise) without what would
give answers away: solutions/ (except the lessons published with --publish), the grader's broken
variants and sample students, the solutions' expected verdicts and the instructor's GPU check
script. It builds, grades and passes its own tests; a lesson without a published solution simply
shows no reference ratio when graded. RELEASE.md at its top says what was published."""
from __future__ import annotations

import argparse
import datetime
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "grader"))
from driver.manifest import Lesson, ManifestError, load_manifest, select_lessons  # noqa: E402

PREFIX = "cuda-workbook"
# Never in a release: each holds correct kernels, or says what they are.
WITHHELD = ["solutions", "grader/tests/broken", "grader/tests/students", "grader/tests/expected/solutions.json",
            "tools/gpu_check.sh"]
EXIT_USAGE = 2


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tools/make_release.py", description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  tools/make_release.py                          cuda-workbook-student.tar.gz here, no solutions\n"
               "  tools/make_release.py --publish 01 02          with the solutions of lessons 01 and 02\n"
               "  tools/make_release.py --publish 01 -o ~/www/   a default-named archive in that folder\n"
               "  tools/make_release.py -o week3.tar.gz          that file (relative to the current directory)\n"
               "  tools/make_release.py --format dir -o release  an unpacked tree in ./release\n\n"
               "Lessons are named as ./grade names them: 01, vector_add or 01_vector_add; 'all' publishes every one.\n"
               "Exit status: 0 written; 1 the release could not be made or failed its check; 2 bad arguments.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--publish", nargs="+", default=[], metavar="LESSON",
                        help="lessons whose solutions go into the release (their deadline has passed); "
                             "commas also separate them")
    parser.add_argument("-o", "--output", help="archive (.tar.gz, .tgz) or folder to write (default: "
                                               "cuda-workbook-student[-published-01-02].tar.gz in the current "
                                               "directory); an existing folder, or a path ending in /, gets the "
                                               "default name inside it")
    parser.add_argument("--format", choices=("tar.gz", "dir"), default="tar.gz",
                        help="a .tar.gz archive (default) or an unpacked folder")
    parser.add_argument("--force", action="store_true", help="replace an existing archive or non-empty folder")
    parser.add_argument("--ref", default="HEAD", help="commit to make the release from (default: HEAD)")
    return parser.parse_args(argv)


def git(*args: str, binary: bool = False):
    done = subprocess.run(["git", "-C", str(ROOT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip() or f"git {' '.join(args)} failed")
    return done.stdout if binary else done.stdout.decode().strip()


def published_lessons(selectors: List[str]) -> List[Lesson]:
    names = [n for s in selectors for n in s.split(",") if n]
    if not names:
        return []
    lessons = load_manifest(ROOT / "lessons" / "manifest.json")
    if "all" in names:
        return lessons
    if any("." in n for n in names):
        raise ManifestError("--publish takes whole lessons (01, not 01.2)")
    chosen = select_lessons(lessons, names)
    return sorted({l.slug: l for l in chosen}.values(), key=lambda l: l.slug)


def default_name(published: List[Lesson], fmt: str) -> str:
    suffix = ("-published-" + "-".join(l.slug[:2] for l in published)) if published else ""
    return f"cuda-workbook-student{suffix}" + (".tar.gz" if fmt == "tar.gz" else "")


def output_path(given: Optional[str], published: List[Lesson], fmt: str) -> Path:
    """Where the release goes; relative paths are relative to the current directory."""
    name = default_name(published, fmt)
    if not given:
        return Path.cwd() / name
    path = Path(given).expanduser()
    path = path if path.is_absolute() else Path.cwd() / path
    if fmt == "tar.gz" and (path.is_dir() or given.endswith(("/", os.sep))):
        return path / name
    return path


def extract(archive: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive)) as t:
        t.extractall(dest)  # git archive's own output: no links out, no absolute paths


def release_notes(ref: str, commit: str, published: List[Lesson], withheld: List[Lesson]) -> str:
    lines = ["# CUDA Workbook: student release", "",
             f"Made on {datetime.date.today().isoformat()} from commit {commit} ({ref}) by tools/make_release.py.", ""]
    if published:
        lines.append("Reference solutions included (in `solutions/`), for lessons whose deadline has passed:")
        lines += [f"- {l.slug}: {l.title}" for l in published]
        lines += ["", "`./grade` compares your kernels with these solutions' speed, measured in the same run."]
    else:
        lines.append("No reference solutions are included.")
    if withheld:
        lines += ["", "Not yet published: " + ", ".join(l.slug for l in withheld) + ". Grading those lessons "
                  "shows no reference ratio; everything else works."]
    return "\n".join(lines) + "\n"


def check_release(tree: Path, published: List[Lesson]) -> List[str]:
    """What must not be in the release and is, or must be and is not."""
    problems = []
    for path in WITHHELD[1:]:
        if (tree / path).exists():
            problems.append(f"{path} is in the release")
    solutions = tree / "solutions"
    present = sorted(p.name for p in solutions.iterdir()) if solutions.is_dir() else []
    wanted = sorted(l.slug for l in published)
    if present != wanted:
        problems.append(f"solutions/ holds {present or 'nothing'}, expected {wanted or 'nothing'}")
    return problems


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        published = published_lessons(args.publish)
    except ManifestError as e:
        print(f"make_release: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        commit = git("rev-parse", "--short", f"{args.ref}^{{commit}}")
    except (RuntimeError, OSError) as e:
        print(f"make_release: {ROOT} is not a git checkout with commit {args.ref!r} ({e}). The release is made "
              "from a commit, so it needs the repository.", file=sys.stderr)
        return 1
    out = output_path(args.output, published, args.format)
    if out.exists() and not args.force and (out.is_file() or any(out.iterdir())):
        print(f"make_release: {out} exists{'' if out.is_file() else ' and is not empty'}; give --force to replace "
              "it, or another --output.", file=sys.stderr)
        return EXIT_USAGE
    if args.ref == "HEAD" and git("status", "--porcelain", "--untracked-files=no"):
        print("note: uncommitted changes are not in the release (it is made from HEAD)", file=sys.stderr)

    all_lessons = load_manifest(ROOT / "lessons" / "manifest.json")
    withheld = [l for l in all_lessons if l.slug not in {p.slug for p in published}]
    with tempfile.TemporaryDirectory(prefix="workbook-release-") as tmp:
        tree = Path(tmp) / PREFIX
        tree.mkdir()
        extract(git("archive", "--format=tar", args.ref, "--", ".", *[f":!{p}" for p in WITHHELD], binary=True),
                tree)
        if published:
            extract(git("archive", "--format=tar", args.ref, "--", *[f"solutions/{l.slug}" for l in published],
                        binary=True), tree)
        (tree / "RELEASE.md").write_text(release_notes(args.ref, commit, published, withheld))
        problems = check_release(tree, published)
        if problems:
            print("make_release: the release is not right, nothing written:\n  " + "\n  ".join(problems),
                  file=sys.stderr)
            return 1
        out.parent.mkdir(parents=True, exist_ok=True)
        if args.format == "dir":
            if out.exists():
                shutil.rmtree(out)
            shutil.copytree(tree, out, symlinks=True)
        else:
            part = out.with_name(out.name + ".part")
            with tarfile.open(part, "w:gz") as t:
                t.add(tree, arcname=PREFIX)
            part.replace(out)
        files = sum(1 for p in tree.rglob("*") if p.is_file())
    shown = os.path.relpath(out) if not os.path.relpath(out).startswith("..") else str(out)
    what = ("solutions of " + ", ".join(l.slug for l in published)) if published else "no solutions"
    print(f"wrote {shown} ({files} files from commit {commit}, {what}; withheld: "
          f"{', '.join(l.slug for l in withheld) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
