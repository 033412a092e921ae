// Lesson 04, task 1: reduce_block, one block's tree, launched by the grader.
//
// What is checked: every block's sum, for every power-of-two block from 32 to 1024, on each
// correctness size up to a prime near 2^20 and each input (reduction_grader.hpp); then the same
// sums run after run on fresh data. A wrong block sum is diagnosed by check_blocks
// (reduction_grader.cu): reruns for a race, the last partial block, probes with ones.
#include "reduction_grader.hpp"

#include "diagnosis.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace reduction_grader;

TEST_CASE("Task 1: reduce_block gives every block's sum, for every power-of-two block", "[task_1]") {
  grader::require_gpu();
  {
    Data probe(1000, Input::Uniform, "probe");
    workbook::GuardedDeviceArray sums(4);
    const auto trace = grader::trace([&] {
      launch_block(probe.device.data(), probe.size(), sums.data(), 256);
      grader::synchronize("reduce_block, the first launch");
    });
    const auto out = grader::read_back(sums);
    if (out.guards.intact() && std::all_of(out.values.begin(), out.values.end(), workbook::is_poison)) {
      grader::wrote_nothing("reduce_block<<<4, 256, 1024 bytes>>> on n = 1000 ran and wrote nothing: " +
                                grader::untouched_output("block_sums", 4),
                            trace);
    }
  }
  std::vector<int> blocks{32, 64, 128, 256, 512, 1024};
  for (const std::size_t n : correctness_sizes()) {
    if (n > (std::size_t(1) << 20) && n != 1048573) continue;  // task 1 is about the tree, not the size
    for (const Input input : inputs_for()) {
      Data d(n, input, "task 1");
      for (const int block : blocks) {
        CAPTURE(d.text(), block);
        check_blocks(d, block, "reduce_block with blocks of " + std::to_string(block) + " on " + d.text());
      }
    }
  }
}

TEST_CASE("Task 1: reduce_block gives the same sums run after run on fresh data", "[task_1]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) return;  // racecheck does this job there
  for (int attempt = 0; attempt < 4; ++attempt) {
    for (const int block : {256, 1024}) {
      Data d((std::size_t(1) << 20) + 17 * attempt, Input::Uniform, "task 1 fresh " + std::to_string(attempt));
      CAPTURE(d.text(), block, attempt);
      check_blocks(d, block, "reduce_block with blocks of " + std::to_string(block) + " on " + d.text() +
                             " (run " + std::to_string(attempt + 1) + " of 4 on fresh data)");
    }
  }
}
