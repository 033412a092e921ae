// Worked example for lesson 05: temporaries that come and go in a loop. 200 batches, each
// smoothed into a temporary buffer and transformed from it into the output (the lesson's two
// kernels), the temporary allocated and freed per batch: with cudaMalloc and cudaFree, then in
// stream order with cudaMallocAsync and cudaFreeAsync from the device's default pool, its
// release threshold at 0 (the default) and at UINT64_MAX. Each way runs once with one wait at
// the end of the loop and once with a wait after every batch, and the pool's reserved memory
// after a wait shows what the threshold keeps. It does not create a pool of its own; task 3 may.
// Lesson 05's README quotes it between the //! [name] markers; ctest runs it.
#include "streams.hpp"

#include "workbook/workbook.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBatches = 200;
constexpr std::size_t kLargestBatch = std::size_t(1) << 18;  // floats: 1 MiB

enum class Allocator { Synchronous, StreamOrdered };

struct Batches {
  std::vector<std::size_t> offsets{0};
  workbook::DeviceBuffer<float> in, out;
  Batches() {
    for (int b = 0; b < kBatches; ++b) offsets.push_back(offsets.back() + 1 + workbook::mix64(b) % kLargestBatch);
    in = workbook::DeviceBuffer<float>(offsets.back());
    out = workbook::DeviceBuffer<float>(offsets.back());
    workbook::fill_random_device(in.data(), in.size(), 7);
    // The fill ran on the legacy default stream, which the non-blocking stream below does not
    // wait for: wait for it here.
    WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  }
  std::size_t begin(int b) const { return offsets[b]; }
  std::size_t count(int b) const { return offsets[b + 1] - offsets[b]; }
  // Batch b's kernels, queued on s: out = transform(smooth(in)) over the batch, through tmp.
  void work_through(float* tmp, int b, cudaStream_t s) {
    streams::smooth(in.data() + begin(b), tmp, count(b), s);
    streams::transform(tmp, out.data() + begin(b), count(b), 1, s);
  }
};

// Every batch through a temporary of its own; a wait after each batch or only at the end.
void run_batches(Batches& batches, Allocator allocator, bool wait_each, cudaStream_t s) {
  for (int b = 0; b < kBatches; ++b) {
    const std::size_t bytes = batches.count(b) * sizeof(float);
    if (allocator == Allocator::Synchronous) {
      float* tmp = nullptr;
      WORKBOOK_CUDA_CHECK(cudaMalloc(&tmp, bytes));
      batches.work_through(tmp, b, s);
      WORKBOOK_CUDA_CHECK(cudaFree(tmp));  // waits for the whole device before it frees
    } else {
      //! [stream_ordered]
      float* tmp = nullptr;
      WORKBOOK_CUDA_CHECK(cudaMallocAsync(&tmp, bytes, s));  // queued on s: the host does not wait
      batches.work_through(tmp, b, s);                       // kernels on s that use tmp
      WORKBOOK_CUDA_CHECK(cudaFreeAsync(tmp, s));  // freed once those kernels are done; the host goes on
      //! [stream_ordered]
    }
    if (wait_each) WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(s));
}

void set_release_threshold(cudaMemPool_t pool, std::uint64_t bytes) {
  //! [release_threshold]
  // How much freed memory the pool may keep when the program synchronises; above it, the rest
  // goes back to the system (and must be fetched again by a later allocation).
  WORKBOOK_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes));
  //! [release_threshold]
}

std::uint64_t reserved_bytes(cudaMemPool_t pool) {
  std::uint64_t bytes = 0;
  WORKBOOK_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &bytes));
  return bytes;
}

// Median host time of one run of the loop, after one untimed run.
double loop_ms(Batches& batches, Allocator allocator, bool wait_each, cudaStream_t s) {
  run_batches(batches, allocator, wait_each, s);
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    run_batches(batches, allocator, wait_each, s);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return workbook::summarize_ms(ms).median_ms;
}

}  // namespace

int main(int, char** argv) {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  int device = 0, pools_supported = 0;
  WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&pools_supported, cudaDevAttrMemoryPoolsSupported, device));
  if (!pools_supported) {
    std::fprintf(stderr, "%s: this GPU or driver has no stream-ordered allocator\n", argv[0]);
    return 77;
  }
  cudaMemPool_t pool = nullptr;
  WORKBOOK_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  Batches batches;
  workbook::Stream stream(cudaStreamNonBlocking);
  const cudaStream_t s = stream.get();

  // The expected bits: each batch smoothed on its own into one big temporary, then one transform.
  std::vector<float> expected(batches.in.size()), got(batches.in.size());
  {
    workbook::DeviceBuffer<float> smoothed(batches.in.size());
    for (int b = 0; b < kBatches; ++b) {
      streams::smooth(batches.in.data() + batches.begin(b), smoothed.data() + batches.begin(b), batches.count(b), s);
    }
    streams::transform(smoothed.data(), batches.out.data(), batches.in.size(), 1, s);
    stream.synchronize();
    batches.out.copy_to_host(expected.data());
  }
  bool ok = true;
  const auto same_as_expected = [&] {
    batches.out.copy_to_host(got.data());
    return std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0;
  };

  std::printf("%s: %d batches of 1 to %zu floats, each through a temporary; ms per loop (median of 5)\n",
              workbook::query_device().name.c_str(), kBatches, kLargestBatch);
  std::printf("  %-44s %16s %16s\n", "", "one wait at end", "wait every batch");
  struct Way {
    const char* name;
    Allocator allocator;
    std::uint64_t threshold;
  };
  std::uint64_t reserved_after_wait[2] = {0, 0};
  for (const Way& way : {Way{"cudaMalloc + cudaFree", Allocator::Synchronous, 0},
                         Way{"cudaMallocAsync + cudaFreeAsync, threshold 0", Allocator::StreamOrdered, 0},
                         Way{"the same, threshold UINT64_MAX", Allocator::StreamOrdered, UINT64_MAX}}) {
    set_release_threshold(pool, way.threshold);
    WORKBOOK_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));  // each way starts from an empty pool
    WORKBOOK_CUDA_CHECK(cudaMemsetAsync(batches.out.data(), 0xff, batches.out.bytes(), s));  // NaN until set
    const double once_ms = loop_ms(batches, way.allocator, false, s);
    const double each_ms = loop_ms(batches, way.allocator, true, s);
    ok = ok && same_as_expected();
    if (way.allocator == Allocator::StreamOrdered) {
      reserved_after_wait[way.threshold == 0 ? 0 : 1] = reserved_bytes(pool);
    }
    std::printf("  %-44s %13.3f ms %13.3f ms\n", way.name, once_ms, each_ms);
  }
  std::printf("the default pool's reserved memory after the loop's last wait: %llu bytes with threshold 0, "
              "%llu bytes with UINT64_MAX\n", static_cast<unsigned long long>(reserved_after_wait[0]),
              static_cast<unsigned long long>(reserved_after_wait[1]));
  set_release_threshold(pool, 0);  // the default again
  WORKBOOK_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
  ok = ok && reserved_after_wait[1] >= kLargestBatch / 2 * sizeof(float);  // UINT64_MAX kept the memory
  if (!ok) std::printf("\nFAILED: a loop gave other bits than the reference, or the pool kept nothing\n");
  return ok ? 0 : 1;
}
