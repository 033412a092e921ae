// Lesson 03, task 2: matmul_tiled, kTile x kTile tiles of A and B in shared memory, launched by the
// grader.
//
// What is checked: C = A * B on every correctness shape (matmul_grader.hpp), most of them not
// multiples of the tile; blocks entirely outside C write nothing; the same C run after run on
// fresh 1024^3 and 2048 x 1536 x 1056 data (a missing __syncthreads() shows only now and then).
// A wrong C is diagnosed by check_product (matmul_grader.cu), which also knows the kernel works in
// tiles: wrong elements only in the partial edge tiles. Performance: GFLOP/s at 4096^3 against
// cuBLAS FP32, with the grader's own naive product as the yardstick.
#include "matmul_grader.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace matmul_grader;

namespace {

void launch_tiled(Problem& p, cudaStream_t stream = nullptr, int extra_blocks = 0) {
  const auto [M, N, K] = p.shape;
  dim3 grid = grid_for(dim3(kTile, kTile), p.shape);
  grid.x += extra_blocks, grid.y += extra_blocks;
  matmul_tiled<<<grid, dim3(kTile, kTile), 0, stream>>>(p.A.data(), p.B.data(), p.C.data(), M, N, K);
  WORKBOOK_CHECK_LAUNCH();
}

// The evidence for the grader's launches of the lesson's kernel.
Evidence tiled_evidence() {
  return {[](Problem& q) { launch_tiled(q); }, true, dim3(kTile, kTile)};
}

}  // namespace

TEST_CASE("Task 2: matmul_tiled is correct for every shape, tile multiple or not", "[task_2]") {
  grader::require_gpu();
  require_writes("matmul_tiled on M x N x K = 17 x 33 x 127 (blocks of kTile x kTile)",
                 [](Problem& p) { launch_tiled(p); });
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 2");
    CAPTURE(s.str());
    launch_tiled(p);
    check_product(p, "matmul_tiled", tiled_evidence());
  }
  SECTION("blocks entirely outside C write nothing") {
    Problem p({33, 65, 40}, "task 2 extra blocks");
    launch_tiled(p, nullptr, 2);
    check_product(p, "matmul_tiled with 2 more blocks than needed in x and y",
                  Evidence{[](Problem& q) { launch_tiled(q, nullptr, 2); }, true, dim3(0, 0, 0)});
  }
}

TEST_CASE("Task 2: matmul_tiled gives the right C run after run on fresh data", "[task_2]") {
  grader::require_gpu();
  check_fresh_runs("matmul_tiled", tiled_evidence());
}

TEST_CASE("Task 2: matmul_tiled GFLOP/s at 4096^3", "[task_2][perf]") {
  grader::require_gpu();
  Problem p({kPerfSize, kPerfSize, kPerfSize}, "task 2 perf");
  launch_tiled(p);
  check_product(p, "matmul_tiled", tiled_evidence());
  record_rate(p, time_launch([&](cudaStream_t s) { launch_tiled(p, s); }), Yardstick::naive);
}
