"""tools/shared_mix.py: the processes of a class's shared phases, as the driver runs them."""
import dataclasses
import sys
import unittest
import unittest.mock
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import shared_mix  # noqa: E402
from driver import manifest, sanitizer  # noqa: E402

LESSON = manifest.parse_manifest({"lessons": [{
    "slug": "09_demo", "title": "Demo", "sources": ["demo.cu"], "sanitizers": ["memcheck", "racecheck"],
    "tasks": [{"id": 1, "title": "a", "points": {"correctness": 1}},
              {"id": 2, "title": "b", "points": {"correctness": 1}, "sanitizers": ["memcheck"]},
              {"id": 3, "title": "c", "points": {"correctness": 1}, "sanitizers": ["synccheck", "racecheck"]}]}]})[0]


class LessonJobsTest(unittest.TestCase):
    def test_correctness_then_one_process_per_tool_over_the_tasks_that_name_it(self):
        untimed = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}  # the driver's runner.untimed_settings(LESSON)
        self.assertEqual(shared_mix.runner.untimed_settings(LESSON), untimed)
        jobs = shared_mix.lesson_jobs(LESSON, "/b/grade_09_demo__solutions", "/cuda/compute-sanitizer")
        self.assertEqual([label for label, _, _ in jobs],
                         ["09_demo correctness", "09_demo memcheck", "09_demo racecheck", "09_demo synccheck"])
        label, command, env = jobs[0]
        self.assertEqual(command[:2], ["/b/grade_09_demo__solutions", "~[perf]"])
        self.assertEqual(command[2:4], ["--rng-seed", str(shared_mix.SEED)])  # the same shapes every run
        self.assertEqual(env, untimed)  # full sizes, as the graded run
        specs = {label.split()[-1]: command[-5] for label, command, _ in jobs[1:]}
        self.assertEqual(specs, {"memcheck": "[task_1]~[perf],[task_2]~[perf]",
                                 "racecheck": "[task_1]~[perf],[task_3]~[perf]",
                                 "synccheck": "[task_3]~[perf]"})
        for label, command, env in jobs[1:]:
            tool = label.split()[-1]
            # The driver's own prefix and mode, so that the measurement cannot drift from a grading.
            self.assertEqual(command[:-6], sanitizer.command("/cuda/compute-sanitizer", tool, check=True))
            self.assertEqual(env, {"WORKBOOK_SANITIZE": tool, "CUDA_DEVICE_MAX_CONNECTIONS": "1"})

    def test_the_processes_get_the_drivers_untimed_settings_unless_told_otherwise(self):
        programs = {"trees": {"solutions": {"lessons": {"09_demo": {"program": sys.executable}}}}}
        with unittest.mock.patch.object(shared_mix.build, "programs", return_value={"09_demo": sys.executable}):
            driver_own = shared_mix.all_jobs(programs, [LESSON], "cs")
            default = shared_mix.all_jobs(programs, [LESSON], "cs", default_queues=True)
        self.assertTrue(shared_mix.runner.UNTIMED_SETTINGS)
        for _, _, env in driver_own:
            self.assertEqual({k: env.get(k) for k in shared_mix.runner.UNTIMED_SETTINGS}, shared_mix.runner.UNTIMED_SETTINGS)
        for _, _, env in default:
            self.assertFalse(set(env) & set(shared_mix.runner.UNTIMED_SETTINGS))
        # As the driver: a lesson whose streams run side by side keeps CUDA's queues.
        side_by_side = dataclasses.replace(LESSON, streams_side_by_side=True)
        self.assertEqual(shared_mix.runner.untimed_settings(side_by_side), {})
        for _, _, env in shared_mix.lesson_jobs(side_by_side, "/b/p", "cs"):
            self.assertNotIn("CUDA_DEVICE_MAX_CONNECTIONS", env)

    def test_a_program_not_built_is_named(self):
        with self.assertRaises(SystemExit) as raised:
            shared_mix.all_jobs({"trees": {"solutions": {"lessons": {}}}}, [LESSON], "cs")
        self.assertIn("09_demo", str(raised.exception))
        self.assertIn("not in the build index", str(raised.exception))

    def test_counts_below_one_are_refused(self):
        with self.assertRaises(SystemExit):
            shared_mix.main(["build", "--at-once", "0"])


class TestSecondsTest(unittest.TestCase):
    def test_catch2_durations_are_read_and_the_rest_left_out(self):
        output = ("Randomness seeded to: 7\n0.345 s: Task 1: vector_add is correct for every size\n"
                  "  0.002 s: Task 2: the grid stride \nAll tests passed (3 assertions in 2 test cases)\n"
                  "========= ERROR SUMMARY: 0 errors\n1.5 s: not a duration line\n")
        self.assertEqual(shared_mix.parse_durations(output),
                         {"Task 1: vector_add is correct for every size": 0.345, "Task 2: the grid stride": 0.002})

    def test_the_processes_and_test_cases_the_mix_slowed_most_come_first(self):
        alone = [("01 correctness", 1.0, 0, {"a": 0.5, "b": 0.1}), ("01 memcheck", 2.0, 0, {"a": 1.0})]
        mixed = [("01 correctness", 5.0, 0, {"a": 0.6, "b": 4.0}), ("01 correctness", 3.0, 0, {"a": 0.8, "b": 2.0}),
                 ("01 memcheck", 2.5, 0, {"a": 1.5})]
        lines = shared_mix.slowdowns(alone, mixed, top=2)
        self.assertEqual(lines[1].split(), ["1.00", "4.00", "01", "correctness"])  # 3 s added, before memcheck's 0.5
        self.assertEqual(lines[2].split(), ["2.00", "2.50", "01", "memcheck"])
        # Test case b of the correctness process: 0.1 s alone, 3.0 s in the mix on average, the most added.
        self.assertEqual(lines[4], "   0.100  3.000  01 correctness: b")
        self.assertEqual(lines[5], "   1.000  1.500  01 memcheck: a")
        self.assertEqual(len(lines), 6)  # top=2


if __name__ == "__main__":
    unittest.main()
