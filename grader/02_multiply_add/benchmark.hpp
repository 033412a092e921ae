// What lesson 02 times, declared once for the grader's timed tests and for ./sweep 02
// (tools/bench/02_multiply_add.cu): multiply_add on n floats at a block size and a grid mode.
// Each element moves 12 bytes (x1 and x2 read, y written) and costs 2 flops; the figure of merit
// is the bandwidth as a fraction of the device's copy bandwidth measured in the same run.
//
// ./sweep 02 times kSweepBlocks x grid_modes() at sizes 10^4 .. 10^8 in half decades. Task 1's
// timed test takes the same grid further, to one larger size, kGradedN, at kGradedBlocks x
// grid_modes(), keeping the best (./sweep 02 --sizes 268435456 times that point too).
#pragma once

#include "multiply_add.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace multiply_add_benchmark {

constexpr double kBytesPerElement = 12.0;  // x1 and x2 read, y written
constexpr double kFlopsPerElement = 2.0;   // one multiply, one add

constexpr double kSweepFirstN = 1e4, kSweepLastN = 1e8;  // ./sweep 02's sizes, in half decades
constexpr int kSweepBlocks[] = {32, 64, 128, 256, 512, 1024};
constexpr std::size_t kGradedN = std::size_t{1} << 28;  // 1 GiB per array, far beyond L2
constexpr int kGradedBlocks[] = {128, 256, 512, 1024};

// The grid modes, the default first.
// "cover": (n + block - 1) / block blocks, one element per thread.
// "wave": one full wave, every SM holding as many blocks as it can at once; the kernel's
// grid-stride loop covers the rest.
inline const std::vector<std::string>& grid_modes() {
  static const std::vector<std::string> modes{"cover", "wave"};
  return modes;
}

// The blocks launched in \p mode for n elements and \p block threads per block.
inline long long grid_for(const std::string& mode, std::size_t n, int block) {
  if (mode == "cover") return static_cast<long long>((n + block - 1) / block);
  if (mode != "wave") throw std::invalid_argument("lesson 02 has no grid mode '" + mode + "' (cover, wave)");
  static const int sm_count = workbook::query_device(0).sm_count;
  int per_sm = 0;
  WORKBOOK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, multiply_add, block, 0));
  return static_cast<long long>(std::max(per_sm, 1)) * sm_count;
}

// How both time one launch: a probe first, then warm-up and samples (measure()'s policy; the
// sweep takes its numbers from the command line and flushes L2).
inline workbook::MeasureOptions graded_timing() {
  workbook::MeasureOptions options;
  options.samples = 15;
  options.slow_ms = 200.0;  // a pathologically slow kernel is timed once
  options.precision = 0.01;  // enough samples to know the median to 1%, no more (measure())
  return options;
}

}  // namespace multiply_add_benchmark
