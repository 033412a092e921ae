"""Taking in a class's submissions for official grading (./grade-class).

A submission is a folder laid out like exercises/ (or a whole workbook checkout, or a git
checkout of one), or a .zip / .tar.gz of one. Only the files a student is meant to edit (each
lesson's `sources` in the manifest) are copied out of it, into a tree that is compiled into the
instructor's own copy of the workbook: edits to grader/, common/, lessons/, CMake files or any
extra file have no effect. Archives are unpacked with the usual defences (no paths leaving the
folder, no links, no device files, bounded sizes), and nothing in a submission is ever run or
handed to git: a checkout's commit is read from .git's files."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Dict, List, Optional, Tuple

from .manifest import Lesson

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
MAX_SOURCE_BYTES = 1 << 20         # a lesson file larger than 1 MiB is not a hand-written exercise
MAX_UNPACKED_BYTES = 200 << 20     # an archive may unpack to at most this much ...
MAX_ARCHIVE_MEMBERS = 20000        # ... in at most this many entries
IGNORED_NAMES = {"__MACOSX", ".DS_Store", ".git"}


class SubmissionError(Exception):
    """The submission cannot be read at all (a broken or unsafe archive): it scores nothing."""


@dataclass
class Submission:
    name: str   # the student, as the folder or archive is named (alice, alice.zip -> alice)
    path: Path
    kind: str   # "folder", "git checkout", "zip", "tar.gz"


@dataclass
class Intake:
    """What was taken from one submission."""
    taken: List[Tuple[str, str, int]] = field(default_factory=list)  # (lesson/file, sha256, bytes)
    missing: List[str] = field(default_factory=list)                 # lesson/file not in the submission
    refused: List[Tuple[str, str]] = field(default_factory=list)     # (lesson/file, why it was not taken)
    ignored: List[str] = field(default_factory=list)                 # every other file, relative to the submission
    tree_root: str = ""   # where the lesson folders were found, relative to the submission
    commit: Optional[str] = None  # a git checkout's HEAD

    @property
    def digest(self) -> str:
        """One hash of everything taken: a resubmission with other content grades again."""
        h = hashlib.sha256()
        for path, digest, _ in sorted(self.taken):
            h.update(f"{path}\0{digest}\n".encode())
        return h.hexdigest()

    def describe(self) -> str:
        lines = ["Files taken from the submission (compiled into the instructor's copy of the workbook):"]
        lines += [f"  {path}  ({size} bytes, sha256 {digest[:12]})" for path, digest, size in self.taken] or ["  none"]
        if self.missing:
            lines.append("Not in the submission (the lesson is graded as missing):")
            lines += [f"  {path}" for path in self.missing]
        if self.refused:
            lines.append("Refused:")
            lines += [f"  {path}: {why}" for path, why in self.refused]
        if self.ignored:
            lines.append(f"Ignored: {len(self.ignored)} other files. Only the files above are graded, so edits to the "
                         "grader, the lessons, common/, CMake files or extra files have no effect:")
            by_folder: Dict[str, List[str]] = {}
            for path in self.ignored:
                parts = PurePosixPath(path).parts
                by_folder.setdefault(parts[0] + "/" if len(parts) > 1 else "", []).append(path)
            for folder, paths in sorted(by_folder.items()):
                shown = paths[:8] if len(paths) > 8 else paths
                more = f" and {len(paths) - len(shown)} more" if len(paths) > len(shown) else ""
                lines.append(f"  {folder or '(top folder)'}: {', '.join(shown)}{more}")
        where = f"lesson folders found in {self.tree_root or 'the top folder'}"
        lines.append(where + (f"; git commit {self.commit}" if self.commit else ""))
        return "\n".join(lines)


def submission_name(entry: Path) -> str:
    name = entry.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[:-len(suffix)]
    return name


def find_submissions(folder: Path) -> Tuple[List[Submission], List[str]]:
    """The submissions in `folder`, sorted by name, and notes on entries that are not one.
    Raises SubmissionError when two entries would be the same student."""
    found: Dict[str, Submission] = {}
    notes = []
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith(".") or entry.name in IGNORED_NAMES:
            continue
        lower = entry.name.lower()
        if entry.is_symlink():
            notes.append(f"{entry.name}: a symbolic link, not graded (copy the submission in instead)")
            continue
        if entry.is_dir():
            kind = "git checkout" if (entry / ".git").exists() else "folder"
        elif lower.endswith(".zip"):
            kind = "zip"
        elif lower.endswith((".tar.gz", ".tgz")):
            kind = "tar.gz"
        else:
            notes.append(f"{entry.name}: not a folder, .zip or .tar.gz, not graded")
            continue
        name = submission_name(entry)
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._@+-]*", name):
            notes.append(f"{entry.name}: graded as {safe_name(name)!r} (names keep letters, digits and ._@+-)")
            name = safe_name(name)
        if name in found:
            raise SubmissionError(f"{found[name].path.name} and {entry.name} are both the submission of {name!r}: "
                                  "keep one of them in the folder and grade again.")
        found[name] = Submission(name, entry, kind)
    return [found[n] for n in sorted(found)], notes


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@+-]+", "_", name).strip("._") or "submission"


def _check_member_name(name: str) -> None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", name):
        raise SubmissionError(f"the archive holds an entry {name!r} that points outside its folder: not unpacked. "
                              "Ask the student to upload an archive made by zip or tar from their folder.")


def unpack(submission: Submission, dest: Path) -> Path:
    """The submission as a folder: itself, or its archive unpacked into `dest`."""
    if submission.kind in ("folder", "git checkout"):
        return submission.path
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    try:
        if submission.kind == "zip":
            _unzip(submission.path, dest)
        else:
            _untar(submission.path, dest)
    except SubmissionError:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
        shutil.rmtree(dest, ignore_errors=True)
        raise SubmissionError(f"{submission.path.name} is not a readable {submission.kind} archive ({e}).") from e
    return dest


def _unzip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as z:
        members = z.infolist()
        if len(members) > MAX_ARCHIVE_MEMBERS:
            raise SubmissionError(f"the archive has {len(members)} entries, more than {MAX_ARCHIVE_MEMBERS}.")
        if sum(m.file_size for m in members) > MAX_UNPACKED_BYTES:
            raise SubmissionError(f"the archive unpacks to more than {MAX_UNPACKED_BYTES >> 20} MiB.")
        for member in members:
            _check_member_name(member.filename)
            mode = member.external_attr >> 16
            if stat.S_ISLNK(mode):
                continue  # links are never followed or made; a lesson file that is one counts as missing
            target = dest / member.filename
            if member.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with z.open(member) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)


def _untar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive, "r:*") as t:
        members = t.getmembers()
        if len(members) > MAX_ARCHIVE_MEMBERS:
            raise SubmissionError(f"the archive has {len(members)} entries, more than {MAX_ARCHIVE_MEMBERS}.")
        if sum(m.size for m in members if m.isfile()) > MAX_UNPACKED_BYTES:
            raise SubmissionError(f"the archive unpacks to more than {MAX_UNPACKED_BYTES >> 20} MiB.")
        for member in members:
            _check_member_name(member.name)
            target = dest / member.name
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isfile():  # links, devices and fifos are skipped, never made
                target.parent.mkdir(parents=True, exist_ok=True)
                source = t.extractfile(member)
                with source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out)


def locate_tree(folder: Path, lessons: List[Lesson], depth: int = 3) -> Optional[Path]:
    """The folder that holds the lesson folders: the submission itself, its exercises/ (a whole
    workbook checkout), or the same inside a single top folder (how most archives are made)."""
    slugs = {lesson.slug for lesson in lessons}

    def has_lessons(d: Path) -> bool:
        return any((d / slug).is_dir() and not (d / slug).is_symlink() for slug in slugs)

    for candidate in (folder, folder / "exercises"):
        if candidate.is_dir() and not candidate.is_symlink() and has_lessons(candidate):
            return candidate
    if depth > 0:
        children = [c for c in folder.iterdir() if c.is_dir() and not c.is_symlink()
                    and c.name not in IGNORED_NAMES and not c.name.startswith(".")] if folder.is_dir() else []
        if len(children) == 1:
            return locate_tree(children[0], lessons, depth - 1)
    return None


def git_head(folder: Path) -> Optional[str]:
    """A checkout's HEAD commit, read from .git's files (git itself is never run on a
    submission: its configuration could run commands)."""
    git = folder / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:40] or None
        ref = head[5:]
        if (git / ref).is_file():
            return (git / ref).read_text().strip()[:40] or None
        packed = git / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref):
                    return line.split()[0][:40]
    except OSError:
        return None
    return None


def take_files(folder: Path, lessons: List[Lesson], dest: Path) -> Intake:
    """Copies the lessons' source files from the submission at `folder` into `dest` (laid out
    like exercises/), and records what was taken, missing, refused and ignored."""
    intake = Intake()
    dest.mkdir(parents=True, exist_ok=True)
    kept = set()
    tree = locate_tree(folder, lessons)
    wanted = set()
    if tree is not None:
        intake.tree_root = os.path.relpath(tree, folder) if tree != folder else ""
        for lesson in lessons:
            for source in lesson.sources:
                rel = f"{lesson.slug}/{source}"
                path = tree / lesson.slug / source
                wanted.add(path)
                if not os.path.lexists(path):
                    intake.missing.append(rel)
                    continue
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    intake.refused.append((rel, "a symbolic link, not a file: links are never followed"))
                elif not stat.S_ISREG(info.st_mode):
                    intake.refused.append((rel, "not a regular file"))
                elif info.st_size > MAX_SOURCE_BYTES:
                    intake.refused.append((rel, f"{info.st_size} bytes, more than {MAX_SOURCE_BYTES} for one source file"))
                else:
                    data = path.read_bytes()
                    copy = dest / lesson.slug / source
                    copy.parent.mkdir(exist_ok=True)
                    if not copy.is_file() or copy.read_bytes() != data:  # unchanged: no rebuild
                        copy.write_bytes(data)
                    kept.add(copy)
                    intake.taken.append((rel, hashlib.sha256(data).hexdigest(), len(data)))
    else:
        intake.missing = [f"{lesson.slug}/{source}" for lesson in lessons for source in lesson.sources]
    for base, _, files in os.walk(dest, topdown=False):  # what an earlier intake took and this one did not
        for name in files:
            if Path(base) / name not in kept:
                (Path(base) / name).unlink()
        if Path(base) != dest and not os.listdir(base):
            os.rmdir(base)
    if (folder / ".git").is_dir():
        intake.commit = git_head(folder)
    for base, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            path = Path(base) / name
            if path not in wanted:
                intake.ignored.append(os.path.relpath(path, folder))
    return intake
