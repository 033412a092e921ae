"""./grade-class's host-side logic: intake (what is taken from a submission, unsafe archives),
the gradebook, the class summary and the progress bar. The whole command runs in
check_class.py (ctest grader.class.*)."""
import contextlib
import csv
import io
import json
import os
import sys
import tarfile
import tempfile
import threading
import time
import unittest
import unittest.mock
from unittest import mock
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver import class_grading as cg  # noqa: E402
from driver.manifest import load_manifest, select_lessons  # noqa: E402
from driver.submissions import (Submission, SubmissionError, find_submissions, git_head, locate_tree,  # noqa: E402
                                take_files, unpack)

ROOT = Path(__file__).resolve().parents[2]
LESSONS = select_lessons(load_manifest(ROOT / "lessons" / "manifest.json"), ["01", "02"])


class Temp(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, rel: str, text: str = "x") -> Path:
        path = self.tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


class IntakeTest(Temp):
    def test_takes_only_the_lesson_files(self):
        self.write("alice/01_vector_add/vector_add.cu", "// alice")
        self.write("alice/01_vector_add/helper.cuh")
        self.write("alice/grader/01_vector_add/test.cu", "// passes everything")
        self.write("alice/CMakeLists.txt")
        intake = take_files(self.tmp / "alice", LESSONS, self.tmp / "tree")
        self.assertEqual([t[0] for t in intake.taken], ["01_vector_add/vector_add.cu"])
        self.assertEqual(intake.missing, ["02_multiply_add/multiply_add.cu"])
        self.assertEqual(sorted(intake.ignored), ["01_vector_add/helper.cuh", "CMakeLists.txt",
                                                  "grader/01_vector_add/test.cu"])
        self.assertEqual((self.tmp / "tree/01_vector_add/vector_add.cu").read_text(), "// alice")
        self.assertEqual(sorted(p.name for p in (self.tmp / "tree").rglob("*") if p.is_file()), ["vector_add.cu"])
        self.assertIn("grader/01_vector_add/test.cu", intake.describe())

    def test_finds_exercises_in_a_whole_checkout_inside_one_folder(self):
        self.write("bob/workbook/exercises/02_multiply_add/multiply_add.cu")
        self.write("bob/workbook/solutions/01_vector_add/vector_add.cu", "// not bob's")
        self.write("bob/workbook/README.md")
        self.assertEqual(locate_tree(self.tmp / "bob", LESSONS), self.tmp / "bob/workbook/exercises")
        intake = take_files(self.tmp / "bob", LESSONS, self.tmp / "tree")
        self.assertEqual([t[0] for t in intake.taken], ["02_multiply_add/multiply_add.cu"])
        self.assertEqual(intake.tree_root, "workbook/exercises")

    def test_refuses_links_and_huge_files(self):
        self.write("carol/02_multiply_add/multiply_add.cu", "y" * ((1 << 20) + 1))
        (self.tmp / "carol/01_vector_add").mkdir(parents=True)
        secret = self.write("secret.cu", "// the instructor's")
        os.symlink(secret, self.tmp / "carol/01_vector_add/vector_add.cu")
        intake = take_files(self.tmp / "carol", LESSONS, self.tmp / "tree")
        self.assertEqual(intake.taken, [])
        self.assertEqual([r[0] for r in intake.refused], ["01_vector_add/vector_add.cu", "02_multiply_add/multiply_add.cu"])
        self.assertIn("symbolic link", intake.refused[0][1])

    def test_a_second_intake_keeps_unchanged_files_and_drops_old_ones(self):
        self.write("dan/01_vector_add/vector_add.cu", "v1")
        self.write("dan/02_multiply_add/multiply_add.cu", "v1")
        first = take_files(self.tmp / "dan", LESSONS, self.tmp / "tree")
        stamp = (self.tmp / "tree/01_vector_add/vector_add.cu").stat().st_mtime_ns
        (self.tmp / "dan/02_multiply_add/multiply_add.cu").unlink()
        second = take_files(self.tmp / "dan", LESSONS, self.tmp / "tree")
        self.assertEqual((self.tmp / "tree/01_vector_add/vector_add.cu").stat().st_mtime_ns, stamp)  # no rebuild
        self.assertFalse((self.tmp / "tree/02_multiply_add").exists())
        self.assertNotEqual(first.digest, second.digest)

    def test_git_head_is_read_without_running_git(self):
        self.write("erin/.git/HEAD", "ref: refs/heads/main\n")
        self.write("erin/.git/refs/heads/main", "a" * 40 + "\n")
        self.assertEqual(git_head(self.tmp / "erin"), "a" * 40)
        self.write("frank/.git/HEAD", "ref: refs/heads/main\n")
        self.write("frank/.git/packed-refs", "# pack-refs\n" + "b" * 40 + " refs/heads/main\n")
        self.assertEqual(git_head(self.tmp / "frank"), "b" * 40)


