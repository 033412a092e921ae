#!/usr/bin/env python3
"""The grader's broken variants as what they are: a small patch against the file each one breaks.

A variant, grader/tests/broken/NAME/, is a student mistake the grader must catch: expected.json
(and expected_sanitize.json) hold the verdict it must get, and each student file it changes is

  LESSON/FILE.patch   a unified diff against the file it breaks, whose "---" line names that base:
                      the reference (solutions/LESSON/FILE), the plain student
                      (grader/tests/students/plain/LESSON/FILE) or the skeleton (exercises/...);
  LESSON/FILE         or the whole file, when the variant was written from scratch: kept whole when
                      its smallest patch would be as long as the file itself (lesson 01's ten-line
                      kernels share an #include with any base, little more).

The build lays every variant out as a whole tree (build/<preset>/grader/tests/broken/NAME/), builds
it and grades it there; a patch that no longer applies stops the build, naming the variant. The
sample students of valid designs (grader/tests/students/NAME/, all but the plain student, which is a
base) are stored and laid out the same way: every command below with --students.

    tools/variants.py list                        each variant's files: patch or whole, base, lines
    tools/variants.py show NAME [--context N]     the whole student file, the change marked -/+
    tools/variants.py materialize --out DIR [NAME...]
                                                  DIR/NAME/LESSON/FILE, a tree ./grade --tree takes
    tools/variants.py convert NAME...|--all       whole files -> patches against the nearest base
    tools/variants.py edit NAME                   patches -> whole files, to change by hand
    tools/variants.py refresh NAME...|--all       a patch whose base changed, merged onto the new base

A patch applies strictly: its context and removed lines must match the base exactly, at the line
the hunk names or, when the base gained or lost lines above it, at the one other place they match
(never fuzzily, never at one of two places). To change a variant: edit NAME, change the whole
file, convert NAME. When a base changed under a patch: refresh NAME (it finds the base's last
version in git the patch applies to and merges the variant's change onto the current base with
git merge-file; a conflict leaves the whole file with conflict markers to resolve, then convert).

Exit status: 0 done; 1 a variant could not be laid out, converted or refreshed (each named on
stderr with what to do); 2 bad arguments."""
from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = Path("grader/tests/broken")  # under the root
# The sample students of valid designs (a CUDA graph, cooperative groups, ...) are stored the same way,
# as patches where they change the reference a little; the plain student is a base, whole, never a patch.
STUDENTS = Path("grader/tests/students")
NOT_VARIANTS = {STUDENTS: {"plain"}}
# The files a variant's file may be a patch against, in the order that breaks a tie.
BASE_TREES = ("solutions", "grader/tests/students/plain", "exercises")
PATCH_SUFFIX = ".patch"
CONTEXT = 3  # lines of context around each change, as diff -u and git diff give
EXIT_OK, EXIT_FAILED = 0, 1  # 2: bad arguments (argparse)
NO_NEWLINE = "\\ No newline at end of file\n"
NEWLINE = "\n"
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")  # "\n" ends a line, nothing else does (str.splitlines splits at \r, \f...)


class VariantError(Exception):
    """A variant that cannot be laid out, converted or refreshed; the message names it and says what to do."""


class PatchError(Exception):
    """A patch that does not apply to its base, or is not a unified diff; the message says where."""


# ---------------------------------------------------------------------------------------------
# Text. Files are read as bytes and decoded with surrogateescape, so that any byte, a missing last
# newline and a carriage return all survive a round trip exactly.

def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "surrogateescape")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


def split_lines(text: str) -> List[str]:
    """The lines of `text`, each with its "\\n" (the last one without, if the text does not end in one)."""
    return LINE.findall(text)


# ---------------------------------------------------------------------------------------------
# Unified diffs: written from difflib's matching blocks, applied by a strict applier of our own.

