// Lesson 03, task 1: matmul_naive, one thread per element of C, launched by the grader.
//
// What is checked: C = A * B on every correctness shape (matmul_grader.hpp: tiny, prime, one past
// the tile, thin, drawn from the seed, large), for blocks of 32 x 8 and 16 x 16 and, outside the
// sanitizer, 32 x 32, 64 x 2 and 8 x 4, each grid rounded up to whole blocks. A wrong C is
// diagnosed by check_product (matmul_grader.cu): the wrong elements as a matrix, stores past the
// end of C by the grid's extra threads, reruns. Performance: GFLOP/s at 4096^3 (best of three
// block shapes) against cuBLAS FP32, with the grader's own naive product as the yardstick.
#include "matmul_grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

using namespace matmul_grader;

namespace {

void launch_naive(Problem& p, dim3 block, cudaStream_t stream = nullptr) {
  const auto [M, N, K] = p.shape;
  matmul_naive<<<grid_for(block, p.shape), block, 0, stream>>>(p.A.data(), p.B.data(), p.C.data(), M, N, K);
  WORKBOOK_CHECK_LAUNCH();
}

// The evidence for the grader's launches of the lesson's kernels.
Evidence naive_evidence(dim3 block) {
  return {[block](Problem& q) { launch_naive(q, block); }, false, block};
}

}  // namespace

TEST_CASE("Task 1: matmul_naive is correct for every shape and block shape", "[task_1]") {
  grader::require_gpu();
  require_writes("matmul_naive<<<(3, 2), (16, 16)>>> on M x N x K = 17 x 33 x 127",
                 [](Problem& p) { launch_naive(p, dim3(16, 16)); });
  std::vector<dim3> blocks{dim3(32, 8), dim3(16, 16)};
  if (!grader::sanitize_mode()) blocks.insert(blocks.end(), {dim3(32, 32), dim3(64, 2), dim3(8, 4)});
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 1");
    for (const dim3 block : blocks) {
      CAPTURE(s.str(), block.x, block.y);
      p.C.enqueue_poison();  // launch_naive launches on the same (default) stream
      launch_naive(p, block);
      check_product(p, "matmul_naive with blocks of " + std::to_string(block.x) + " x " + std::to_string(block.y),
                    naive_evidence(block));
    }
  }
}

TEST_CASE("Task 1: matmul_naive GFLOP/s at 4096^3", "[task_1][perf]") {
  grader::require_gpu();
  Problem p({kPerfSize, kPerfSize, kPerfSize}, "task 1 perf");
  launch_naive(p, dim3(32, 8));
  check_product(p, "matmul_naive", naive_evidence(dim3(32, 8)));
  record_rate(p, time_naive_blocks([&](dim3 block, cudaStream_t s) { launch_naive(p, block, s); }), Yardstick::naive);
}
