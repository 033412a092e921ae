// Lesson 06, task 6 (challenge): heat_step_fast, heat_step's contract as fast as it goes. Checked
// as task 1 (profiling_grader.hpp), then timed on an 8192 x 8192 grid against the copy bandwidth.
#include "profiling_grader.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace profiling_grader;

TEST_CASE("Task 6: heat_step_fast is right on every grid", "[task_6]") {
  grader::require_gpu();
  check_every_shape(heat_step_subject("heat_step_fast", heat_step_fast));
}

TEST_CASE("Task 6: heat_step_fast keeps its contract on every grid", "[task_6]") {
  grader::require_gpu();
  check_contract(heat_step_subject("heat_step_fast", heat_step_fast));
}

TEST_CASE("Task 6: heat_step_fast bandwidth against the copy bandwidth", "[task_6][perf]") {
  grader::require_gpu();
  measure_bandwidth(heat_step_subject("heat_step_fast", heat_step_fast));
}