class ArchiveTest(Temp):
    def test_zip_and_tar_unpack(self):
        with zipfile.ZipFile(self.tmp / "a.zip", "w") as z:
            z.writestr("hw/01_vector_add/vector_add.cu", "// zip")
        folder = unpack(Submission("a", self.tmp / "a.zip", "zip"), self.tmp / "a")
        self.assertEqual((locate_tree(folder, LESSONS) / "01_vector_add/vector_add.cu").read_text(), "// zip")
        self.write("src/01_vector_add/vector_add.cu", "// tar")
        with tarfile.open(self.tmp / "b.tar.gz", "w:gz") as t:
            t.add(self.tmp / "src", arcname="b")
        folder = unpack(Submission("b", self.tmp / "b.tar.gz", "tar.gz"), self.tmp / "b")
        self.assertEqual((folder / "b/01_vector_add/vector_add.cu").read_text(), "// tar")

    def test_entries_leaving_the_folder_are_refused(self):
        for name in ("../evil.cu", "/etc/evil.cu", "a/../../evil.cu"):
            with zipfile.ZipFile(self.tmp / "z.zip", "w") as z:
                z.writestr(name, "evil")
            with self.assertRaisesRegex(SubmissionError, "outside its folder"):
                unpack(Submission("z", self.tmp / "z.zip", "zip"), self.tmp / "z")
            self.assertFalse((self.tmp / "evil.cu").exists())

    def test_tar_links_are_never_made(self):
        with tarfile.open(self.tmp / "l.tar.gz", "w:gz") as t:
            info = tarfile.TarInfo("l/01_vector_add/vector_add.cu")
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            t.addfile(info)
        folder = unpack(Submission("l", self.tmp / "l.tar.gz", "tar.gz"), self.tmp / "l")
        self.assertFalse(os.path.lexists(folder / "l/01_vector_add/vector_add.cu"))

    def test_a_broken_archive_is_a_clear_error(self):
        self.write("c.zip", "not a zip")
        with self.assertRaisesRegex(SubmissionError, "not a readable zip archive"):
            unpack(Submission("c", self.tmp / "c.zip", "zip"), self.tmp / "c")

    def test_find_submissions(self):
        (self.tmp / "alice").mkdir()
        self.write("bob.zip")
        self.write("carol.tar.gz")
        self.write("roster.csv")
        self.write(".DS_Store")
        subs, notes = find_submissions(self.tmp)
        self.assertEqual([(s.name, s.kind) for s in subs], [("alice", "folder"), ("bob", "zip"), ("carol", "tar.gz")])
        self.assertTrue(any("roster.csv" in n for n in notes))
        self.write("alice.zip")
        with self.assertRaisesRegex(SubmissionError, "both the submission of 'alice'"):
            find_submissions(self.tmp)


