// Lesson 04, task 4 (optional): reduce_sum_challenge, the fastest device-wide sum the student can
// write, checked as reduce_sum is (task2_reduce_sum_test.cu) and timed against CUB.
#include "reduction_grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cstddef>

using namespace reduction_grader;

TEST_CASE("Task 4: reduce_sum_challenge is right for every size and input", "[task_4]") {
  grader::require_gpu();
  const Subject s = subject("reduce_sum_challenge", reduce_sum_challenge);
  require_writes(s);
  check_sizes_and_inputs(s);
}

TEST_CASE("Task 4: reduce_sum_challenge gives 0 for n = 0, the same sum on every call, and takes any alignment", "[task_4]") {
  grader::require_gpu();
  const Subject s = subject("reduce_sum_challenge", reduce_sum_challenge);
  require_writes(s);
  check_special_calls(s);
}

TEST_CASE("Task 4: reduce_sum_challenge runs kernels of its own, on the stream it is given", "[task_4]") {
  grader::require_gpu();
  const Subject s = subject("reduce_sum_challenge", reduce_sum_challenge);
  require_writes(s);
  check_own_kernels_on_stream(s, "task 4");
}

TEST_CASE("Task 4: reduce_sum_challenge is right for 2^26 and 2^28 floats", "[task_4]") {
  grader::require_gpu();
  const Subject s = subject("reduce_sum_challenge", reduce_sum_challenge);
  require_writes(s);
  check_large(s);
}

TEST_CASE("Task 4: reduce_sum_challenge GB/s at 2^26 and 2^28 floats against CUB", "[task_4][perf]") {
  grader::require_gpu();
  measure_against_cub("reduce_sum_challenge", [](const float* in, std::size_t n, float* out, void* ws, cudaStream_t st) {
    reduce_sum_challenge(in, n, out, ws, kWorkspaceBytes, st);
  }, exact_sum);
}

// The contract reduction.hpp states (grader::given_stream_contract) at every size, after one
// untraced call. It runs after the tests above, whose verdicts say more where they apply.
TEST_CASE("Task 4: reduce_sum_challenge keeps its contract for every size", "[task_4]") {
  grader::require_gpu();
  check_contract_at_every_size(grader::given_stream_contract("reduce_sum_challenge"),
                               reduce_sum_challenge, "reduce_sum_challenge");
}
