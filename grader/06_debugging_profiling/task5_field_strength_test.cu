// Lesson 06, task 5: field_strength, profiled and fixed. Checked as every function of the lesson
// (profiling_grader.hpp); its timed test also times the kernel as the lesson gives it
// (field_strength_as_given.cu) and runs it inside the profiled range first, so the verdict shows
// its counters beside the student's.
#include "field_strength_as_given.hpp"
#include "profiling_grader.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace profiling_grader;

TEST_CASE("Task 5: field_strength is right on every grid", "[task_5]") {
  grader::require_gpu();
  check_every_shape(field_strength_subject());
}

TEST_CASE("Task 5: field_strength keeps its contract on every grid", "[task_5]") {
  grader::require_gpu();
  check_contract(field_strength_subject());
}

TEST_CASE("Task 5: field_strength bandwidth against the copy bandwidth, beside the kernel as given", "[task_5][perf]") {
  grader::require_gpu();
  measure_bandwidth(field_strength_subject(), [](const float* phi, float* e, Grid g, cudaStream_t stream) {
    field_strength_given(phi, e, g.nx, g.ny, 0.5f, stream);
  });
}