class GradebookTest(Temp):
    def results(self, scores):
        tests = []
        for (slug, task, kind), score in scores.items():
            tests.append({"tags": [slug, f"task_{task}", kind], "score": score, "extra_data": {"status": "passed"}})
        return {"tests": tests}

    def test_points_and_gradebook(self):
        paths = cg.Paths(self.tmp)
        results = self.results({("01_vector_add", 1, "correctness"): 3, ("01_vector_add", 1, "performance"): 2,
                                ("02_multiply_add", 3, "correctness"): 4})
        results["tests"].append({"tags": ["02_multiply_add", "task_1", "correctness"], "score": 0,
                                 "extra_data": {"status": "compile_error"}})
        points, notes = cg.points_from_results(results, LESSONS)
        self.assertEqual(points, {"01.1": 5, "02.3": 4, "02.1": 0})
        self.assertEqual(notes, ["02_multiply_add does not compile"])
        cg.write_json(paths.result("alice"), {"status": "graded", "points": points, "notes": notes, "seed": 7})
        cg.write_json(paths.result("bob"), {"status": "empty", "notes": ["no lesson file"], "seed": 7})
        header, rows = cg.write_gradebook(["alice", "bob", "carol"], LESSONS, paths, 7)
        with open(self.tmp / "gradebook.csv", newline="") as f:
            table = list(csv.DictReader(f))
        self.assertEqual(table[0]["01.1"], "5")
        self.assertEqual(table[0]["01 total"], "5")
        self.assertEqual(table[0]["02 total"], "4")
        self.assertEqual(table[0]["total"], "9")
        self.assertEqual(table[0]["max"], "28")
        self.assertEqual(table[1]["status"], "empty")
        self.assertEqual(table[2]["status"], "not_graded")  # a shard that never reported
        summary = cg.class_summary(header, rows, LESSONS)
        self.assertIn("3 submissions: 1 empty, 1 graded, 1 not graded", summary)
        self.assertIn("struggled most with task 01.2", summary)

    def test_progress_bar_without_a_terminal(self):
        stream = io.StringIO()
        bar = cg.ProgressBar(4, "graded", stream=stream)
        bar.step("alice: graded")
        self.assertRegex(stream.getvalue(), r"^\[1/4, ETA \d+s\] alice: graded\n$")

    def test_gpus(self):
        self.assertEqual(cg.available_gpus("0, 2"), ["0", "2"])
        os.environ["CUDA_VISIBLE_DEVICES"] = "3"
        try:
            self.assertEqual(cg.available_gpus(None), ["3"])
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
            self.assertEqual(cg.available_gpus(None), [None])
        finally:
            del os.environ["CUDA_VISIBLE_DEVICES"]

    def test_grade_result_statuses(self):
        paths = cg.Paths(self.tmp)
        paths.feedback("a").mkdir(parents=True)
        self.assertEqual(cg.grade_result("a", None, "", 1.0, LESSONS, paths)["status"], "grader_error")
        self.assertEqual(cg.grade_result("a", 4, "boom", 1.0, LESSONS, paths)["status"], "grader_error")
        (paths.feedback("a") / "results.json").write_text(json.dumps(self.results({})))
        self.assertEqual(cg.grade_result("a", 3, "", 1.0, LESSONS, paths)["status"], "no_gpu")
        self.assertEqual(cg.grade_result("a", 1, "", 1.0, LESSONS, paths)["status"], "graded")


