// Timing. By events: samples are recorded back to back and read after one synchronisation, so
// the host never stalls the queue between samples. By the host's clock: whole operations.
#include "workbook/timer.hpp"

#include "workbook/device_buffer.hpp"
#include "workbook/stream.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

// The CUDA runtime's profiler range (cuda_profiler_api.h), declared here: that header is not in every
// toolkit layout (CI's CUDA 12.4 one, from PyPI's wheels, lacks it), and libcudart exports both with
// C linkage.
extern "C" cudaError_t cudaProfilerStart(void);
extern "C" cudaError_t cudaProfilerStop(void);

namespace workbook {

TimingStats summarize_ms(std::vector<double> samples_ms) {
  TimingStats stats;
  stats.samples = static_cast<int>(samples_ms.size());
  if (samples_ms.empty()) return stats;
  std::sort(samples_ms.begin(), samples_ms.end());
  const std::size_t n = samples_ms.size();
  stats.median_ms = n % 2 == 1 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  stats.min_ms = samples_ms.front();
  stats.max_ms = samples_ms.back();
  return stats;
}

double gigabytes_per_second(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0.0; }

namespace {

std::atomic<void (*)()> before_first_timing{nullptr};

// The hook set by set_before_first_timing, called once: the first timing of the process calls it.
void pass_before_first_timing() {
  if (void (*hook)() = before_first_timing.exchange(nullptr)) hook();
}

// The buffer time_on_device overwrites before each sample to flush L2 (empty without flush_l2).
DeviceBuffer<unsigned char> l2_flush_buffer(bool flush_l2) {
  if (!flush_l2) return {};
  int device = 0, l2_bytes = 0;
  WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  return DeviceBuffer<unsigned char>(2 * static_cast<std::size_t>(std::max(l2_bytes, 1 << 20)));
}

// The warm-up, then the samples' times (ms), recorded back to back and read after one wait.
std::vector<double> device_samples(const std::function<void(cudaStream_t)>& work, const TimingOptions& options,
                                   DeviceBuffer<unsigned char>& flush) {
  const cudaStream_t stream = options.stream;
  for (int i = 0; i < options.warmup; ++i) {
    work(stream);
    WORKBOOK_CHECK_LAUNCH();
  }
  std::vector<Event> starts(options.samples), stops(options.samples);
  for (int i = 0; i < options.samples; ++i) {
    if (options.flush_l2) WORKBOOK_CUDA_CHECK(cudaMemsetAsync(flush.data(), i & 0xFF, flush.bytes(), stream));
    starts[i].record(stream);
    work(stream);
    WORKBOOK_CHECK_LAUNCH();
    stops[i].record(stream);
  }
  stops.back().synchronize();
  std::vector<double> samples;
  samples.reserve(options.samples);
  for (int i = 0; i < options.samples; ++i) samples.push_back(elapsed_ms(starts[i], stops[i]));
  return samples;
}

}  // namespace

void set_before_first_timing(void (*hook)()) { before_first_timing.store(hook); }

TimingStats time_on_device(const std::function<void(cudaStream_t)>& work, const TimingOptions& options) {
  if (options.samples < 1) throw std::invalid_argument("time_on_device: samples must be at least 1");
  pass_before_first_timing();
  DeviceBuffer<unsigned char> flush = l2_flush_buffer(options.flush_l2);
  return summarize_ms(device_samples(work, options, flush));
}

bool median_known_within(std::vector<double> samples_ms, double precision) {
  const std::size_t n = samples_ms.size();
  if (n < 5 || !(precision > 0)) return false;
  // The interval [x_(j), x_(n+1-j)] (1-based) misses the median with probability 2 P(B <= j - 1),
  // B ~ Binomial(n, 1/2): the largest j whose interval still covers it with probability 0.9.
  std::size_t j = 0;
  double below = 0.0, term = std::pow(0.5, double(n));  // P(B = 0)
  for (std::size_t k = 0; k < n / 2; ++k) {  // j = k + 1 misses with 2 P(B <= k)
    below += term;
    if (1.0 - 2.0 * below < 0.9) break;
    j = k + 1;
    term *= double(n - k) / double(k + 1);  // P(B = k + 1)
  }
  if (j == 0) return false;
  std::sort(samples_ms.begin(), samples_ms.end());
  const double median = summarize_ms(samples_ms).median_ms;
  return median > 0 && samples_ms[n - j] - samples_ms[j - 1] <= 2.0 * precision * median;
}

TimingOptions timing_after_probe(double probe_ms, const MeasureOptions& options) {
  TimingOptions timing;
  timing.flush_l2 = options.flush_l2;
  timing.stream = options.stream;
  if (probe_ms >= options.slow_ms) {
    timing.warmup = options.slow_warmup;
    timing.samples = std::min(options.slow_samples, options.samples);
  } else {
    timing.warmup = options.precision > 0 && probe_ms >= kLongProbeMs ? std::min(options.warmup, 1) : options.warmup;
    timing.samples = options.samples;
  }
  return timing;
}

bool profiling_requested() {
  static const bool requested = std::getenv("WORKBOOK_PROFILE") != nullptr;
  return requested;
}

void run_profiled(const std::function<void(cudaStream_t)>& work, cudaStream_t stream) {
  if (!profiling_requested()) return;
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());  // nothing but the work in the profiled range
  WORKBOOK_CUDA_CHECK(cudaProfilerStart());
  work(stream);
  WORKBOOK_CHECK_LAUNCH();
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());  // work on the student's own streams too
  WORKBOOK_CUDA_CHECK(cudaProfilerStop());
}

