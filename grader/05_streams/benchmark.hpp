// What lesson 05 times, declared once for the grader's timed tests and for ./sweep 05
// (tools/bench/05_streams.cu): streams::process, the chunked pipeline, on n floats from pinned
// memory, at a number of streams S and of chunks C. The kernel's `work` is calibrated first so
// that the kernel alone takes as long as the copy in alone: then overlap can save up to two
// thirds of the sequential time. The figure of merit is the overlap bound
// max(kernel, copies in and out at once) over the pipeline's time by the host clock (process
// returns when its output is on the host, which is what a caller waits for).
//
// ./sweep 05 times the grid kSweepStreams x kSweepChunks at kTimedN; task 1's timed test is its
// point (kGradedStreams, kGradedChunks). The sweep's bound (tools/bench/overlap.py) still takes
// each copy alone, max(H2D, kernel, D2H).
#pragma once

#include "streams.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

namespace streams_benchmark {

constexpr std::size_t kTimedN = std::size_t(1) << 26;  // 256 MiB each way
constexpr int kSweepStreams[] = {1, 2, 3, 4, 8};
constexpr int kSweepChunks[] = {1, 2, 4, 8, 16, 32, 64};
// 8 MiB chunks: the copies run near full speed, and filling and draining cost 2/32 of the bound.
constexpr int kGradedStreams = 4, kGradedChunks = 32;

// The best time overlap allows: the longest stage, when the others run under it. A pipeline runs
// its copies in and out at once, and a machine may not give each direction its full speed while
// the other is busy, so the copies are timed together (copies_together_ms), not each alone: on an
// H200 (November 28, 2026) 256 MiB each way took 4.85 ms alone and 5.3-5.5 ms together, and the
// pipeline of 32 chunks with its kernels left out took 5.6-6.0 ms.
inline double overlap_bound(double kernel_ms, double copies_together_ms) {
  return std::max(kernel_ms, copies_together_ms);
}

// The GPU time of one stage (a copy or the kernel), enqueued by \p work on a non-blocking stream
// of its own, by CUDA events: one warm-up, then \p samples. No L2 flush: each stage moves far
// more than L2 holds.
inline workbook::TimingStats stage_time(const std::function<void(cudaStream_t)>& work, int samples = 5) {
  workbook::Stream stream(cudaStreamNonBlocking);
  workbook::TimingOptions timing;
  timing.warmup = 1;
  timing.samples = samples;
  timing.stream = stream.get();
  return workbook::time_on_device(work, timing);
}

// The GPU time of \p bytes copied in (from \p host_in to \p device_in) and \p bytes copied out (from
// \p device_out to \p host_out) at once, on two streams of their own, by CUDA events: one warm-up,
// then \p samples. With one copy engine the two take turns, and this is their sum.
inline workbook::TimingStats copies_together_time(float* device_in, const float* host_in, float* host_out,
                                                  const float* device_out, std::size_t bytes, int samples = 5) {
  workbook::Stream out_stream(cudaStreamNonBlocking);
  workbook::Event fork(cudaEventDisableTiming), join(cudaEventDisableTiming);
  return stage_time([&](cudaStream_t s) {
    fork.record(s);
    WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(out_stream.get(), fork.get(), 0));
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device_in, host_in, bytes, cudaMemcpyHostToDevice, s));
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(host_out, device_out, bytes, cudaMemcpyDeviceToHost, out_stream.get()));
    join.record(out_stream.get());
    WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(s, join.get(), 0));
  }, samples);
}

// The `work` at which streams::transform of n floats takes \p target_ms on this GPU: the
// kernel's time is close to a + b * work, measured at two points.
inline int work_for(const float* in, float* out, std::size_t n, double target_ms) {
  constexpr int kLow = 16, kHigh = 256;
  const double low = stage_time([&](cudaStream_t s) { streams::transform(in, out, n, kLow, s); }).median_ms;
  const double high = stage_time([&](cudaStream_t s) { streams::transform(in, out, n, kHigh, s); }).median_ms;
  const double per_step = std::max((high - low) / (kHigh - kLow), 1e-9);
  return static_cast<int>(std::clamp(kLow + (target_ms - low) / per_step, 1.0, 1e6));
}

// streams::transform of every element of \p x by the lesson's kernel in one launch: the bits a
// right answer has (the kernel is elementwise, so any prefix of it is right for that prefix of x).
inline std::vector<float> transformed(const std::vector<float>& x, int work) {
  if (x.empty()) return {};
  workbook::DeviceBuffer<float> in(x.size()), out(x.size());
  in.copy_from_host(x.data());
  streams::transform(in.data(), out.data(), x.size(), work, nullptr);
  std::vector<float> y(x.size());
  out.copy_to_host(y.data());
  return y;
}

}  // namespace streams_benchmark