class GradingsPerGpuTest(unittest.TestCase):
    """--per-gpu left out: the gradings that share a GPU, from its memory and the cores."""

    def test_memory_and_cores_each_bound_the_count_at_most_max_per_gpu_at_least_one(self):
        h100 = "81559, Disabled\n"
        self.assertEqual(cg.gradings_per_gpu(["0"], 16, h100)[0], 8)    # 16 cores: 8 (79 GiB: 10)
        self.assertEqual(cg.gradings_per_gpu(["0"], 64, h100)[0], cg.MAX_PER_GPU)  # at most MAX_PER_GPU
        self.assertEqual(cg.gradings_per_gpu(["0"], 6, h100)[0], 3)     # the cores bound it
        self.assertEqual(cg.gradings_per_gpu(["0", "1"], 8, h100 * 2)[0], 2)  # cores shared by two GPUs
        self.assertEqual(cg.gradings_per_gpu(["0"], 16, "15360, N/A\n")[0], 2)  # a T4: 15 GiB
        self.assertEqual(cg.gradings_per_gpu(["0"], 16, "23028, N/A\n")[0], 3)  # an A10: 22.5 GiB
        self.assertEqual(cg.gradings_per_gpu(["0"], 16, "12000, N/A\n")[0], 1)  # 11.7 GiB
        self.assertEqual(cg.gradings_per_gpu(["0"], 1, h100)[0], 1)     # at least one
        self.assertEqual(cg.gradings_per_gpu(["0", "1"], 32, "81559, Disabled\n15360, N/A\n")[0], 2)  # the smallest
        count, why = cg.gradings_per_gpu(["0"], 16, h100)
        self.assertEqual(why, "79 GiB, 16 cores for 1 GPU")

    def test_nvidia_smi_is_asked_about_the_gpus_graded_on(self):
        with unittest.mock.patch.object(cg.subprocess, "run") as run:
            run.return_value = unittest.mock.Mock(returncode=0, stdout=b"81559, Disabled\n")
            self.assertEqual(cg.listed_gpu_memory(["0", "GPU-abc"]), "81559, Disabled\n")
            self.assertEqual(run.call_args[0][0][-2:], ["-i", "0,GPU-abc"])
            cg.listed_gpu_memory([None])
            self.assertNotIn("-i", run.call_args[0][0])
            run.return_value = unittest.mock.Mock(returncode=9, stdout=b"")
            self.assertIsNone(cg.listed_gpu_memory(["0"]))
            # names nvidia-smi does not know: every GPU instead (the smallest then counts)
            run.side_effect = [unittest.mock.Mock(returncode=6, stdout=b""),
                               unittest.mock.Mock(returncode=0, stdout=b"81559, Disabled\n")]
            self.assertEqual(cg.listed_gpu_memory(["MIG-1234"]), "81559, Disabled\n")
            self.assertNotIn("-i", run.call_args[0][0])
            run.side_effect = None
            run.side_effect = OSError("no nvidia-smi")
            self.assertIsNone(cg.listed_gpu_memory(["0"]))

    def test_unknown_memory_or_mig_gives_one(self):
        for listed in (None, "", "[N/A], Disabled\n", "81559, Enabled\n", "81559, Disabled\nNo devices\n"):
            self.assertEqual(cg.gradings_per_gpu(["0"], 16, listed), (1, "the GPUs' memory not known (or a GPU in MIG mode)"),
                             listed)


class SlotsTest(unittest.TestCase):
    def test_timed_runs_park_only_where_gradings_share_a_gpu_with_room_for_them(self):
        h200, h100, a10 = 143771, 81559, 23028
        self.assertTrue(cg.Slots(["0"], 8, "", h200).park)
        self.assertTrue(cg.Slots(["0"], 8, "", h100).park)  # 10 GiB a grading
        self.assertFalse(cg.Slots(["0"], 3, "", a10).park)  # 7.5 GiB a grading
        self.assertTrue(cg.Slots(["0"], 2, "", a10).park)
        self.assertFalse(cg.Slots(["0"], 1, "", h200).park)  # alone on its GPU: nothing to park beside
        self.assertFalse(cg.Slots(["0"], 4, "", None).park)  # memory unknown
        self.assertEqual(cg.smallest_gpu_mib("81559, Disabled\n143771, Disabled\n"), h100)
        self.assertIsNone(cg.smallest_gpu_mib("[N/A], Disabled\n"))
        self.assertIsNone(cg.smallest_gpu_mib(None))


