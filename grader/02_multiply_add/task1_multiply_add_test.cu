// Lesson 02, task 1: multiply_add, a grid-stride kernel, launched by the grader.
//
// What is checked: y = x1*x2 + b for every block size from 32 to 1024 (and 96 and 1000, not
// powers of two), at the sizes grader::test_sizes gives for that block (2^26 + 7 for blocks of
// 256), with grids of exactly enough blocks, more than enough, one per SM and (for smaller n) 7
// and 1 block: a grid-stride loop is correct for any grid (in the check of a pass under
// compute-sanitizer, four blocks and three grids). y is poisoned and guarded
// (multiply_add_grader.hpp). Performance: GB/s at 2^28 elements for the best of eight launch
// configurations, as a fraction of the copy bandwidth measured in the same run.
#include "multiply_add_grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include <map>
#include <string>
#include <vector>

using namespace multiply_add_grader;

TEST_CASE("Task 1: multiply_add is correct for every block size and grid", "[task_1]") {
  grader::require_gpu();
  require_writes("multiply_add<<<4, 128>>> on n = 1000",
                 [](Problem& p) { multiply_add<<<4, 128>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n()); });
  const auto info = workbook::query_device(0);
  const std::size_t large = workbook::fit_in_free_memory(kLargeCorrectness, 3);
  // One problem per size, kept for every block size that tests it (y is poisoned before each
  // launch): each problem costs allocations and waits, round trips that cost about a millisecond
  // each where gradings share the GPU.
  std::map<std::size_t, Problem> problems;
  // In the check of a pass under compute-sanitizer a subset, since there every launch is
  // instrumented and waited for: the smallest and largest block, the default one and one that is
  // not a whole number of warps; grids of exactly enough blocks, more than enough and 7 blocks
  // (far fewer than n needs: a grid-stride loop's every path). The plain run and ./grade
  // --sanitize cover every shape.
  const bool sanitizer = grader::pass_check_mode();
  const std::vector<int> blocks = sanitizer ? std::vector<int>{256, 32, 1024, 1000}
                                            : std::vector<int>{256, 32, 64, 128, 512, 1024, 96, 1000};
  for (const int block : blocks) {
    for (const std::size_t n : grader::test_sizes(block, block == 256 ? large : 0)) {
      // Exactly enough blocks, more than enough, one wave, and grids far smaller than n.
      std::vector<int> grids{blocks_for(n, block), blocks_for(n, block) + 3};
      if (!sanitizer) grids.push_back(info.sm_count);
      if (n <= (std::size_t{1} << 22)) grids.push_back(7);
      if (n <= (std::size_t{1} << 20) && !sanitizer) grids.push_back(1);
      Problem& p = problems.try_emplace(n, n, "task 1").first->second;
      for (const int grid : grids) {
        CAPTURE(n, block, grid, p.b);
        p.y.enqueue_poison();  // the launch below is on the same (default) stream
        multiply_add<<<grid, block>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n());
        WORKBOOK_CHECK_LAUNCH();
        check_output(p, 1LL * grid * block);
      }
      if (n > (std::size_t{1} << 20)) problems.erase(n);  // block 256's large size (and a rare random one)
    }
  }
}

TEST_CASE("Task 1: multiply_add bandwidth, best launch configuration", "[task_1][perf]") {
  grader::require_gpu();
  // Lesson 02's benchmark (benchmark.hpp) at one size: every graded block size in every grid mode.
  const std::size_t n = workbook::fit_in_free_memory(multiply_add_benchmark::kGradedN, 3);
  Problem p(n, "task 1 perf");
  struct Config { int block, grid; std::string mode; };
  std::vector<Config> configs;
  for (const int block : multiply_add_benchmark::kGradedBlocks) {
    for (const std::string& mode : multiply_add_benchmark::grid_modes()) {
      configs.push_back({block, static_cast<int>(multiply_add_benchmark::grid_for(mode, n, block)), mode});
    }
  }
  // A wrong kernel is never timed: the output of the first configuration is checked before
  // any timing, that of the last one after it (the correctness test covered every shape).
  multiply_add<<<configs.front().grid, configs.front().block>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n());
  WORKBOOK_CHECK_LAUNCH();
  check_output(p);
  workbook::TimingStats best;
  Config best_config{};
  const auto launch = [&](const Config& c, cudaStream_t s) {
    multiply_add<<<c.grid, c.block, 0, s>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n());
  };
  for (const Config& c : configs) {
    const auto stats = time_launch([&](cudaStream_t s) { launch(c, s); }, false);
    if (best.samples == 0 || stats.median_ms < best.median_ms) {
      best = stats;
      best_config = c;
    }
  }
  workbook::run_profiled([&](cudaStream_t s) { launch(best_config, s); });  // the configuration that counted
  p.y.poison();
  const Config& last = configs.back();
  multiply_add<<<last.grid, last.block>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n());
  WORKBOOK_CHECK_LAUNCH();
  check_output(p);
  grader::record_metric("best_block", best_config.block);
  grader::record_metric("best_grid", best_config.grid);
  record_bandwidth(n, best);
}
