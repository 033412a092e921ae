#!/usr/bin/env python3
"""Write the student release of the workbook, with the reference solutions of the lessons you publish.

The release is the repository at a commit (HEAD unless --ref says otherwise), made with git archive,
without what would give answers away: solutions/ except the lessons named by --publish (those whose
deadline has passed), the grader's broken variants and sample students, the solutions' expected
verdicts and the instructor's GPU check script. RELEASE.md at its top says what was published and
from which commit. The release configures, builds, grades and passes its own tests; a lesson whose
solution is not published just shows no reference ratio when graded.

Before anything is written the release is checked: solutions/ holds exactly the published lessons,
none of the withheld paths is there, and no other file repeats a withheld solution (a run of its
lines that the exercise does not have). After writing, the written archive or folder is checked
again."""
from __future__ import annotations

import argparse
import datetime
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "grader"))
from driver.manifest import Lesson, ManifestError, load_manifest, select_lessons  # noqa: E402

PREFIX = "cuda-workbook"  # the archive's top folder
# Never in a release: each holds correct kernels, or says what they are. solutions/<slug> of the
# published lessons is added back.
WITHHELD = ("solutions", "grader/tests/broken", "grader/tests/students", "grader/tests/expected/solutions.json",
            "tools/gpu_check.sh")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