def make_patch(base_label: str, target_label: str, base: str, target: str, context: int = CONTEXT) -> str:
    """A unified diff that turns `base` into `target`, its "---"/"+++" lines naming the two files."""
    a, b = split_lines(base), split_lines(target)
    out = [f"--- {base_label}\n", f"+++ {target_label}\n"]

    def line(prefix: str, text: str) -> None:
        out.append(prefix + text if text.endswith("\n") else prefix + text + "\n" + NO_NEWLINE)

    # autojunk=False: difflib would otherwise treat a long file's blank lines and braces as junk and
    # give a longer diff than the smallest.
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{hunk_range(i1, i2)} +{hunk_range(j1, j2)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                for text in a[a1:a2]:
                    line(" ", text)
                continue
            for text in a[a1:a2]:
                line("-", text)
            for text in b[b1:b2]:
                line("+", text)
    return "".join(out) if len(out) > 2 else ""


def hunk_range(start: int, stop: int) -> str:
    """A hunk's range as diff -u writes it: the first line (1-based), or the line before an empty range."""
    length = stop - start
    return f"{start + 1}" if length == 1 else f"{start + 1 if length else start},{length}"


@dataclass
class Hunk:
    old_start: int  # as the header says: 1-based, or the line before when the hunk removes nothing
    lines: List[Tuple[str, str]]  # (" ", "-" or "+", the line with its newline, if it has one)

    @property
    def old(self) -> List[str]:
        return [text for tag, text in self.lines if tag != "+"]

    @property
    def new(self) -> List[str]:
        return [text for tag, text in self.lines if tag != "-"]


@dataclass
class Patch:
    base: str  # the "---" path, from the workbook's root
    target: str  # the "+++" path
    hunks: List[Hunk]


def parse_patch(text: str) -> Patch:
    """A unified diff of one file, checked against its hunk headers' line counts."""
    lines = split_lines(text)
    i = 0
    while i < len(lines) and not lines[i].startswith("--- "):
        i += 1  # text before the header, as a mail or git format-patch puts there
    if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
        raise PatchError("no '--- base' and '+++ target' header")
    base = lines[i][4:].rstrip("\r\n").split("\t")[0]
    target = lines[i + 1][4:].rstrip("\r\n").split("\t")[0]
    hunks: List[Hunk] = []
    i += 2
    while i < len(lines):
        match = HUNK_HEADER.match(lines[i])
        if not match:
            raise PatchError(f"line {i + 1}: expected a hunk header '@@ -a,b +c,d @@', found {lines[i]!r}")
        old_count = int(match.group(2)) if match.group(2) is not None else 1
        new_count = int(match.group(4)) if match.group(4) is not None else 1
        hunk = Hunk(int(match.group(1)), [])
        header_line = i + 1
        i += 1
        old_seen = new_seen = 0
        while i < len(lines) and (old_seen < old_count or new_seen < new_count):
            tag, body = lines[i][:1], lines[i][1:]
            if lines[i] in ("\n", "\r\n"):  # an empty context line whose space an editor trimmed
                tag, body = " ", lines[i]
            if tag not in (" ", "-", "+"):
                break
            if i + 1 < len(lines) and lines[i + 1] == NO_NEWLINE:
                body = body[:-1]
                i += 1
            hunk.lines.append((tag, body))
            old_seen += tag != "+"
            new_seen += tag != "-"
            i += 1
        if (old_seen, new_seen) != (old_count, new_count):
            raise PatchError(f"the hunk at line {header_line} holds {old_seen} old and {new_seen} new lines, "
                             f"its header says {old_count} and {new_count}")
        hunks.append(hunk)
    return Patch(base, target, hunks)


def apply_patch(base: str, patch: Patch) -> str:
    """`base` with the patch applied. Each hunk's old lines must match the base exactly: at the line its
    header names, or else at exactly one place after the previous hunk (the base gained or lost lines
    above it). No fuzz: a hunk that matches nowhere, or at several places, is a PatchError."""
    lines = split_lines(base)
    out: List[str] = []
    done = 0  # lines of the base consumed
    for number, hunk in enumerate(patch.hunks, 1):
        old = hunk.old
        want = hunk.old_start - 1 if old else hunk.old_start
        if want >= done and lines[want:want + len(old)] == old:
            at = want
        else:
            places = [i for i in range(done, len(lines) - len(old) + 1) if lines[i:i + len(old)] == old] if old else []
            if len(places) != 1:
                raise PatchError(mismatch(number, hunk, lines, want, places))
            at = places[0]
        out += lines[done:at] + hunk.new
        done = at + len(old)
    return "".join(out + lines[done:])


def mismatch(number: int, hunk: Hunk, lines: List[str], want: int, places: List[int]) -> str:
    """Why hunk `number` applies nowhere (or at several places): the first line that differs where it should be."""
    where = f"hunk {number} (base line {hunk.old_start})"
    if places:
        return f"{where} matches at {len(places)} places (base lines {', '.join(str(p + 1) for p in places)})"
    for k, expected in enumerate(hunk.old):
        got = lines[want + k] if 0 <= want + k < len(lines) else None
        if got != expected:
            found = "the end of the file" if got is None else repr(got.rstrip("\n"))
            expects = repr(expected.rstrip("\n"))
            return (f"{where} does not match the base: its line {want + k + 1} is {found}, "
                    f"the patch expects {expects}, and the hunk matches nowhere else")
    return f"{where} does not match the base"


# ---------------------------------------------------------------------------------------------
# Variants.

@dataclass
class VariantFile:
    """One student file of a variant: `path` in the tree (LESSON/FILE), stored as a patch or whole."""
    variant: str
    path: str
    stored: Path  # the .patch, or the whole file
    is_patch: bool

    @property
    def label(self) -> str:
        return f"{self.variant}: {self.path}"


class Workbook:
    """The checkout whose variants are read and written (the one holding this tool, or another in tests)."""

    def __init__(self, root: Path = ROOT, store: Path = VARIANTS):
        self.root = Path(root).resolve()
        self.store = Path(store)  # VARIANTS, or STUDENTS
        self.variants_dir = self.root / self.store

    def names(self) -> List[str]:
        """Every variant: a folder of the store (grader/tests/broken/) with an expected.json."""
        if not self.variants_dir.is_dir():
            return []
        skip = NOT_VARIANTS.get(self.store, set())
        return sorted(p.name for p in self.variants_dir.iterdir()
                      if (p / "expected.json").is_file() and p.name not in skip)

    def check_names(self, names: Sequence[str]) -> List[str]:
        known = set(self.names())
        unknown = [n for n in names if n not in known]
        if unknown:
            raise VariantError(f"no variant {', '.join(unknown)} in {self.store} (a variant is a folder with an "
                               f"expected.json; tools/variants.py list shows them)")
        return list(names)

    def files(self, name: str) -> List[VariantFile]:
        """The variant's student files (expected*.json left out), whole or patches."""
        folder = self.variants_dir / name
        found: Dict[str, VariantFile] = {}
        for stored in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = stored.relative_to(folder).as_posix()
            if "/" not in rel or stored.name.startswith("."):
                continue  # expected.json, expected_sanitize.json: the verdicts, not the tree
            is_patch = rel.endswith(PATCH_SUFFIX)
            path = rel[:-len(PATCH_SUFFIX)] if is_patch else rel
            if path in found:
                raise VariantError(f"{name}: both {path} and {path}{PATCH_SUFFIX} are in {self.store / name}: "
                                   f"finish the edit with tools/variants.py convert {name}, or delete one of them")
            found[path] = VariantFile(name, path, stored, is_patch)
        return [found[p] for p in sorted(found)]

    def rel(self, path: Path) -> str:
        return path.resolve().relative_to(self.root).as_posix()

    def target_label(self, f: VariantFile) -> str:
        return (self.store / f.variant / f.path).as_posix()

    def candidates(self, path: str) -> List[str]:
        """The bases a variant's LESSON/FILE may patch, those that exist, in tie-break order."""
        return [f"{tree}/{path}" for tree in BASE_TREES if (self.root / tree / path).is_file()]

    def read_patch(self, f: VariantFile) -> Patch:
        try:
            patch = parse_patch(read_text(f.stored))
        except PatchError as e:
            raise VariantError(f"{f.label}: {self.rel(f.stored)} is not a unified diff ({e})") from None
        if not (self.root / patch.base).is_file():
            raise VariantError(f"{f.label}: its base {patch.base} (the patch's '---' line) does not exist")
        return patch

    def file_text(self, f: VariantFile) -> str:
        """The whole student file: the stored one, or the patch applied to its base."""
        if not f.is_patch:
            return read_text(f.stored)
        patch = self.read_patch(f)
        try:
            return apply_patch(read_text(self.root / patch.base), patch)
        except PatchError as e:
            raise VariantError(
                f"{f.label}: {self.rel(f.stored)} no longer applies to {patch.base}: {e}. The base changed "
                f"under the variant: run tools/variants.py refresh {f.variant}, which merges the variant's change "
                f"onto the base as it is now (a conflict leaves the whole file to resolve, then tools/variants.py "
                f"convert {f.variant})") from None

    def tree(self, name: str) -> Dict[str, str]:
        """LESSON/FILE -> the whole student file, for every file of the variant."""
        return {f.path: self.file_text(f) for f in self.files(name)}

    # -- materialize --------------------------------------------------------------------------

    def materialize(self, name: str, out: Path) -> List[Path]:
        """Writes the variant's tree to out/NAME, as ./grade --tree takes it. Files whose text is already
        there are left untouched (so the build does not recompile them); other files under the lessons'
        folders of out/NAME are removed. Returns the files written."""
        tree = self.tree(name)
        dest = Path(out) / name
        written = []
        for path, text in tree.items():
            target = dest / path
            if not target.is_file() or read_text(target) != text:
                write_text(target, text)
                written.append(target)
        lessons = {path.split("/")[0] for path in tree}
        for lesson in lessons:
            for stale in sorted((dest / lesson).rglob("*"), reverse=True):
                rel = stale.relative_to(dest).as_posix()
                if stale.is_file() and rel not in tree:
                    stale.unlink()
                elif stale.is_dir() and not any(stale.iterdir()):
                    stale.rmdir()
        return written

    # -- convert ------------------------------------------------------------------------------

    def smallest_patch(self, f: VariantFile, text: str) -> Optional[Tuple[str, str]]:
        """(base, patch) for the base that gives the shortest patch, or None when no base exists."""
        best = None
        for base in self.candidates(f.path):
            patch = make_patch(base, self.target_label(f), read_text(self.root / base), text)
            if best is None or len(split_lines(patch)) < len(split_lines(best[1])):
                best = (base, patch)
        return best

    def convert(self, name: str) -> List[str]:
        """Turns the variant's whole files into patches against their nearest base, where the patch is
        shorter than the file; a file already a patch is left alone. Returns a line per file."""
        report = []
        for f in self.files(name):
            if f.is_patch:
                report.append(f"{f.label}: a patch against {self.read_patch(f).base}; left alone")
                continue
            text = read_text(f.stored)
            best = self.smallest_patch(f, text)
            if best is None:
                report.append(f"{f.label}: kept whole: no base ({', '.join(t + '/' + f.path for t in BASE_TREES)})")
                continue
            base, patch = best
            n_patch, n_file = len(split_lines(patch)), len(split_lines(text))
            if n_patch >= n_file:
                report.append(f"{f.label}: kept whole, written from scratch: {n_file} lines, its smallest patch "
                              f"(against {base}) {n_patch}")
                continue
            if apply_patch(read_text(self.root / base), parse_patch(patch)) != text:  # never expected
                raise VariantError(f"{f.label}: the patch against {base} does not give the file back; left whole")
            write_text(f.stored.with_name(f.stored.name + PATCH_SUFFIX), patch)
            f.stored.unlink()
            removed, added = changed_lines(patch)
            report.append(f"{f.label}: {base} with {removed} line(s) removed and {added} added: "
                          f"{f.path}{PATCH_SUFFIX}, {n_patch} lines for {n_file}")
        return report

    # -- edit ---------------------------------------------------------------------------------

    def edit(self, name: str) -> List[str]:
        """Writes each patch of the variant back as the whole file (and removes the patch), to change by hand."""
        report = []
        for f in self.files(name):
            if not f.is_patch:
                report.append(f"{f.label}: already whole: {self.rel(f.stored)}")
                continue
            text = self.file_text(f)
            target = self.variants_dir / name / f.path
            write_text(target, text)
            f.stored.unlink()
            report.append(f"{f.label}: whole again: {self.rel(target)}")
        return report

    # -- refresh ------------------------------------------------------------------------------

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(self.root), *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=check)

    def old_base(self, f: VariantFile, patch: Patch) -> Tuple[str, str]:
        """(commit, text): the newest version of the patch's base in git history that the patch applies to."""
        log = self.git("log", "--format=%H", "-n", "1000", "--", patch.base, check=False)
        if log.returncode != 0:
            raise VariantError(f"{f.label}: git log failed ({log.stderr.decode(errors='replace').strip()}); "
                               f"refresh needs the workbook's git checkout")
        for commit in log.stdout.decode().split():
            shown = self.git("show", f"{commit}:{patch.base}", check=False)
            if shown.returncode != 0:
                continue
            text = shown.stdout.decode("utf-8", "surrogateescape")
            try:
                apply_patch(text, patch)
                return commit, text
            except PatchError:
                continue
        raise VariantError(f"{f.label}: no version of {patch.base} in git history takes {self.rel(f.stored)}: "
                           f"write {self.store / f.variant / f.path} whole and run tools/variants.py convert {f.variant}")

    def refresh(self, name: str) -> Tuple[List[str], bool]:
        """Rebases each of the variant's patches onto its base as it is now. A patch that applies is written
        again (its line numbers brought up to date); one that does not is merged (git merge-file) from the
        last version of the base it applied to. Returns (a line per file, whether a conflict is left)."""
        report, conflicts = [], False
        for f in self.files(name):
            if not f.is_patch:
                report.append(f"{f.label}: whole, nothing to refresh")
                continue
            patch = self.read_patch(f)
            base_now = read_text(self.root / patch.base)
            try:
                text = apply_patch(base_now, patch)
                how = "applies as it is"
            except PatchError:
                commit, base_then = self.old_base(f, patch)
                text, n_conflicts = merge(apply_patch(base_then, patch), base_then, base_now,
                                          (f"{f.variant} (as {commit[:10]}'s {patch.base} gave it)",
                                           f"{patch.base} at {commit[:10]}", f"{patch.base} now"))
                if n_conflicts:
                    target = self.variants_dir / name / f.path
                    write_text(target, text)
                    f.stored.unlink()
                    report.append(f"{f.label}: {n_conflicts} conflict(s) merging onto {patch.base}: resolve the "
                                  f"<<<<<<< ... >>>>>>> blocks in {self.rel(target)}, then tools/variants.py "
                                  f"convert {name}")
                    conflicts = True
                    continue
                how = f"merged from {patch.base} at {commit[:10]}"
            new_patch = make_patch(patch.base, self.target_label(f), base_now, text)
            if not new_patch:
                raise VariantError(f"{f.label}: after the merge the file is {patch.base} itself: the base now "
                                   f"holds the variant's mistake, or its fix; look at the variant again")
            write_text(f.stored, new_patch)
            report.append(f"{f.label}: {how}; {self.rel(f.stored)} rewritten")
        return report, conflicts

    # -- list, show ---------------------------------------------------------------------------

    def describe(self, f: VariantFile) -> str:
        if not f.is_patch:
            return f"whole, {len(split_lines(read_text(f.stored)))} lines"
        patch = read_text(f.stored)
        removed, added = changed_lines(patch)
        return f"patch against {self.read_patch(f).base}: -{removed} +{added} ({len(split_lines(patch))} lines)"

    def show(self, name: str, path: Optional[str] = None, context: Optional[int] = None) -> str:
        """The variant's student file(s), whole, each line numbered as the file has it and the lines the
        variant changed marked: "-" a line of the base it removed, "+" a line it added."""
        files = self.files(name)
        if path is not None:
            files = [f for f in files if f.path == path]
            if not files:
                raise VariantError(f"{name} has no file {path}")
        out = []
        for f in files:
            text = self.file_text(f)
            if f.is_patch:
                base = self.read_patch(f).base
                removed, added = changed_lines(read_text(f.stored))
                out.append(f"{self.store / name / f.path}: {base} with {removed} line(s) removed (-) and "
                           f"{added} added (+)\n")
                marked = marked_lines(read_text(self.root / base), text)
            else:
                out.append(f"{self.store / name / f.path}: stored whole, not as a patch\n")
                marked = [(" ", i + 1, line) for i, line in enumerate(split_lines(text))]
            out += gutter(marked, context)
        return "".join(out)


