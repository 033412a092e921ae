/// \file
/// Timing GPU work with CUDA events: warm-up launches first, then N timed samples,
/// summarised by their median (robust to the odd slow sample), minimum and maximum.
/// A kernel is timed by the GPU's clock, never the host's: a launch returns before the GPU has
/// done the work. The host's clock (time_on_host) is for whole operations a caller waits for.
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

/// The probe's time from which measure() samples only as long as MeasureOptions::precision needs.
constexpr double kLongProbeMs = 1.0;

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

/// How measure() times work whose cost is not known beforehand, such as a student's kernel that
/// may be pathologically slow: one probe sample first, then the warm-up and samples unless the
/// probe was slow. The grader's timed tests of kernels and ./sweep's kernel rows time this way.
struct MeasureOptions {
  int warmup = 3;          ///< untimed runs before the samples
  int samples = 20;        ///< timed samples after a probe that was not slow
  double slow_ms = 100.0;  ///< a probe that took this long or longer is slow...
  int slow_samples = 0;    ///< ...and is followed by this many samples (0: the probe is the measurement)...
  int slow_warmup = 0;     ///< ...after this many untimed runs
  bool flush_l2 = false;   ///< overwrite the L2 cache before each sample (the probe too)
  cudaStream_t stream = nullptr;  ///< the stream the work launches on
  /// The student's work, not a yardstick: when profiling_requested(), it runs once more first,
  /// alone, between cudaProfilerStart and cudaProfilerStop (the range Nsight Compute profiles
  /// with --profile-from-start off).
  bool profiled = false;
  /// For work whose probe took kLongProbeMs or more: stop sampling once the median is known to
  /// this fraction of itself (median_known_within), the samples taken in batches of min_samples up
  /// to `samples`; and one warm-up run stands for all of `warmup` (the probe paid the first
  /// launch's costs, and a run that long leaves the clocks up for the next). 0: every sample.
  /// Shorter work takes the warm-up and every sample: they cost little. So does work whose first
  /// batch's median is short after all (its probe was long by a first call's costs).
  double precision = 0.0;
  int min_samples = 5;  ///< with precision: the fewest samples, and the batch they come in
};

/// Whether the median of \p samples_ms is known to within \p precision of itself: the
/// distribution-free interval of the order statistics around the median that covers the true
/// median with probability 0.9 or more is no wider than 2 * precision * median. Needs 5 samples
/// or more (five give [min, max], 0.94). Host-only: measure()'s rule for stopping early.
bool median_known_within(std::vector<double> samples_ms, double precision);

/// Whether this process runs to be profiled: the environment variable WORKBOOK_PROFILE is set
/// (the grader runs a timed test that fell short again under Nsight Compute, see
/// grader/driver/counters.py).
bool profiling_requested();

/// When profiling_requested(): runs \p work once on \p stream, alone on the GPU, between
/// cudaProfilerStart and cudaProfilerStop, the only range Nsight Compute profiles with
/// --profile-from-start off. Otherwise does nothing. measure() calls it for work marked
/// MeasureOptions::profiled; a timed test that picks the best of several configurations calls it
/// on the one that counted.
void run_profiled(const std::function<void(cudaStream_t)>& work, cudaStream_t stream = nullptr);

/// The timing measure() does after a probe that took \p probe_ms; samples == 0 when the probe
/// itself is the measurement (host-only: the policy, apart from the GPU).
TimingOptions timing_after_probe(double probe_ms, const MeasureOptions& options);

/// Times \p work as MeasureOptions says: a probe, then time_on_device with
/// timing_after_probe(); with a precision, long work only until its median is known to it
/// (MeasureOptions::precision). Throws CudaError if any launch fails.
TimingStats measure(const std::function<void(cudaStream_t)>& work, const MeasureOptions& options = {});

/// Times \p work, which returns when its result is on the host, with the host's steady clock:
/// \p warmup untimed runs, then \p samples timed ones. The clock for whole operations a caller
/// waits for (copies, streams and the host's waits included), not for a single kernel.
TimingStats time_on_host(const std::function<void()>& work, int warmup, int samples);

/// Effective bandwidth in GB/s (1e9 bytes per second) of moving \p bytes in \p ms milliseconds.
double gigabytes_per_second(double bytes, double ms);

/// Sets a function that time_on_device and time_on_host call once, before the first timing of
/// the process (and measure() through them); nullptr sets none. The grader parks a timed program
/// there: its start and set-up run while other gradings share the GPU, and it waits until the
/// GPU is its alone (grader/support/grader_main.cpp, `./grade-class` on a shared GPU).
void set_before_first_timing(void (*hook)());

}  // namespace workbook