# A file repeats a withheld solution when this many consecutive code lines of the solution, most of
# them absent from the exercise, appear in it in a row. Four is too few: the grader's own baseline
# for lesson 05 task 3 shares a four-line loop head with the solution.
LEAK_RUN = 5
STUDENTS = "grader/tests/students"  # the test students' code: answers to the exercises too
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A bad argument: exit status 2."""


class ReleaseError(Exception):
    """The release could not be made, or is not right: exit status 1."""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tools/make_release.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  tools/make_release.py                            no solutions: ./cuda-workbook-student.tar.gz\n"
               "  tools/make_release.py --publish 01,02            with the solutions of lessons 01 and 02:\n"
               "                                                   ./cuda-workbook-student-published-01-02.tar.gz\n"
               "  tools/make_release.py --publish 01 --publish matmul -o ~/www/\n"
               "                                                   the default name, inside ~/www/\n"
               "  tools/make_release.py -o week3.tar.gz            that file, relative to the current directory\n"
               "  tools/make_release.py --format dir -o release    an unpacked tree in ./release\n"
               "  tools/make_release.py --publish all --force      every solution, replacing an earlier archive\n\n"
               "Lessons are named as ./grade names them: 01, vector_add or 01_vector_add; 'all' publishes\n"
               "every lesson's solution, 'none' (the default) none.\n"
               "Exit status: 0 written; 1 the release could not be made or failed its check (nothing is\n"
               "left behind); 2 bad arguments, or the output exists (see --force).")
    parser.add_argument("--publish", action="extend", nargs="+", default=[], metavar="LESSON",
                        help="lessons whose solutions go into the release; repeat it or separate with commas")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="where to write, relative to the current directory: an archive (.tar.gz or .tgz), "
                             "an existing folder or a path ending in / (the default-named archive inside it), or "
                             "with --format dir the folder to create. Default: the default name in the current "
                             "directory, cuda-workbook-student[-published-01-02][.tar.gz]")
    parser.add_argument("--format", choices=("tar.gz", "dir"), default="tar.gz",
                        help="a .tar.gz archive (default) or an unpacked folder")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing archive, or a folder that holds an earlier release")
    parser.add_argument("--ref", default="HEAD", help="the commit to make the release from (default: HEAD)")
    return parser.parse_args(argv)


def git(*args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise ReleaseError(f"cannot run git: {e}") from e
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args[:2])}: " + (done.stderr.decode(errors="replace").strip()
                                                           or f"exit status {done.returncode}"))
    return done.stdout


def check_checkout(ref: str) -> str:
    """The full hash of `ref`; a ReleaseError unless ROOT is the top of a git checkout that has it."""
    try:
        top = Path(git("rev-parse", "--show-toplevel").decode().strip()).resolve()
    except ReleaseError as e:
        top, why = None, str(e)
    if top != ROOT:
        raise ReleaseError(f"{ROOT} is not a git checkout of its own ({why if top is None else f'it lies inside {top}'})."
                           " A release is made from a commit of the instructor's repository, with git archive.")
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except ReleaseError:
        raise ReleaseError(f"{ref!r} is not a commit of {ROOT}") from None


def published_lessons(selectors: Iterable[str], lessons: List[Lesson]) -> List[Lesson]:
    """The lessons to publish, in manifest order."""
    names = [n.strip() for s in selectors for n in s.split(",") if n.strip()]
    if "all" in names:
        return list(lessons)
    names = [n for n in names if n != "none"]
    if not names:
        return []
    tasks = [n for n in names if "." in n]
    if tasks:
        raise UsageError(f"--publish takes whole lessons, not tasks ({', '.join(tasks)}); "
                         "the lessons are: " + ", ".join(l.slug for l in lessons))
    try:
        chosen = {l.slug for l in select_lessons(lessons, names)}
    except ManifestError as e:
        raise UsageError(f"--publish: {e}") from None
    return [l for l in lessons if l.slug in chosen]


def default_name(published: List[Lesson], fmt: str) -> str:
    suffix = ("-published-" + "-".join(l.slug.split("_")[0] for l in published)) if published else ""
    return f"cuda-workbook-student{suffix}" + (".tar.gz" if fmt == "tar.gz" else "")


def output_path(given: Optional[str], published: List[Lesson], fmt: str) -> Path:
    """Where the release goes; a relative path is relative to the current directory."""
    name = default_name(published, fmt)
    if not given:
        return Path.cwd() / name
    path = Path(os.path.abspath(Path(given).expanduser()))
    inside = given.endswith(("/", os.sep))
    if fmt == "dir":
        if path.name.endswith(ARCHIVE_SUFFIXES):
            raise UsageError(f"--format dir writes a folder, not {given}: name the folder, or leave out --format")
        return path
    if inside or path.is_dir():
        return path / name
    if not path.name.endswith(ARCHIVE_SUFFIXES):
        raise UsageError(f"{given} names neither an archive (.tar.gz, .tgz) nor an existing folder; "
                         "for an unpacked tree give --format dir")
    return path


def check_output(out: Path, fmt: str, force: bool) -> None:
    """Refuses to write over anything but an earlier release, and over that without --force."""
    if not out.exists() and not out.is_symlink():
        return
    if fmt == "tar.gz":
        if not out.is_file():
            raise UsageError(f"{out} exists and is not a file")
        if not force:
            raise UsageError(f"{out} exists; give --force to replace it, or another --output")
        return
    if not out.is_dir() or out.is_symlink():
        raise UsageError(f"{out} exists and is not a folder")
    if not any(out.iterdir()):
        return
    if not force:
        raise UsageError(f"{out} is not empty; give --force to replace an earlier release there, or another --output")
    here = Path.cwd().resolve()
    if out.resolve() in (ROOT, *ROOT.parents, *here.parents) or not is_release(out):
        raise UsageError(f"{out} does not hold a release made by this tool (no RELEASE.md beside lessons/), "
                         "so --force does not replace it; remove it yourself if you mean to")


def is_release(folder: Path) -> bool:
    notes = folder / "RELEASE.md"
    return (notes.is_file() and (folder / "lessons" / "manifest.json").is_file()
            and "tools/make_release.py" in notes.read_text(errors="replace"))


def extract(archive: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive)) as t:
        if hasattr(tarfile, "tar_filter"):  # Python 3.12 and the security backports
            t.extractall(dest, filter="tar")
        else:
            t.extractall(dest)  # git archive's own output: no absolute paths, nothing outside dest


def project_version(tree: Path) -> str:
    match = re.search(r"project\(\s*\S+\s+VERSION\s+([0-9.]+)", (tree / "CMakeLists.txt").read_text())
    return match.group(1) if match else "?"


def release_notes(tree: Path, ref: str, commit: str, published: List[Lesson], withheld: List[Lesson]) -> str:
    commit_date = git("show", "-s", "--format=%cs", commit).decode().strip()
    lines = ["# CUDA Workbook: student release", "",
             f"Version {project_version(tree)}, commit {commit[:12]} of {commit_date}"
             + (f" ({ref})" if ref != "HEAD" else "")
             + f"; made on {datetime.date.today().isoformat()} by tools/make_release.py.", ""]
    if published:
        lines.append("Reference solutions in this release (`solutions/`), for the lessons whose deadline has passed:")
        lines += [f"- {l.slug}: {l.title}" for l in published]
        lines += ["", "`./grade` times your kernels against these solutions in the same run and reports the ratio."]
    else:
        lines.append("No reference solutions are in this release yet.")
    if withheld:
        lines += ["", "Not published yet: " + ", ".join(l.slug for l in withheld) + ". Grading those lessons "
                  "works as usual; it just shows no ratio to the reference solution."]
    return "\n".join(lines) + "\n"


def _code_lines(text: str) -> List[str]:
    """The lines of a source or document that carry code, comments and spacing taken out."""
    lines = []
    for line in text.splitlines():
        line = " ".join(line.split("//")[0].split())
        if len(line) >= 3 and not line.startswith(("/*", "*", "#include")):
            lines.append(line)
    return lines


def leaks(tree: Path, withheld: Dict[str, str], exercises: Dict[str, str],
          answers: Optional[Dict[str, str]] = None) -> List[str]:
    """Files of `tree` that repeat a withheld solution: LEAK_RUN consecutive code lines of it, most
    of them absent from its exercise file. `withheld` and `exercises` map a lesson file's path
    (<slug>/<file>) to its text. Published solutions are searched too: one that copies a withheld
    lesson's code would give that lesson away. `answers`: other withheld answers to the same
    exercises (the test students' code, grader/tests/students/<name>/<slug>/<file>), by their
    path in the repository; a grader's own kernel that repeats one gives the task away as well."""
    sources = {f"solutions/{path}": (path, text) for path, text in withheld.items()}
    sources.update({path: ("/".join(path.split("/")[-2:]), text) for path, text in (answers or {}).items()})
    runs = {}  # a run of code lines -> the answer file it comes from
    for source, (path, text) in sources.items():
        given = set(_code_lines(exercises.get(path, "")))
        lines = _code_lines(text)
        for i in range(len(lines) - LEAK_RUN + 1):
            run = tuple(lines[i:i + LEAK_RUN])
            if sum(line not in given for line in run) > LEAK_RUN // 2:
                runs.setdefault(run, source)
    found = []
    for file in sorted(p for p in tree.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = file.relative_to(tree).as_posix()
        if file.stat().st_size > 2_000_000:
            continue  # the sample sweeps' data, not code
        try:
            lines = _code_lines(file.read_text())
        except (UnicodeDecodeError, OSError):
            continue  # not text
        hits = {runs[tuple(lines[i:i + LEAK_RUN])] for i in range(len(lines) - LEAK_RUN + 1)
                if tuple(lines[i:i + LEAK_RUN]) in runs}
        found += [f"{rel} repeats lines of {source}" for source in sorted(hits)]
    return found


def check_paths(paths: Iterable[str], published: List[Lesson]) -> List[str]:
    """What the release's file list (paths relative to its top) holds that it must not, or lacks."""
    paths = list(paths)
    problems = [f"{w} is in the release" for w in WITHHELD[1:]
                if any(p == w or p.startswith(w + "/") for p in paths)]
    present = sorted({p.split("/")[1] for p in paths if p.startswith("solutions/") and p.count("/") >= 2})
    wanted = [l.slug for l in published]
    if present != sorted(wanted):
        problems.append(f"solutions/ holds {', '.join(present) or 'nothing'}; published: {', '.join(wanted) or 'nothing'}")
    for must in ("RELEASE.md", "lessons/manifest.json"):
        if must not in paths:
            problems.append(f"{must} is missing")
    return problems


def tree_paths(tree: Path) -> List[str]:
    return [p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file() or p.is_symlink()]


def archive_paths(archive: Path) -> List[str]:
    with tarfile.open(archive) as t:
        names = [m.name for m in t.getmembers() if not m.isdir()]
    if any(not n.startswith(PREFIX + "/") for n in names):
        raise ReleaseError(f"{archive} has files outside {PREFIX}/")
    return [n[len(PREFIX) + 1:] for n in names]


def _anonymous_owner(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def make(args: argparse.Namespace) -> int:
    lessons = load_manifest(ROOT / "lessons" / "manifest.json")
    published = published_lessons(args.publish, lessons)
    out = output_path(args.output, published, args.format)
    commit = check_checkout(args.ref)
    check_output(out, args.format, args.force)
    if args.ref == "HEAD" and git("status", "--porcelain", "--untracked-files=no").strip():
        print("note: uncommitted changes are not in the release (it is made from HEAD)", file=sys.stderr)
    withheld = [l for l in lessons if l not in published]

    with tempfile.TemporaryDirectory(prefix="workbook-release-") as tmp:
        tree, solutions = Path(tmp) / PREFIX, Path(tmp) / "solutions"
        tree.mkdir()
        solutions.mkdir()
        extract(git("archive", "--format=tar", commit, "--", ".", *[f":(exclude){p}" for p in WITHHELD]), tree)
        extract(git("archive", "--format=tar", commit, "--", "solutions"), solutions)
        students = Path(tmp) / "students"
        students.mkdir()
        extract(git("archive", "--format=tar", commit, "--", STUDENTS), students)
        for lesson in published:
            if not (solutions / "solutions" / lesson.slug).is_dir():
                raise ReleaseError(f"commit {commit[:12]} has no solutions/{lesson.slug} to publish")
            shutil.copytree(solutions / "solutions" / lesson.slug, tree / "solutions" / lesson.slug, symlinks=True)
        (tree / "RELEASE.md").write_text(release_notes(tree, args.ref, commit, published, withheld))

        def texts(base: Path, slugs: List[str]) -> Dict[str, str]:
            return {p.relative_to(base).as_posix(): p.read_text(errors="replace")
                    for slug in slugs for p in sorted((base / slug).rglob("*")) if p.is_file()}
        problems = check_paths(tree_paths(tree), published)
        answers = {f"{STUDENTS}/{student.name}/{path}": text
                   for student in sorted(p for p in (students / STUDENTS).iterdir() if p.is_dir())
                   for path, text in texts(student, [l.slug for l in withheld if (student / l.slug).is_dir()]).items()}
        problems += leaks(tree, texts(solutions / "solutions", [l.slug for l in withheld]),
                          texts(tree / "exercises", [l.slug for l in withheld]), answers)
        if problems:
            raise ReleaseError("the release would give away withheld solutions or is incomplete; nothing was "
                               "written:\n  " + "\n  ".join(problems))
        files = len(tree_paths(tree))

        out.parent.mkdir(parents=True, exist_ok=True)
        if args.format == "dir":
            staged = out.with_name(f".{out.name}.part")
            shutil.rmtree(staged, ignore_errors=True)
            shutil.copytree(tree, staged, symlinks=True)
            written = tree_paths(staged)
        else:
            staged = out.with_name(out.name + ".part")
            with tarfile.open(staged, "w:gz") as t:
                t.add(tree, arcname=PREFIX, filter=_anonymous_owner)
            written = archive_paths(staged)
    # What was written, read back (the check the old release script made), before it takes its place.
    problems = check_paths(written, published)
    if problems:
        shutil.rmtree(staged) if staged.is_dir() else staged.unlink()
        raise ReleaseError("the written release is not right, so it was removed:\n  " + "\n  ".join(problems))
    if args.format == "dir" and out.is_dir():
        # An empty folder, or an earlier release and --force (check_output): emptied and filled
        # again, so a shell inside it stays where it is.
        for old in list(out.iterdir()):
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
        for new in list(staged.iterdir()):
            new.rename(out / new.name)
        staged.rmdir()
    else:
        staged.replace(out)

    shown = os.path.relpath(out)
    shown = str(out) if shown.startswith("..") else shown
    print(f"Wrote {shown} ({files} files, commit {commit[:12]}).")
    print("Published solutions: " + (", ".join(f"{l.slug} ({l.title})" for l in published) if published else "none"))
    print("Withheld: " + ", ".join([f"solutions/{l.slug}" for l in withheld] + list(WITHHELD[1:])))
    print("RELEASE.md in the release says which solutions are in.")
    return EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return make(args)
    except UsageError as e:
        print(f"make_release: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (ReleaseError, ManifestError) as e:
        print(f"make_release: {e}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
