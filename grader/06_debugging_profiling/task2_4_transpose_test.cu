// Lesson 06, tasks 2, 3 and 4: three transposes, each checked the same way (profiling_grader.hpp):
// every grid of grid_shapes() bit for bit, the contract (tasks 3 and 4: with a tile in shared
// memory, as the header says), and the bandwidth of an 8192 x 8192
// transpose against the copy bandwidth. Their verdicts show the counters of the timed call
// (the manifest's "counters": "always"), which is what tells the three apart.
#include "profiling_grader.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace profiling_grader;

TEST_CASE("Task 2: transpose_naive is right on every grid", "[task_2]") {
  grader::require_gpu();
  check_every_shape(transpose_subject("transpose_naive", transpose_naive));
}

TEST_CASE("Task 2: transpose_naive keeps its contract on every grid", "[task_2]") {
  grader::require_gpu();
  check_contract(transpose_subject("transpose_naive", transpose_naive));
}

TEST_CASE("Task 2: transpose_naive bandwidth against the copy bandwidth", "[task_2][perf]") {
  grader::require_gpu();
  measure_bandwidth(transpose_subject("transpose_naive", transpose_naive));
}

TEST_CASE("Task 3: transpose_tiled is right on every grid", "[task_3]") {
  grader::require_gpu();
  check_every_shape(transpose_subject("transpose_tiled", transpose_tiled));
}

TEST_CASE("Task 3: transpose_tiled moves its tiles through shared memory", "[task_3]") {
  grader::require_gpu();
  check_uses_shared_memory(transpose_subject("transpose_tiled", transpose_tiled), 3);
}

TEST_CASE("Task 3: transpose_tiled keeps its contract on every grid", "[task_3]") {
  grader::require_gpu();
  check_contract(transpose_subject("transpose_tiled", transpose_tiled));
}

TEST_CASE("Task 3: transpose_tiled bandwidth against the copy bandwidth", "[task_3][perf]") {
  grader::require_gpu();
  measure_bandwidth(transpose_subject("transpose_tiled", transpose_tiled));
}

TEST_CASE("Task 4: transpose_padded is right on every grid", "[task_4]") {
  grader::require_gpu();
  check_every_shape(transpose_subject("transpose_padded", transpose_padded));
}

TEST_CASE("Task 4: transpose_padded moves its tiles through shared memory", "[task_4]") {
  grader::require_gpu();
  check_uses_shared_memory(transpose_subject("transpose_padded", transpose_padded), 4);
}

TEST_CASE("Task 4: transpose_padded keeps its contract on every grid", "[task_4]") {
  grader::require_gpu();
  check_contract(transpose_subject("transpose_padded", transpose_padded));
}

TEST_CASE("Task 4: transpose_padded bandwidth against the copy bandwidth", "[task_4][perf]") {
  grader::require_gpu();
  measure_bandwidth(transpose_subject("transpose_padded", transpose_padded), {}, /*tile_copy_yardstick=*/true);
}