class GradeOneTest(Temp):
    def test_the_options_reach_each_submissions_grade(self):
        import types
        fake_root = self.tmp / "root"
        fake_root.mkdir()
        argv_file = self.tmp / "argv"
        (fake_root / "grade").write_text(f"import sys\nopen({str(argv_file)!r}, 'w').write(' '.join(sys.argv[1:]))\n")
        args = types.SimpleNamespace(no_timing=True, no_counters=True, timeout=12.0)
        code, _, _ = cg.grade_one(fake_root, args, "alice", self.tmp / "alice", self.tmp / "fb", self.tmp / "b", 7,
                                  LESSONS, None)
        self.assertEqual(code, 0)
        argv = argv_file.read_text().split()
        for option in ("--no-timing", "--no-counters", "--no-build", "--one-check-per-tool"):
            self.assertIn(option, argv)
        self.assertEqual(argv[argv.index("--timeout") + 1], "12.0")
        self.assertNotIn("--counters-when-short", argv)  # no counters at all
        args.no_counters = False
        cg.grade_one(fake_root, args, "alice", self.tmp / "alice", self.tmp / "fb", self.tmp / "b", 7, LESSONS, None)
        self.assertNotIn("--no-counters", argv_file.read_text().split())
        self.assertIn("--counters-when-short", argv_file.read_text().split())  # the class's default
        args.all_counters = True
        cg.grade_one(fake_root, args, "alice", self.tmp / "alice", self.tmp / "fb", self.tmp / "b", 7, LESSONS, None)
        self.assertNotIn("--counters-when-short", argv_file.read_text().split())
        args.all_counters = False
        self.assertNotIn("--timing-cache", argv_file.read_text().split())
        self.assertNotIn("--park-timed", argv_file.read_text().split())  # nothing to take the figures from
        cg.grade_one(fake_root, args, "alice", self.tmp / "alice", self.tmp / "fb", self.tmp / "b", 7, LESSONS, None,
                     self.tmp / "out" / "timing_cache.json")
        argv = argv_file.read_text().split()
        self.assertEqual(argv[argv.index("--timing-cache") + 1], str(self.tmp / "out" / "timing_cache.json"))
        self.assertNotIn("--park-timed", argv)  # not asked for
        cg.grade_one(fake_root, args, "alice", self.tmp / "alice", self.tmp / "fb", self.tmp / "b", 7, LESSONS, None,
                     self.tmp / "out" / "timing_cache.json", park=True)
        self.assertIn("--park-timed", argv_file.read_text().split())  # with a timing cache, where Slots.park
        # Alone on its GPU (--per-gpu 1): room for the racecheck split, so no --one-check-per-tool.
        cg.grade_one(fake_root, args, "alice", self.tmp / "alice", self.tmp / "fb", self.tmp / "b", 7, LESSONS, None,
                     shared_gpu=False)
        self.assertNotIn("--one-check-per-tool", argv_file.read_text().split())
        self.assertNotIn("--park-timed", argv_file.read_text().split())  # alone: nothing to park beside


