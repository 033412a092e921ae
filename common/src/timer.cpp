// Timing. By events: samples are recorded back to back and read after one synchronisation, so
// the host never stalls the queue between samples. By the host's clock: whole operations.
#include "workbook/timer.hpp"

#include "workbook/device_buffer.hpp"
#include "workbook/stream.hpp"

#include <algorithm>
#include <chrono>
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

TimingStats time_on_device(const std::function<void(cudaStream_t)>& work, const TimingOptions& options) {
  if (options.samples < 1) throw std::invalid_argument("time_on_device: samples must be at least 1");
  const cudaStream_t stream = options.stream;

  DeviceBuffer<unsigned char> flush;
  if (options.flush_l2) {
    int device = 0, l2_bytes = 0;
    WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
    WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    flush = DeviceBuffer<unsigned char>(2 * static_cast<std::size_t>(std::max(l2_bytes, 1 << 20)));
  }

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
  return summarize_ms(std::move(samples));
}

TimingOptions timing_after_probe(double probe_ms, const MeasureOptions& options) {
  TimingOptions timing;
  timing.flush_l2 = options.flush_l2;
  timing.stream = options.stream;
  if (probe_ms >= options.slow_ms) {
    timing.warmup = options.slow_warmup;
    timing.samples = std::min(options.slow_samples, options.samples);
  } else {
    timing.warmup = options.warmup;
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
  return timing.samples == 0 ? first : time_on_device(work, timing);
}

TimingStats time_on_host(const std::function<void()>& work, int warmup, int samples) {
  if (samples < 1) throw std::invalid_argument("time_on_host: samples must be at least 1");
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
