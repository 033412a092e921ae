// What lesson 04 times, declared once for the grader's timed tests and for ./sweep 04
// (tools/bench/04_reduction.cu): the lesson's sums of n floats, each reading its input once
// (4 bytes and one addition per element), against cub::DeviceReduce::Sum on the same data. The
// figure of merit is the bandwidth as a fraction of CUB's, measured in the same run (CubSum, in
// cub_sum.hpp: CUB's headers are slow to compile, so only the files that time it include them).
//
// ./sweep 04 times every function at sizes 10^3 .. 10^9 in half decades (reduce_block at
// kDefaultBlock threads unless --blocks says otherwise); tasks 2 to 4's timed tests time the same
// functions at 2^26 and 2^28 (kGradedLog2N), the lower fraction of CUB counting (./sweep 04
// --sizes 67108864,268435456 times those sizes too).
//
// Both check a sum before they time it with one rule, the error bound of a tree-shaped float32
// sum times kC (grader/README.md, "Lesson 04's tolerance").
#pragma once

#include "reduction.hpp"

#include "workbook/workbook.hpp"

#include <cstddef>

namespace reduction_benchmark {

constexpr double kBytesPerElement = 4.0;  // the input, read once (reduce_block's n / B sums left out)
constexpr double kFlopsPerElement = 1.0;  // one addition
constexpr double kSweepFirstN = 1e3, kSweepLastN = 1e9;  // ./sweep 04's sizes, in half decades
constexpr int kDefaultBlock = 256;                       // reduce_block's threads per block
constexpr int kGradedLog2N[] = {26, 28};

// The tolerance factor c, calibrated on an H100 (grader/README.md, "Lesson 04's tolerance"): the
// reference's errors stay below ceil(log2 n) * u * sum|x| (c = 1; 0.5 at most), the plain
// student's reached 1.0 on an H200, and sound student designs add in long sequential runs whose
// rounding errors add up like a random walk: a grid-stride loop of thousands of elements per
// thread, thousands of atomicAdds into one float. A sum of squares with one atomicAdd per warp
// reached 5 on the offset input at 2^22, a loop of one thread per block 4. c = 16 leaves room for
// those; ones must still come out exactly, which is what catches dropped and doubled elements.
constexpr double kC = 16.0;
constexpr double kUnitRoundoff = 0x1p-24;  // 2^-24

inline int ceil_log2(std::size_t n) {
  int levels = 0;
  while ((std::size_t(1) << levels) < n) ++levels;
  return levels;
}

// How far a float32 sum of \p count elements whose |x| add up to \p sum_abs may be from the exact
// sum: kC times the error bound of a tree of depth ceil(log2 count), each level rounding.
inline double tree_sum_tolerance(std::size_t count, double sum_abs) {
  return kC * ceil_log2(count) * kUnitRoundoff * sum_abs;
}

// The same for an L2 norm \p norm of \p count elements: the sum of squares within the tree bound,
// then a square root (half the relative error) rounded once.
inline double norm_tolerance(std::size_t count, double norm) {
  return (kC * ceil_log2(count) * kUnitRoundoff / 2 + 2 * kUnitRoundoff) * norm;
}

// reduce_block launched as the lesson says: ceil(n / block) blocks of \p block threads, each with
// \p block floats of shared memory, on \p stream.
inline void launch_reduce_block(const float* in, std::size_t n, float* sums, int block, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>((n + block - 1) / block);
  reduce_block<<<grid, block, block * sizeof(float), stream>>>(in, n, sums);
}

// How the grader times one function (measure()'s policy; the sweep takes its numbers from the
// command line and flushes L2).
inline workbook::MeasureOptions graded_timing() {
  workbook::MeasureOptions options;
  options.warmup = 5;  // a few more than elsewhere: at 2^26 a cold first few samples shifted CUB's median
  options.samples = 30;
  options.slow_ms = 100.0;  // a pathologically slow function is timed once
  options.precision = 0.01;  // enough samples to know the median to 1%, no more (measure())
  return options;
}

}  // namespace reduction_benchmark
