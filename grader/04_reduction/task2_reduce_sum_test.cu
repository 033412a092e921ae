// Lesson 04, task 2: reduce_sum, a device-wide sum of the student's own kernels.
//
// What is checked: the sum at every correctness size and input; n = 0, repeated calls and
// unaligned inputs; what the tracer sees (its own kernels, on the stream it is given, nothing
// copied to the host); 2^26 and 2^28 floats; its contract at every size; and GB/s against CUB.
// Task 4 is checked the same way, through the same helpers (reduction_grader.cu).
#include "reduction_grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cstddef>

using namespace reduction_grader;

TEST_CASE("Task 2: reduce_sum is right for every size and input", "[task_2]") {
  grader::require_gpu();
  const Subject s = subject("reduce_sum", reduce_sum);
  require_writes(s);
  check_sizes_and_inputs(s);
}

TEST_CASE("Task 2: reduce_sum gives 0 for n = 0, the same sum on every call, and takes any alignment", "[task_2]") {
  grader::require_gpu();
  const Subject s = subject("reduce_sum", reduce_sum);
  require_writes(s);
  check_special_calls(s);
}

TEST_CASE("Task 2: reduce_sum runs kernels of its own, on the stream it is given", "[task_2]") {
  grader::require_gpu();
  const Subject s = subject("reduce_sum", reduce_sum);
  require_writes(s);
  check_own_kernels_on_stream(s, "task 2");
}

TEST_CASE("Task 2: reduce_sum is right for 2^26 and 2^28 floats", "[task_2]") {
  grader::require_gpu();
  const Subject s = subject("reduce_sum", reduce_sum);
  require_writes(s);
  check_large(s);
}

TEST_CASE("Task 2: reduce_sum GB/s at 2^26 and 2^28 floats against CUB", "[task_2][perf]") {
  grader::require_gpu();
  measure_against_cub("reduce_sum", [](const float* in, std::size_t n, float* out, void* ws, cudaStream_t st) {
    reduce_sum(in, n, out, ws, kWorkspaceBytes, st);
  }, exact_sum);
}

// The contract reduction.hpp states (grader::given_stream_contract) at every size, after one
// untraced call. It runs after the tests above, whose verdicts say more where they apply.
TEST_CASE("Task 2: reduce_sum keeps its contract for every size", "[task_2]") {
  grader::require_gpu();
  check_contract_at_every_size(grader::given_stream_contract("reduce_sum"), reduce_sum, "reduce_sum");
}