class WhereTheTimeWentTest(Temp):
    def test_class_json_adds_up_each_phase_and_the_summary_comes_before_the_figure(self):
        paths = cg.Paths(self.tmp)
        walls = {"alice": {"01_vector_add": {"correctness": 1.5, "performance": 2.0, "reference": 2.0, "total": 6},
                           "02_multiply_add": {"correctness": 1.0, "counters": 4.0, "total": 5.0}},
                 "bob": {"01_vector_add": {"correctness": 0.5, "performance": 1.0, "reference": 0.0, "total": 2}}}
        details = {"alice": {"01_vector_add": {"correctness_in_tests": 1.0, "performance_in_tests": 0.5}},
                   "bob": {"01_vector_add": {"correctness_in_tests": 0.5, "reference_in_tests": True},  # a flag: left out
                           "02_multiply_add": {"performance_in_tests": -1.0, "reference_in_tests": 0.5}}}
        smi = {"alice": 0.3, "bob": "x"}
        locks = {"alice": {"exclusive": {"waited": 1.0, "held": 4.5}, "shared": {"waited": 0.5, "held": 2.0}},
                 "bob": {"exclusive": {"waited": 2.0, "held": 1.5}, "shared": "x"}}
        parked = {"alice": {"started": 3, "parked": 2, "used": 2}, "bob": {"started": 1, "parked": True, "used": -1}}
        for name, seconds in (("alice", 12.0), ("bob", 4.0)):
            cg.write_json(paths.result(name), {"status": "graded", "points": {}, "seconds": seconds, "seed": 7})
            cg.write_json(paths.feedback(name) / "results.json",
                          {"tests": [], "extra_data": {"wall_s": walls[name], "wall_detail_s": details[name],
                                                       "gpu_lock_s": locks[name], "nvidia_smi_s": smi[name],
                                                       "parked_runs": parked[name]}})
        # results.json files of shapes no ./grade writes: left out of the sums
        for name, results in (("carol", {"extra_data": "x"}), ("dave", {"extra_data": {"wall_s": {"01": 3}}}),
                              ("erin", {"extra_data": {"wall_s": {"01": {"correctness": "lots"}}}}), ("fay", [1])):
            cg.write_json(paths.result(name), {"status": "graded", "points": {}, "seconds": "?", "seed": 7})
            cg.write_json(paths.feedback(name) / "results.json", results)
        cg.write_json(paths.record, {"seed": 7})
        seen = {}

        def figure(*_):
            seen["summary"] = (self.tmp / "summary.txt").exists()
            seen["time"] = "time" in json.loads(paths.record.read_text())
            return None

        with unittest.mock.patch.object(cg, "write_figure", figure), contextlib.redirect_stdout(io.StringIO()):
            cg.merge(paths, LESSONS, ["alice", "bob", "carol", "dave", "erin", "fay"], 7,
                     {"build_s": 30.0, "grading_wall_s": 14.0})
        self.assertEqual(seen, {"summary": True, "time": True})
        record = json.loads(paths.record.read_text())
        self.assertEqual(record["seed"], 7)
        times = record["time"]
        self.assertEqual(times["build_s"], 30.0)
        self.assertEqual((times["gradings"], times["grading_s_total"], times["grading_s_median"]), (2, 16.0, 8.0))
        self.assertEqual(times["phases_s"], {"correctness": 3.0, "counters": 4.0, "performance": 3.0,
                                             "reference": 2.0})
        self.assertEqual(times["phases_s_by_lesson"]["01_vector_add"]["correctness"], 2.0)
        # Where the phases' seconds went, and the GPU's time alone: numbers of other shapes left out.
        self.assertEqual(times["phase_details_s"], {"correctness_in_tests": 1.5, "performance_in_tests": 0.5,
                                                    "reference_in_tests": 0.5})
        self.assertEqual(times["phase_details_s_by_lesson"]["02_multiply_add"], {"reference_in_tests": 0.5})
        self.assertEqual(times["gpu_lock_s"], {"exclusive_held": 6.0, "exclusive_waited": 3.0, "nvidia_smi": 0.3,
                                               "shared_held": 2.0, "shared_waited": 0.5})
        # ./grade --park-timed's counts, summed; a flag and a negative count left out.
        self.assertEqual(times["parked_runs"], {"parked": 2, "started": 4, "used": 2})
        # The longest phases of one lesson of one submission, longest first (ties by name), at most
        # LONGEST of them; the totals and the numbers of other shapes left out.
        longest = [(p["submission"], p["lesson"], p["phase"], p["s"]) for p in times["longest_s"]]
        self.assertEqual(longest[:4], [("alice", "02_multiply_add", "counters", 4.0),
                                       ("alice", "01_vector_add", "performance", 2.0),
                                       ("alice", "01_vector_add", "reference", 2.0),
                                       ("alice", "01_vector_add", "correctness", 1.5)])
        self.assertEqual(len(longest), 8)  # alice 5, bob 3 (erin's "lots" left out)
        with unittest.mock.patch.object(cg, "LONGEST", 2), contextlib.redirect_stdout(io.StringIO()):
            cg.merge(paths, LESSONS, ["alice", "bob"], 7, {})
        self.assertEqual(len(json.loads(paths.record.read_text())["time"]["longest_s"]), 2)


