// Worked example for lesson 05: memory that comes and goes in stream order. A loop of time
// steps that, like `x = f(x)` in CuPy, makes a new array at every step and drops the old one:
// 200 steps of the lesson's three-point smoothing on 2^18 floats, each step writing into a
// freshly allocated state and freeing the previous one while the kernel that reads it may still
// be queued. Allocated with cudaMalloc and cudaFree, then in stream order with cudaMallocAsync
// and cudaFreeAsync from the device's default pool, its release threshold at 0 (the default)
// and at UINT64_MAX. Each way runs once with one wait at the end and once with a wait after
// every step (as when the host checks each step, for convergence say), and the pool's reserved
// memory after a wait shows what the threshold keeps. It does not create a pool of its own;
// task 3 may. Lesson 05's README quotes it between the //! [name] markers; ctest runs it.
#include "streams.hpp"

#include "workbook/workbook.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSteps = 200;
constexpr std::size_t kFloats = std::size_t(1) << 18;  // 1 MiB of state
constexpr std::size_t kBytes = kFloats * sizeof(float);

enum class Allocator { Synchronous, StreamOrdered };

// kSteps smoothing steps from `initial` into `result`, each step into a state allocated for it;
// a wait after every step or only at the end.
void run_steps(const float* initial, float* result, Allocator allocator, bool wait_each, cudaStream_t s) {
  float* state = nullptr;
  if (allocator == Allocator::Synchronous) {
    WORKBOOK_CUDA_CHECK(cudaMalloc(&state, kBytes));
  } else {
    WORKBOOK_CUDA_CHECK(cudaMallocAsync(&state, kBytes, s));
  }
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(state, initial, kBytes, cudaMemcpyDeviceToDevice, s));
  for (int step = 0; step < kSteps; ++step) {
    if (allocator == Allocator::Synchronous) {
      float* next = nullptr;
      WORKBOOK_CUDA_CHECK(cudaMalloc(&next, kBytes));
      streams::smooth(state, next, kFloats, s);
      WORKBOOK_CUDA_CHECK(cudaFree(state));  // waits for the whole device before it frees
      state = next;
    } else {
      //! [stream_ordered]
      float* next = nullptr;
      WORKBOOK_CUDA_CHECK(cudaMallocAsync(&next, kBytes, s));  // queued on s: the host does not wait
      streams::smooth(state, next, kFloats, s);                // a kernel on s reads state, writes next
      WORKBOOK_CUDA_CHECK(cudaFreeAsync(state, s));  // freed once that kernel is done; the host goes on
      state = next;
      //! [stream_ordered]
    }
    if (wait_each) WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(result, state, kBytes, cudaMemcpyDeviceToDevice, s));
  if (allocator == Allocator::Synchronous) {
    WORKBOOK_CUDA_CHECK(cudaFree(state));
  } else {
    WORKBOOK_CUDA_CHECK(cudaFreeAsync(state, s));
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
double loop_ms(const float* initial, float* result, Allocator allocator, bool wait_each, cudaStream_t s) {
  run_steps(initial, result, allocator, wait_each, s);
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    run_steps(initial, result, allocator, wait_each, s);
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
  workbook::DeviceBuffer<float> initial(kFloats), result(kFloats);
  workbook::fill_random_device(initial.data(), kFloats, 7);
  // The fill ran on the legacy default stream, which the non-blocking stream below does not
  // wait for: wait for it here.
  WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  workbook::Stream stream(cudaStreamNonBlocking);
  const cudaStream_t s = stream.get();

  // The expected bits: the same steps, back and forth between two buffers allocated once.
  std::vector<float> expected(kFloats), got(kFloats);
  {
    workbook::DeviceBuffer<float> ping(kFloats), pong(kFloats);
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(ping.data(), initial.data(), kBytes, cudaMemcpyDeviceToDevice, s));
    for (int step = 0; step < kSteps; ++step) {
      streams::smooth(ping.data(), pong.data(), kFloats, s);
      std::swap(ping, pong);
    }
    stream.synchronize();
    ping.copy_to_host(expected.data());
  }
  bool ok = true;
  const auto same_as_expected = [&] {
    result.copy_to_host(got.data());
    return std::memcmp(got.data(), expected.data(), kBytes) == 0;
  };

  std::printf("%s: %d steps on %zu floats, each into a new state; ms per loop (median of 5)\n",
              workbook::query_device().name.c_str(), kSteps, kFloats);
  std::printf("  %-44s %16s %16s\n", "", "one wait at end", "wait every step");
  struct Way {
    const char* name;
    Allocator allocator;
    std::uint64_t threshold;
  };
  const Way ways[] = {Way{"cudaMalloc + cudaFree", Allocator::Synchronous, 0},
                      Way{"cudaMallocAsync + cudaFreeAsync, threshold 0", Allocator::StreamOrdered, 0},
                      Way{"the same, threshold UINT64_MAX", Allocator::StreamOrdered, UINT64_MAX}};
  std::uint64_t reserved_after_wait[2] = {0, 0};
  for (const Way& way : ways) {
    set_release_threshold(pool, way.threshold);
    WORKBOOK_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));  // each way starts from an empty pool
    WORKBOOK_CUDA_CHECK(cudaMemsetAsync(result.data(), 0xff, kBytes, s));  // NaN until set
    const double once_ms = loop_ms(initial.data(), result.data(), way.allocator, false, s);
    const double each_ms = loop_ms(initial.data(), result.data(), way.allocator, true, s);
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
  ok = ok && reserved_after_wait[1] >= kBytes;  // UINT64_MAX kept the memory
  if (!ok) std::printf("\nFAILED: a loop gave other bits than the reference, or the pool kept nothing\n");
  return ok ? 0 : 1;
}
