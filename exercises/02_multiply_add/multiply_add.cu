// Lesson 02: y = x1*x2 + B. Read lessons/02_multiply_add/README.md first.
//
// Fill in the three TODOs; each is one task of the lesson. Grade your work with
//     ./grade 02
// and, once task 1 passes, sweep sizes and launch configurations for your report with
//     ./sweep 02
// Untouched, this file compiles and every task is graded "not implemented yet".
#include "multiply_add.hpp"

#include "workbook/workbook.hpp"

#include <stdexcept>
#include <string>
#include <vector>

__global__ void multiply_add(const float* x1, const float* x2, float b, float* y, int n) {
  // TODO(task 1): y[i] = x1[i] * x2[i] + b for every i < n, right for EVERY launch configuration: the
  // grader uses blocks of 32 to 1024 threads (96 and 1000 too) and grids from a single block to more
  // than n needs, with n around warp and block boundaries and up to 2^26; nothing outside y is
  // written. The grid-stride loop of lesson 01 is the tool. Timed at n = 2^28 against the copy
  // bandwidth (70%). Lesson sections: "Choosing the block and the grid", "Task 1".
}

void launch_multiply_add(const float* x1, const float* x2, float b, float* y, int n, LaunchConfig config,
                         cudaStream_t stream) {
  // TODO(task 2): launch multiply_add with `config` on `stream`, and refuse what cannot be launched.
  // The contract (multiply_add.hpp says why):
  //   - n < 0, a block outside 1 .. this device's maximum threads per block, or a negative grid:
  //     throw std::invalid_argument with a message naming the bad value, before launching anything.
  //   - n == 0: launch nothing.
  //   - config.grid == 0 means "auto": your choice of grid, at most enough blocks to cover n, and at
  //     least the SM count when n needs that many.
  //   - Exactly one multiply_add, on `stream`, its launch checked; no waiting for the GPU.
  // Timed with block 256 and your auto grid at n = 2^28 (70% of the copy bandwidth). Lesson sections:
  // "Choosing the block and the grid", "Streams and the fourth launch parameter", "Task 2".
  (void)x1, (void)x2, (void)b, (void)y, (void)n, (void)config, (void)stream;
}

workbook::TimingStats time_multiply_add(const float* x1, const float* x2, float b, float* y, int n,
                                        LaunchConfig config, int warmup, int samples) {
  // TODO(task 3): time launch_multiply_add(x1, x2, b, y, n, config) on the GPU's own clock: `warmup`
  // untimed launches, then `samples` timed ones, each measured on its own; return their median,
  // minimum and maximum in milliseconds (workbook::summarize_ms builds that from the sample times).
  // Throw std::invalid_argument when samples < 1 or warmup < 0. Write the timing yourself: the grader
  // compares your median with workbook::time_on_device's on the same launches (within 15% + 3 us, at
  // 2^16 and 2^26 elements), so do not call it. Lesson sections: "Timing GPU work: why the host clock
  // lies", "Warm-up, samples, median".
  (void)x1, (void)x2, (void)b, (void)y, (void)n, (void)config, (void)warmup, (void)samples;
  return {};
}