class SteadyRateTest(unittest.TestCase):
    """class.json's steady pace: the endings while every slot was busy, the first and last waves
    left out, and the class of 100 projected from it."""

    def test_the_pace_between_the_first_and_the_last_wave(self):
        # 2 slots, 8 gradings: the first wave ends at 10 and 11 (together), then one every 5 s
        # until the last wave (two endings 1 s apart as the slots empty).
        ended = [10.0, 11.0, 16.0, 21.0, 26.0, 31.0, 32.0, 33.0]
        record = cg.steady_rate(ended, 2, wall_s=33.0, build_s=7.0)
        # From the 2nd ending (11) to the 6th (31): 4 submissions in 20 s.
        self.assertEqual(record["steady_s_per_submission"], 5.0)
        self.assertEqual(record["projected_s_for_100"], 7.0 + 33.0 + 92 * 5.0)
        self.assertIn("from grading end 2 to grading end 6", record["steady_note"])

    def test_too_small_a_class_has_no_pace(self):
        self.assertEqual(cg.steady_rate([1.0, 2.0, 3.0, 4.0, 5.0], 2, wall_s=5.0), {})
        self.assertEqual(cg.steady_rate([], 1, wall_s=0.0), {})
        self.assertEqual(cg.steady_rate([1.0] * 10, 0, wall_s=1.0), {})
        self.assertEqual(cg.steady_rate([5.0] * 10, 2, wall_s=5.0), {})  # no time between the waves

    def test_a_class_of_100_or_more_is_not_projected(self):
        ended = [float(i) for i in range(1, 101)]
        record = cg.steady_rate(ended, 4, wall_s=100.0)
        self.assertEqual(record["steady_s_per_submission"], 1.0)
        self.assertNotIn("projected_s_for_100", record)


