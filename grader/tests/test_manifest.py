"""The manifest: parsing, validation and choosing lessons by number, slug or name."""
import copy
import json
import unittest
from pathlib import Path

from helpers import MANIFEST
from driver.manifest import ManifestError, load_manifest, parse_manifest, select_lessons

ROOT = Path(__file__).resolve().parents[2]


class ManifestTest(unittest.TestCase):
    def test_tasks_points_and_thresholds_are_read(self):
        lesson = parse_manifest(MANIFEST)[0]
        self.assertEqual(lesson.number, 1)
        self.assertEqual(lesson.name, "vector_add")
        self.assertEqual([t.tag for t in lesson.tasks], ["task_1", "task_2"])
        self.assertEqual(lesson.tasks[0].perf_threshold, 0.6)
        self.assertEqual(lesson.max_points, 9)

    def test_lessons_are_chosen_by_number_slug_or_name(self):
        lessons = parse_manifest(MANIFEST)
        for selector in ["1", "01", "01_vector_add", "vector_add", "vector-add", "exercises/01_vector_add/"]:
            self.assertEqual([l.slug for l in select_lessons(lessons, [selector])], ["01_vector_add"], selector)
        self.assertEqual(len(select_lessons(lessons, [])), 1)

    def test_one_task_is_chosen_as_lesson_dot_task(self):
        lessons = parse_manifest(MANIFEST)
        [only_2] = select_lessons(lessons, ["01.2"])
        self.assertEqual([t.id for t in only_2.tasks], [2])
        self.assertEqual(only_2.max_points, 4)
        [both] = select_lessons(lessons, ["01.2", "1.1"])
        self.assertEqual([t.id for t in both.tasks], [1, 2])
        [whole] = select_lessons(lessons, ["01.2", "01"])
        self.assertEqual(len(whole.tasks), 2)
        self.assertEqual(len(lessons[0].tasks), 2)  # the manifest's lesson is left as it was
        with self.assertRaisesRegex(ManifestError, "no task 7; its tasks are 1, 2"):
            select_lessons(lessons, ["01.7"])
        [by_name] = select_lessons(lessons, ["vector_add.2"])
        self.assertEqual([t.id for t in by_name.tasks], [2])

    def test_correctness_that_compares_timings_is_marked(self):
        real = load_manifest(ROOT / "lessons" / "manifest.json")
        timed = [(l.slug, t.id) for l in real for t in l.tasks if t.correctness_timed]
        self.assertEqual(timed, [("02_multiply_add", 3)])

    def test_only_lesson_05_s_streams_run_side_by_side_and_the_flag_is_a_boolean(self):
        real = load_manifest(ROOT / "lessons" / "manifest.json")
        self.assertEqual([l.slug for l in real if l.streams_side_by_side], ["05_streams"])
        self.assertFalse(parse_manifest(MANIFEST)[0].streams_side_by_side)
        bad = copy.deepcopy(MANIFEST)
        bad["lessons"][0]["streams_side_by_side"] = "yes"
        with self.assertRaisesRegex(ManifestError, "streams_side_by_side"):
            parse_manifest(bad)

    def test_an_unknown_lesson_names_the_known_ones(self):
        with self.assertRaisesRegex(ManifestError, "no lesson matches 'matmul'.*01_vector_add"):
            select_lessons(parse_manifest(MANIFEST), ["matmul"])

    def test_performance_points_need_a_threshold(self):
        bad = copy.deepcopy(MANIFEST)
        del bad["lessons"][0]["tasks"][0]["performance"]
        with self.assertRaisesRegex(ManifestError, "need a metric and a threshold"):
            parse_manifest(bad)

    def test_tasks_are_numbered_in_order(self):
        bad = copy.deepcopy(MANIFEST)
        bad["lessons"][0]["tasks"][1]["id"] = 3
        with self.assertRaisesRegex(ManifestError, "numbered"):
            parse_manifest(bad)

    def test_slugs_are_zero_padded(self):
        bad = copy.deepcopy(MANIFEST)
        bad["lessons"][0]["slug"] = "1_vector_add"
        with self.assertRaisesRegex(ManifestError, "two digits"):
            parse_manifest(bad)

    def test_a_task_names_its_sanitizers_or_takes_its_lessons(self):
        raw = copy.deepcopy(MANIFEST)
        raw["lessons"][0]["sanitizers"] = ["memcheck", "synccheck"]
        raw["lessons"][0]["tasks"][0]["sanitizers"] = ["memcheck", "racecheck"]
        lesson = parse_manifest(raw)[0]
        self.assertEqual(lesson.tasks[0].sanitizers, ["memcheck", "racecheck"])
        self.assertEqual(lesson.tasks[1].sanitizers, ["memcheck", "synccheck"])
        self.assertEqual(parse_manifest(MANIFEST)[0].tasks[1].sanitizers, ["memcheck"])  # neither says: memcheck

    def test_sanitizers_must_be_known_tools_each_named_once(self):
        for where in ("lesson", "task"):
            for bad, message in [(["memcheck", "leakcheck"], "unknown compute-sanitizer tool\\(s\\) leakcheck"),
                                 ([], "a list of compute-sanitizer tools"),
                                 ("memcheck", "a list of compute-sanitizer tools"),
                                 (["memcheck", "memcheck"], "each named once"),
                                 ([None], "a list of compute-sanitizer tools")]:
                raw = copy.deepcopy(MANIFEST)
                target = raw["lessons"][0] if where == "lesson" else raw["lessons"][0]["tasks"][1]
                target["sanitizers"] = bad
                prefix = "lesson 01_vector_add" + (" task 2" if where == "task" else "")
                with self.assertRaisesRegex(ManifestError, f"^{prefix}: .*{message}", msg=f"{where}: {bad!r}"):
                    parse_manifest(raw)

    def test_a_sweep_declares_its_kind_and_figures_of_that_kind(self):
        raw = copy.deepcopy(MANIFEST)
        raw["lessons"][0]["sweep"] = {"kind": "reduction", "figures": ["gbps_vs_n", "time_vs_n"]}
        lesson = parse_manifest(raw)[0]
        self.assertEqual((lesson.sweep.kind, lesson.sweep.figures), ("reduction", ("gbps_vs_n", "time_vs_n")))
        self.assertIsNone(parse_manifest(copy.deepcopy(MANIFEST))[0].sweep)  # no "sweep": none
        for bad, message in [({"kind": "histogram", "figures": ["x"]}, "unknown sweep kind 'histogram'; the kinds"),
                             ({"kind": ["gflops"], "figures": ["x"]}, "unknown sweep kind \\['gflops'\\]"),
                             ({"kind": "gflops", "figures": ["time_vs_n"]},
                              "./plot draws no figure 'time_vs_n' for a 'gflops' sweep; it draws gflops_vs_n, "
                              "fraction_of_cublas"),
                             ({"kind": "gflops", "figures": []}, "a list of figure names"),
                             ({"kind": "gflops", "figures": ["gflops_vs_n", "gflops_vs_n"]}, "each once"),
                             ({"kind": "gflops"}, "is {\"kind\": ..., \"figures\": \\[...\\]}"),
                             (["gflops_vs_n"], "is {\"kind\"")]:
            raw = copy.deepcopy(MANIFEST)
            raw["lessons"][0]["sweep"] = bad
            with self.assertRaisesRegex(ManifestError, "^lesson 01_vector_add: .*" + message.replace(".", "\\."),
                                        msg=repr(bad)):
                parse_manifest(raw)

    def test_the_lessons_with_a_bench_declare_their_sweep(self):
        for lesson in load_manifest(ROOT / "lessons" / "manifest.json"):
            bench = ROOT / "tools" / "bench" / f"{lesson.slug}.cu"
            self.assertEqual(lesson.sweep is not None, bench.exists(), lesson.slug)

    def test_the_real_manifest_checks_shared_memory_and_warp_code_for_races(self):
        real = {(l.slug[:2], t.id): t.sanitizers for l in load_manifest(ROOT / "lessons" / "manifest.json")
                for t in l.tasks}
        # Lesson 03's tiles have no warp-level code and their barriers are all at block level, so
        # synccheck is left out there: it added 0.6 s to a check that had to stay within half
        # again of the lesson's grading time (10.3 s, H100, November 2026).
        shared_memory = {("03", 2): ["memcheck", "racecheck"], ("03", 4): ["memcheck", "racecheck"],
                         ("04", 1): ["memcheck", "racecheck", "synccheck"],
                         ("04", 2): ["memcheck", "racecheck", "synccheck"],
                         ("04", 4): ["memcheck", "racecheck", "synccheck"],
                         # Lesson 06: task 1 is graded on those three tools being clean (its lesson
                         # text says so), the challenge on task 1's contract; its transposes tile.
                         ("06", 1): ["memcheck", "initcheck", "racecheck"],
                         ("06", 2): ["memcheck", "racecheck"], ("06", 3): ["memcheck", "racecheck"],
                         ("06", 4): ["memcheck", "racecheck"], ("06", 5): ["memcheck", "racecheck"],
                         ("06", 6): ["memcheck", "initcheck", "racecheck"],
                         # Lesson 07: pi sums its counts per block or per warp (shared memory or
                         # shuffles), the histogram counts in shared memory between barriers.
                         ("07", 1): ["memcheck", "racecheck", "synccheck"],
                         ("07", 2): ["memcheck", "racecheck", "synccheck"]}
        for key, tools in real.items():
            self.assertEqual(tools[0], "memcheck", key)
            self.assertEqual(tools, shared_memory.get(key, ["memcheck"]), key)

    def test_the_real_manifest_is_valid_and_matches_the_trees(self):
        lessons = load_manifest(ROOT / "lessons" / "manifest.json")
        self.assertTrue(lessons)
        for lesson in lessons:
            # A student release has the solutions of the published lessons only (tools/make_release.py).
            for tree in ["exercises"] + (["solutions"] if (ROOT / "solutions" / lesson.slug).is_dir() else []):
                for source in lesson.sources:
                    self.assertTrue((ROOT / tree / lesson.slug / source).is_file(), f"{tree}/{lesson.slug}/{source}")
            self.assertTrue((ROOT / "lessons" / lesson.slug / "README.md").is_file())
            self.assertTrue(list((ROOT / "grader" / lesson.slug).glob("*.cu")))

    def test_every_task_has_its_todo_marker_and_lesson_heading(self):
        for lesson in load_manifest(ROOT / "lessons" / "manifest.json"):
            exercise = "".join((ROOT / "exercises" / lesson.slug / s).read_text() for s in lesson.sources)
            solution = "".join((ROOT / "solutions" / lesson.slug / s).read_text() for s in lesson.sources
                               if (ROOT / "solutions" / lesson.slug / s).is_file())
            text = (ROOT / "lessons" / lesson.slug / "README.md").read_text()
            tests = "".join(p.read_text() for p in (ROOT / "grader" / lesson.slug).glob("*.cu"))
            for task in lesson.tasks:
                self.assertIn(f"TODO(task {task.id})", exercise)
                self.assertIn(f"## Task {task.id}", text)
                self.assertIn(f'"[{task.tag}]"', tests)
                if task.performance_points:
                    self.assertIn(f'"[{task.tag}][perf]"', tests)
            self.assertNotIn("TODO(task", solution)


if __name__ == "__main__":
    unittest.main()
