#!/usr/bin/env python3
"""Generates a class of submissions for ./grade-class, with the verdict each must get.

    make_class.py OUT_DIR [--lessons 01 02] [--small | --size N]

Writes OUT_DIR/submissions/ (one folder or archive per student) and OUT_DIR/expected.json:
{student: {"status": graded|empty|unreadable, "lessons": {slug: check_grades expectations},
"notes": [text the gradebook's notes must contain], "taken": [files the intake must take]}}.
The class covers every way a submission arrives (folder, whole checkout, git checkout, zip,
tar.gz) and every kind of student: correct, partial, untouched, broken (grader/tests/broken/
variants, with their own expected.json), crashing, hanging, not compiling, empty, unreadable
and tampering (edits to the grader, extra files, a link, forged reports, exit(0), fake output).
--small: the handful of kinds CI grades through Slurm. --size N: N students for measuring a class
at scale, every lesson's broken variants among them (make_sized)."""
import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "grader" / "tests"
sys.path.insert(0, str(ROOT / "grader"))
sys.path.insert(0, str(ROOT / "tools"))
from driver.manifest import load_manifest, select_lessons  # noqa: E402
import variants  # noqa: E402


def lesson_expectation(lesson, status: str) -> dict:
    """Every task of a lesson with one status (compile_error, missing, not_implemented)."""
    other = "not_run"  # performance: correctness did not pass
    return {str(t.id): dict({"correctness": status}, **({"performance": other} if t.performance_points else {}))
            for t in lesson.tasks}


class Source:
    """Where a lesson's file comes from, and the verdicts it must get."""

    def __init__(self, lessons):
        self.lessons = {l.slug: l for l in lessons}
        self.solutions = json.loads((TESTS / "expected" / "solutions.json").read_text())
        self.exercises = json.loads((TESTS / "expected" / "exercises.json").read_text())
        # ./grade-class profiles the tasks that fell short, which the e2e expectations (graded with
        # --no-counters) leave out: where the counters add a hint, the verdict with it.
        overlay = TESTS / "expected" / "exercises_counters.json"
        for slug, tasks in (json.loads(overlay.read_text()) if overlay.is_file() else {}).items():
            if slug in self.exercises:
                self.exercises[slug].update(tasks)

    def file(self, tree: Path, slug: str) -> Path:
        return tree / slug / self.lessons[slug].sources[0]

    def solution(self, slug):
        return self.file(ROOT / "solutions", slug), self.solutions[slug]

    def skeleton(self, slug):
        return self.file(ROOT / "exercises", slug), self.exercises[slug]

    def variant(self, name, slug):
        """The variant's whole file (a patch applied to its base: tools/variants.py) and its verdicts,
        with the counters' hints where it has them (expected_counters.json, which lists the tasks
        whose verdicts the counters change): ./grade-class profiles the tasks that fell short."""
        folder = TESTS / "broken" / name
        expected = json.loads((folder / "expected.json").read_text())
        with_counters = folder / "expected_counters.json"
        if with_counters.is_file():
            for slug, tasks in json.loads(with_counters.read_text()).items():
                expected.setdefault(slug, {}).update(tasks)
        return variants.Workbook(ROOT).tree(name)[f"{slug}/{self.lessons[slug].sources[0]}"], expected[slug]


def write_tree(dest: Path, files: dict, lessons) -> None:
    """files: {slug: source path or text}; the lesson's file goes to dest/slug/<source>."""
    for slug, content in files.items():
        target = dest / slug / lessons[slug].sources[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, target)
        else:
            target.write_text(content)


def whole_checkout(dest: Path, files: dict, lessons) -> None:
    """A copy of the workbook's student-facing folders, with the student's files in exercises/."""
    for part in ("lessons", "common", "grader/support", "grader/01_vector_add", "cmake"):
        shutil.copytree(ROOT / part, dest / part, dirs_exist_ok=True)
    shutil.copyfile(ROOT / "CMakeLists.txt", dest / "CMakeLists.txt")
    shutil.copytree(ROOT / "exercises", dest / "exercises", dirs_exist_ok=True)
    write_tree(dest / "exercises", files, lessons)


