// What lesson 07 times, declared once: the grader's timed tests read it, and so does the lesson's
// sweep. Each timed task is compared with another way of doing the same job, timed in the same
// run on the same GPU (baselines.hpp):
// - task 1, pi: cuRAND's host API drawing the 2n uniforms into memory, then a kernel counting the
//   points inside: what a program that does not fuse drawing and using does (speedup_over_host_api);
// - task 2, the histogram: one global atomicAdd per value (speedup_over_global_atomics);
// - task 4, the walkers: cuRAND's host API drawing the walk's 2 * count * steps normals into
//   memory, then a kernel adding them to the positions (speedup_over_host_api).
#pragma once

#include "monte_carlo.hpp"

#include "workbook/workbook.hpp"

#include <cstddef>
#include <cstdint>

namespace monte_carlo_benchmark {

constexpr std::uint64_t kPiN = std::uint64_t{1} << 26;  // points; the host API's 2n floats: 512 MiB
constexpr std::size_t kHistogramN = std::size_t{1} << 26;  // values: 256 MiB, far beyond L2
constexpr int kHistogramBins = 256;
constexpr float kHistogramLo = 0.0f, kHistogramHi = 8.0f;  // energies in units of kT
constexpr int kWalkers = 1 << 20;
constexpr int kWalkerSteps = 32;  // the host API's 2 * 2^20 * 32 normals: 256 MiB
constexpr float kWalkerSigma = 0.5f;

// How the grader times one call: a probe first, then warm-up and samples (workbook::measure).
inline workbook::MeasureOptions graded_timing() {
  workbook::MeasureOptions options;
  options.slow_ms = 200.0;  // a pathologically slow call is timed once
  options.precision = 0.01;  // enough samples to know the median to 1%, no more (measure())
  return options;
}

}  // namespace monte_carlo_benchmark
