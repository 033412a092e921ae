/// \file
/// Timing GPU work with CUDA events: warm-up launches first, then N timed samples,
/// summarised by their median (robust to the odd slow sample), minimum and maximum.
/// Host clocks are not used: a launch returns before the GPU has done the work.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace workbook {

/// Summary of repeated timings, in milliseconds.
struct TimingStats {
  double median_ms = 0;  ///< median sample; the number to report
  double min_ms = 0;     ///< fastest sample
  double max_ms = 0;     ///< slowest sample
  int samples = 0;       ///< how many samples were taken
};

/// Median, minimum and maximum of \p samples_ms (host-only; empty input gives zeros).
TimingStats summarize_ms(std::vector<double> samples_ms);

/// How time_on_device measures.
struct TimingOptions {
  int warmup = 3;         ///< untimed launches first (module load, first-launch costs, clocks)
  int samples = 20;       ///< timed launches
  bool flush_l2 = false;  ///< overwrite the L2 cache before each sample so data comes from DRAM
  cudaStream_t stream = nullptr;  ///< the stream \p work launches on
};

/// Times \p work, which must enqueue its GPU work on the stream it is given, with a pair
/// of CUDA events around each sample. Throws CudaError if any launch fails.
TimingStats time_on_device(const std::function<void(cudaStream_t)>& work, const TimingOptions& options = {});

/// Effective bandwidth in GB/s (1e9 bytes per second) of moving \p bytes in \p ms milliseconds.
double gigabytes_per_second(double bytes, double ms);

}  // namespace workbook