def changed_lines(patch: str) -> Tuple[int, int]:
    """(lines removed, lines added) by a unified diff."""
    lines = [l for l in split_lines(patch) if not l.startswith(("--- ", "+++ "))]
    return sum(l.startswith("-") for l in lines), sum(l.startswith("+") for l in lines)


def marked_lines(base: str, text: str) -> List[Tuple[str, Optional[int], str]]:
    """(mark, line number in `text` or None for a removed line, line): the whole of `text`, with the base's
    removed lines in their place."""
    a, b = split_lines(base), split_lines(text)
    marked = []
    for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            marked += [(" ", b1 + k + 1, line) for k, line in enumerate(b[b1:b2])]
            continue
        marked += [("-", None, line) for line in a[a1:a2]]
        marked += [("+", b1 + k + 1, line) for k, line in enumerate(b[b1:b2])]
    return marked


def gutter(marked: List[Tuple[str, Optional[int], str]], context: Optional[int]) -> List[str]:
    """The lines with a gutter "- 123 | " (or only `context` lines around each change, "..." between)."""
    keep = range(len(marked))
    if context is not None:
        changes = [i for i, (mark, _, _) in enumerate(marked) if mark != " "]
        keep = sorted({k for i in changes for k in range(max(0, i - context), min(len(marked), i + context + 1))})
    out, last = [], -1
    for i in keep:
        if i != last + 1:
            out.append("   ... |\n")
        mark, number, line = marked[i]
        number_text = "" if number is None else str(number)
        out.append(f"{mark}{number_text:>5} | {line.rstrip(NEWLINE)}\n")
        last = i
    if context is not None and last != len(marked) - 1 and keep:
        out.append("   ... |\n")
    return out