TimingStats measure(const std::function<void(cudaStream_t)>& work, const MeasureOptions& options) {
  if (options.samples < 1) throw std::invalid_argument("measure: samples must be at least 1");
  if (options.profiled) run_profiled(work, options.stream);
  TimingOptions probe;
  probe.warmup = 0;
  probe.samples = 1;
  probe.flush_l2 = options.flush_l2;
  probe.stream = options.stream;
  const TimingStats first = time_on_device(work, probe);
  const TimingOptions timing = timing_after_probe(first.median_ms, options);
  if (timing.samples == 0) return first;
  // Short work takes every sample: they cost little, and its first samples run on clocks still
  // rising (lesson 04's 0.1 ms reductions, stopped at five, fell below CUB and were timed again).
  if (!(options.precision > 0) || first.median_ms < kLongProbeMs || timing.samples <= options.min_samples) {
    return time_on_device(work, timing);
  }
  // Batches of min_samples until the median is known well enough, or every sample is taken. Asked
  // after every batch, the rule stops a little more often than its 0.9 says; and a later batch's
  // first sample may carry a launch's latency (microseconds): both far inside the verdicts' margins.
  DeviceBuffer<unsigned char> flush = l2_flush_buffer(timing.flush_l2);
  TimingOptions batch = timing;
  std::vector<double> samples;
  while (int(samples.size()) < timing.samples &&
         (samples.empty() || !median_known_within(samples, options.precision))) {
    batch.samples = std::min(std::max(options.min_samples, 1), timing.samples - int(samples.size()));
    const std::vector<double> more = device_samples(work, batch, flush);
    if (samples.empty() && summarize_ms(more).median_ms < kLongProbeMs) {
      // Long only by a first call's costs (a module loaded, a library's first launch): short work
      // after all, timed as short work is, with the whole warm-up and every sample.
      TimingOptions full = timing;
      full.warmup = options.warmup;
      return summarize_ms(device_samples(work, full, flush));
    }
    samples.insert(samples.end(), more.begin(), more.end());
    batch.warmup = 0;
  }
  return summarize_ms(std::move(samples));
}

TimingStats time_on_host(const std::function<void()>& work, int warmup, int samples) {
  if (samples < 1) throw std::invalid_argument("time_on_host: samples must be at least 1");
  pass_before_first_timing();
  for (int i = 0; i < warmup; ++i) work();
  std::vector<double> ms;
  ms.reserve(samples);
  for (int i = 0; i < samples; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return summarize_ms(std::move(ms));
}

}  // namespace workbook
