// What lesson 06 times, declared once: the grader's timed tests read it, and so does the lesson's
// sweep (tools/bench/06_debugging_profiling.cu).
//
// Every timed function of the lesson (the transposes, the field strength, the fast heat step)
// reads each point of an n x n grid once and writes each point once: 8 bytes a point. The figure
// of merit is that traffic's bandwidth as a fraction of the device's copy bandwidth, measured in
// the same run; each timed test is the point n = kGradedN.
#pragma once

#include "debugging_profiling.hpp"

#include "workbook/workbook.hpp"

#include <cstddef>

namespace profiling_benchmark {

constexpr double kBytesPerPoint = 8.0;  // one float read, one float written
constexpr int kGradedN = 8192;          // 8192 x 8192 floats: 256 MiB a grid, far beyond L2
// ./sweep 06: n x n grids for n in these sides, L2-resident at the small end, the graded size at
// the large one (tools/bench/06_debugging_profiling.cu).
constexpr int kSweepSides[] = {256, 512, 1024, 2048, 4096, 8192};

// The bytes a call on an nx-by-ny grid must move.
constexpr double bytes(int nx, int ny) { return kBytesPerPoint * double(nx) * double(ny); }

// How the grader times one call: a probe first, then warm-up and samples (workbook::measure).
inline workbook::MeasureOptions graded_timing() {
  workbook::MeasureOptions options;
  options.slow_ms = 200.0;  // a pathologically slow call is timed once
  options.precision = 0.01;  // enough samples to know the median to 1%, no more (measure())
  return options;
}

}  // namespace profiling_benchmark