class InterruptTest(Temp):
    def test_ctrl_c_stops_the_gradings_under_way(self):
        """A grading runs in a session of its own (for its time limit), so Ctrl-C does not reach it:
        grade-class must stop it, not leave it running on the GPU."""
        import signal
        import subprocess
        import time
        fake_root = self.tmp / "root"
        fake_root.mkdir()
        pid_file = self.tmp / "pid"
        (fake_root / "grade").write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                                         "time.sleep(120)\n")
        driver = self.tmp / "driver.py"
        driver.write_text(
            "import sys, types\n"
            f"sys.path.insert(0, {str(ROOT / 'grader')!r})\n"
            "from pathlib import Path\n"
            "from driver import class_grading as cg\n"
            "from driver.manifest import load_manifest, select_lessons\n"
            f"lessons = select_lessons(load_manifest(Path({str(ROOT)!r}) / 'lessons' / 'manifest.json'), ['01'])\n"
            "args = types.SimpleNamespace(gpus='0', per_gpu=1, no_timing=True, timeout=None)\n"
            f"paths = cg.Paths(Path({str(self.tmp / 'out')!r}))\n"
            "intakes = {'alice': {'taken': [['x', 'y', 1]], 'digest': 'd'}}\n"
            "try:\n"
            f"    cg.grade_submissions(Path({str(fake_root)!r}), args, ['alice'], paths, Path('/nonexistent'), 1, "
            "lessons, intakes, {})\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(130)\n")
        process = subprocess.Popen([sys.executable, str(driver)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            self.assertLess(time.monotonic(), deadline, "the fake grading never started")
            time.sleep(0.1)
        grading = int(pid_file.read_text())
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
        self.assertEqual(process.returncode, 130, output)
        self.assertIn(b"stopped 1 grading(s) under way", output)
        def alive(pid):  # a zombie waiting for its parent (or init) to reap it is dead too
            try:
                return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            except OSError:
                return False
        deadline = time.monotonic() + 10
        while alive(grading) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(alive(grading), "the grading under way was left running")


class BuildBesideGradingTest(Temp):
    """With more submissions than gradings at once, the first gradings start once their own
    programs are built, and the others' are built beside them (cg.ClassBuild)."""

    def run_class(self, names, fail_later=False, per_gpu="1"):
        for name in names:
            self.write(f"subs/{name}/01_vector_add/vector_add.cu", f"// {name}")
        events = []
        rest_built = threading.Event()

        def build_class(root, build_dir, trees, lessons, jobs, changed=None, first=None, first_built=None):
            events.append(("build", sorted(first) if first is not None else None, len(trees)))
            if first is None:
                return
            first_built()
            time.sleep(0.3)  # the others' programs, while the first grading runs
            if fail_later:
                raise cg.build.BuildError("the helper library does not compile")
            events.append(("rest built",))
            rest_built.set()

        def grade_one(root, args, name, *rest, **kwargs):
            events.append(("grade", name, rest_built.is_set()))
            return 0, "", 1.0

        out = self.tmp / "out"
        with mock.patch.object(cg, "build_class", build_class), mock.patch.object(cg, "grade_one", grade_one), \
                contextlib.redirect_stdout(io.StringIO()):
            code = cg.main([str(self.tmp / "subs"), "01", "--out", str(out), "--gpus", "0", "--per-gpu", per_gpu,
                            "--seed", "3"], ROOT)
        return code, events, out

    def test_the_first_grading_starts_before_the_others_programs_are_built(self):
        code, events, out = self.run_class(["alice", "bob", "carol"])
        self.assertEqual(code, cg.EXIT_SOME_NOT_GRADED)  # the stand-in ./grade writes no results
        self.assertEqual(events[0][0], "build")
        self.assertEqual(len(events[0][1]), 1)  # one grading at a time: one tree first
        self.assertTrue(events[0][1][0].startswith("alice_"))
        graded = [e for e in events if e[0] == "grade"]
        self.assertEqual([e[1] for e in graded], ["alice", "bob", "carol"])
        self.assertFalse(graded[0][2])  # alice graded while the others were still being built
        self.assertTrue(graded[1][2] and graded[2][2])  # bob and carol only once they were built
        times = json.loads((out / "class.json").read_text())["time"]
        self.assertIn("build_s", times)
        self.assertGreaterEqual(times["build_beside_grading_s"], 0.3)

    def test_a_build_that_fails_after_the_first_part_costs_only_the_others(self):
        code, events, out = self.run_class(["alice", "bob"], fail_later=True)
        self.assertEqual([e[1] for e in events if e[0] == "grade"], ["alice"])  # bob is never graded
        bob = json.loads(cg.Paths(out).result("bob").read_text())
        self.assertEqual(bob["status"], cg.GRADER_ERROR)
        self.assertIn("the class's build failed: the helper library does not compile", bob["notes"][0])
        self.assertNotIn("build failed", " ".join(json.loads(cg.Paths(out).result("alice").read_text()).get("notes", [])))

    def test_no_more_submissions_than_gradings_at_once_is_one_build(self):
        code, events, _ = self.run_class(["alice", "bob"], per_gpu="2")
        self.assertEqual(events[0], ("build", None, 2))
        self.assertTrue(all(not e[2] for e in events if e[0] == "grade"))


class CommandLineTest(Temp):
    def test_bad_arguments(self):
        self.assertEqual(cg.main([str(self.tmp / "nowhere")], ROOT), cg.EXIT_USAGE)
        (self.tmp / "subs").mkdir()
        self.assertEqual(cg.main([str(self.tmp / "subs"), "--out", str(self.tmp / "o")], ROOT), cg.EXIT_USAGE)  # empty
        (self.tmp / "subs" / "alice").mkdir()
        self.assertEqual(cg.main([str(self.tmp / "subs"), "99"], ROOT), cg.EXIT_USAGE)
        self.assertEqual(cg.main([str(self.tmp / "subs"), "01.2"], ROOT), cg.EXIT_USAGE)
        self.assertEqual(cg.main([str(self.tmp / "subs"), "--out", str(self.tmp / "subs" / "grades")], ROOT),
                         cg.EXIT_USAGE)
        self.assertEqual(cg.main([str(self.tmp / "subs"), "--regrade", "nobody", "--out", str(self.tmp / "o")], ROOT),
                         cg.EXIT_USAGE)

    def test_a_class_keeps_its_seed(self):
        (self.tmp / "subs" / "alice").mkdir(parents=True)  # empty: graded without building anything
        out = self.tmp / "out"
        self.assertEqual(cg.main([str(self.tmp / "subs"), "01", "--out", str(out), "--seed", "5"], ROOT), cg.EXIT_OK)
        self.assertEqual(json.loads((out / "class.json").read_text())["seed"], 5)
        self.assertEqual(cg.main([str(self.tmp / "subs"), "01", "--out", str(out), "--seed", "6"], ROOT), cg.EXIT_USAGE)
        self.assertEqual(cg.main([str(self.tmp / "subs"), "02", "--out", str(out)], ROOT), cg.EXIT_USAGE)


if __name__ == "__main__":
    unittest.main()