def merge(current: str, base: str, other: str, labels: Tuple[str, str, str]) -> Tuple[str, int]:
    """git merge-file: `current`'s changes from `base` and `other`'s together; (text, number of conflicts)."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, text in (("current", current), ("base", base), ("other", other)):
            write_text(Path(tmp) / name, text)
            paths.append(str(Path(tmp) / name))
        done = subprocess.run(["git", "merge-file", "-p", "-L", labels[0], "-L", labels[1], "-L", labels[2], *paths],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if done.returncode < 0 or done.returncode > 127:
            raise VariantError(f"git merge-file failed: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode("utf-8", "surrogateescape"), done.returncode


# ---------------------------------------------------------------------------------------------
# The command line.

def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/variants.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  tools/variants.py show tiled_no_first_barrier          the reference, one barrier gone\n"
               "  tools/variants.py materialize --out /tmp/v off_by_one && ./grade --tree /tmp/v/off_by_one 01\n"
               "  tools/variants.py convert --all                        after adding whole-file variants\n"
               "  tools/variants.py edit sum_drops_tail; $EDITOR grader/tests/broken/sum_drops_tail/04_reduction/"
               "reduction.cu;\n  tools/variants.py convert sum_drops_tail")
    parser.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)  # another checkout (the tests)
    parser.add_argument("--students", action="store_true",
                        help=f"the sample students of valid designs in {STUDENTS} (not the plain one, a base) "
                             f"instead of the broken variants in {VARIANTS}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("list", help="each variant's files: patch (and its base) or whole")
    show = commands.add_parser("show", help="the whole student file, the variant's change marked")
    show.add_argument("name")
    show.add_argument("file", nargs="?", help="LESSON/FILE, when the variant changes several")
    show.add_argument("--context", type=int, metavar="N", help="only N lines around each change")
    mat = commands.add_parser("materialize", help="write each variant's whole tree to DIR/NAME")
    mat.add_argument("--out", required=True, metavar="DIR")
    mat.add_argument("names", nargs="*", metavar="NAME", help="the variants (default: all)")
    for command, what in (("convert", "turn whole files into patches against their nearest base"),
                          ("refresh", "bring patches up to date with their bases (git merge-file)")):
        sub = commands.add_parser(command, help=what)
        sub.add_argument("names", nargs="*", metavar="NAME")
        sub.add_argument("--all", action="store_true", help="every variant")
    edit = commands.add_parser("edit", help="write the variant's patches back as whole files, to change by hand")
    edit.add_argument("name")
    args = parser.parse_args(argv)
    book = Workbook(Path(args.root), STUDENTS if args.students else VARIANTS)

    def chosen() -> List[str]:
        if args.all == bool(args.names):
            parser.error(f"{args.command}: name the variants, or --all")
        return book.names() if args.all else book.check_names(args.names)

    failed = False
    try:
        if args.command == "list":
            for name in book.names():
                for f in book.files(name):
                    print(f"{name:32} {f.path:32} {book.describe(f)}")
        elif args.command == "show":
            book.check_names([args.name])
            sys.stdout.write(book.show(args.name, args.file, args.context))
        elif args.command == "materialize":
            names = book.check_names(args.names) if args.names else book.names()
            for name in names:
                try:
                    book.materialize(name, Path(args.out))
                except VariantError as e:
                    print(f"tools/variants.py: {'student' if args.students else 'broken variant'} {e}", file=sys.stderr)
                    failed = True
        elif args.command == "convert":
            for name in chosen():
                print("\n".join(book.convert(name)))
        elif args.command == "edit":
            book.check_names([args.name])
            print("\n".join(book.edit(args.name)))
            print(f"change the file(s), then: tools/variants.py convert {args.name}")
        elif args.command == "refresh":
            for name in chosen():
                try:
                    report, conflict = book.refresh(name)
                    print("\n".join(report))
                    failed |= conflict
                except VariantError as e:
                    print(f"tools/variants.py: {e}", file=sys.stderr)
                    failed = True
    except VariantError as e:
        print(f"tools/variants.py: {e}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # tools/variants.py show NAME | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_OK)