def make(out: Path, selectors, small: bool) -> dict:
    lessons = select_lessons(load_manifest(ROOT / "lessons" / "manifest.json"), selectors)
    by_slug = {l.slug: l for l in lessons}
    src = Source(lessons)
    slugs = [l.slug for l in lessons]
    first = slugs[0]
    subs = out / "submissions"
    if out.exists():
        shutil.rmtree(out)
    subs.mkdir(parents=True)
    expected = {}
    work = out / "staging"

    def lessons_with(overrides: dict, rest: str = "solution"):
        """{slug: (file, expectation)}: the overrides, and the other lessons solved (or skeletons)."""
        chosen = {}
        for slug in slugs:
            if slug in overrides:
                chosen[slug] = overrides[slug]
            else:
                chosen[slug] = src.solution(slug) if rest == "solution" else src.skeleton(slug)
        return chosen

    def add(name, chosen, kind="folder", notes=(), layout="tree", extra=None):
        """Writes one submission of `chosen` lessons as a folder, checkout or archive."""
        files = {slug: f for slug, (f, _) in chosen.items() if f is not None}
        stage = work / name
        if layout == "checkout":
            whole_checkout(stage, files, by_slug)
        else:
            write_tree(stage, files, by_slug)
        if extra:
            extra(stage)
        expect = {slug: e for slug, (_, e) in chosen.items()}
        taken = [f"{slug}/{by_slug[slug].sources[0]}" for slug, (f, _) in chosen.items() if f is not None]
        if kind == "folder":
            shutil.move(str(stage), subs / name)
        elif kind == "git":
            shutil.move(str(stage), subs / name)
            git = ["git", "-C", str(subs / name), "-c", "user.name=student", "-c", "user.email=s@example.edu"]
            subprocess.run(git[:3] + ["init", "-q"], check=True)
            subprocess.run(git + ["add", "-A"], check=True)
            subprocess.run(git + ["commit", "-qm", "homework"], check=True)
        elif kind == "zip":  # inside one top folder, as zip -r makes it
            with zipfile.ZipFile(subs / f"{name}.zip", "w") as z:
                for path in sorted(stage.rglob("*")):
                    z.write(path, f"homework/{path.relative_to(stage)}")
        elif kind == "tar.gz":
            with tarfile.open(subs / f"{name}.tar.gz", "w:gz") as t:
                t.add(stage, arcname=name)
        if taken:
            expected[name] = {"status": "graded", "lessons": expect, "notes": list(notes), "taken": sorted(taken)}
        else:  # nothing the grader takes (a lone lesson's file as a link): as good as empty
            expected[name] = {"status": "empty", "notes": ["no lesson file"], "taken": []}

    def missing(slug):
        return None, lesson_expectation(by_slug[slug], "missing")

    def not_compiling(slug, text="this is not C++ at all;\n"):
        path = work / f"broken_{slug}.cu"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path, lesson_expectation(by_slug[slug], "compile_error")

    add("correct_folder", lessons_with({}))
    add("correct_zip", lessons_with({}), kind="zip")
    add("untouched", lessons_with({}, rest="skeleton"))
    add("not_compiling", lessons_with({first: not_compiling(first)}), notes=[f"{first} does not compile"])
    if "01_vector_add" in slugs:
        add("broken_off_by_one", lessons_with({"01_vector_add": src.variant("off_by_one", "01_vector_add")}))
    if small:
        write_empty(subs, expected)
        return expected

    add("correct_targz", lessons_with({}), kind="tar.gz", layout="checkout")
    add("correct_git", lessons_with({}), kind="git", layout="checkout")
    add("untouched_zip", lessons_with({}, rest="skeleton"), kind="zip")
    for slug in slugs:
        others = {s: src.skeleton(s) for s in slugs if s != slug}
        add(f"only_{slug[:2]}", lessons_with(others))
    if len(slugs) > 1:
        add("missing_lesson", lessons_with({slugs[-1]: missing(slugs[-1])}))
    add("nothing_compiles", {s: not_compiling(s) for s in slugs}, notes=[f"{s} does not compile" for s in slugs])
    if "01_vector_add" in slugs:
        v = "01_vector_add"
        for variant in ("no_bounds_check", "wrong_operand", "illegal_address", "hang", "index_times_two"):
            add(f"broken_{variant}", lessons_with({v: src.variant(variant, v)}))
        for variant in ("tamper_forged_report", "tamper_exit_zero", "tamper_fake_output", "tamper_bandwidth_env"):
            if (TESTS / "broken" / variant).is_dir():
                add(variant, lessons_with({v: src.variant(variant, v)}),
                    notes=["report tampered"] if variant == "tamper_forged_report" else ())
    if "02_multiply_add" in slugs:
        add("broken_launcher_unchecked",
            lessons_with({"02_multiply_add": src.variant("launcher_unchecked", "02_multiply_add")}))

    # Tampering with the workbook itself: the grader, the manifest and CMake edited to pass
    # anything, the exercises untouched. Only exercises/ files are taken: scores like untouched.
    def edit_grader(stage: Path) -> None:
        (stage / "grader" / "01_vector_add" / "vector_add_test.cu").write_text(
            '#include <catch2/catch_test_macros.hpp>\nTEST_CASE("everything passes", "[task_1]") { SUCCEED(); }\n')
        manifest = stage / "lessons" / "manifest.json"
        manifest.write_text(manifest.read_text().replace('"threshold": 0.', '"threshold": 0.0000'))
        with open(stage / "CMakeLists.txt", "a") as f:
            f.write('\nmessage(STATUS "all tests pass")\n')
    add("tamper_grader_edit", lessons_with({}, rest="skeleton"), layout="checkout", extra=edit_grader)

    # An extra header beside the lesson file, and a CMakeLists.txt: not taken, so the include fails.
    def extra_header(stage: Path) -> None:
        (stage / first / "helper.cuh").write_text("// the student's own header\n")
        (stage / first / "CMakeLists.txt").write_text("add_compile_definitions(PASS_EVERYTHING)\n")
    include = not_compiling(first, f'#include "helper.cuh"\n{src.solution(first)[0].read_text()}')
    add("tamper_extra_files", lessons_with({first: include}), extra=extra_header,
        notes=[f"{first} does not compile"])

    # The lesson file as a link to the reference solution: refused, the lesson counts as missing.
    def link_source(stage: Path) -> None:
        target = stage / first / by_slug[first].sources[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        target.symlink_to(src.solution(first)[0])
    add("tamper_symlink", lessons_with({first: missing(first)}), extra=link_source)

    write_empty(subs, expected)
    # Archives that cannot be read: not a zip, and one whose entry leaves its folder.
    (subs / "corrupt.zip").write_bytes(b"this is not a zip archive\n" * 10)
    expected["corrupt"] = {"status": "unreadable", "notes": ["not a readable zip archive"], "taken": []}
    with zipfile.ZipFile(subs / "zip_slip.zip", "w") as z:
        z.writestr(f"{first}/{by_slug[first].sources[0]}", src.solution(first)[0].read_text())
        z.writestr("../../outside.txt", "written outside the folder\n")
    expected["zip_slip"] = {"status": "unreadable", "notes": ["points outside its folder"], "taken": []}
    shutil.rmtree(work, ignore_errors=True)
    return expected


def make_sized(out: Path, selectors, size: int) -> dict:
    """A class of `size` students for measuring ./grade-class at scale: each student's file of
    each lesson is, in a fixed rotation, the reference solution (six in ten), the untouched
    skeleton (one in ten) or one of the lesson's broken variants (three in ten, every variant in
    turn), each with its verdicts; every tenth student hands in a zip."""
    lessons = select_lessons(load_manifest(ROOT / "lessons" / "manifest.json"), selectors)
    by_slug = {l.slug: l for l in lessons}
    src = Source(lessons)
    variants_of = {slug: [] for slug in by_slug}
    for folder in sorted((TESTS / "broken").iterdir()):
        expected_file = folder / "expected.json"
        if not expected_file.is_file():
            continue
        for slug in json.loads(expected_file.read_text()):
            if slug in variants_of:
                variants_of[slug].append(folder.name)
    if out.exists():
        shutil.rmtree(out)
    subs = out / "submissions"
    subs.mkdir(parents=True)
    expected, turn = {}, {slug: 0 for slug in by_slug}
    for i in range(size):
        name = f"student_{i + 1:03d}"
        files, lessons_expected = {}, {}
        for j, slug in enumerate(by_slug):
            pick = (i + 3 * j) % 10
            if pick == 6 or (pick >= 7 and not variants_of[slug]):
                path, want = src.skeleton(slug) if pick == 6 else src.solution(slug)
            elif pick >= 7:
                variant = variants_of[slug][turn[slug] % len(variants_of[slug])]
                turn[slug] += 1
                path, want = src.variant(variant, slug)
            else:
                path, want = src.solution(slug)
            files[slug], lessons_expected[slug] = path, want
        stage = out / "staging" / name
        write_tree(stage, files, by_slug)
        if i % 10 == 9:
            with zipfile.ZipFile(subs / f"{name}.zip", "w") as z:
                for path in sorted(stage.rglob("*")):
                    z.write(path, f"homework/{path.relative_to(stage)}")
        else:
            shutil.move(str(stage), subs / name)
        expected[name] = {"status": "graded", "lessons": lessons_expected, "notes": [],
                          "taken": sorted(f"{slug}/{by_slug[slug].sources[0]}" for slug in files)}
    shutil.rmtree(out / "staging", ignore_errors=True)
    return expected


def write_empty(subs: Path, expected: dict) -> None:
    (subs / "empty_folder").mkdir()
    expected["empty_folder"] = {"status": "empty", "notes": ["no lesson file"], "taken": []}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("homework/README.txt", "I did not get to it, sorry.\n")
    (subs / "empty_zip.zip").write_bytes(buffer.getvalue())
    expected["empty_zip"] = {"status": "empty", "notes": ["no lesson file"], "taken": []}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--lessons", nargs="*", default=["01", "02"])
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--size", type=int, help="instead of one of each kind: this many students, most of them "
                                                 "correct, with the lessons' broken variants in turn (make_sized)")
    args = parser.parse_args()
    if not (ROOT / "solutions").is_dir():
        print("make_class.py needs solutions/ (the instructor's copy of the workbook)", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    expected = make_sized(out, args.lessons, args.size) if args.size else make(out, args.lessons, args.small)
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    print(f"{len(expected)} submissions in {out / 'submissions'}, expectations in {out / 'expected.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
