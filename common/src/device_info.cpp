// Device properties and the measured copy-bandwidth ceiling.
#include "workbook/device_info.hpp"

#include "workbook/cuda_check.hpp"
#include "workbook/device_buffer.hpp"
#include "workbook/startup_environment.hpp"
#include "workbook/timer.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace workbook {

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: this is an answer, not a failure
    return 0;
  }
  return count;
}

std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  switch (code) {
    case cudaSuccess:
      return count > 0 ? "a CUDA GPU is available" : "no CUDA-capable GPU was found on this machine";
    case cudaErrorNoDevice:
      return "no CUDA-capable GPU was found on this machine";
    case cudaErrorInsufficientDriver:
      return "the NVIDIA driver is missing or older than this CUDA runtime needs";
    default:
      return std::string("the CUDA runtime cannot use a GPU here: ") + cudaGetErrorName(code) + " (" +
             cudaGetErrorString(code) + ")";
  }
}

int exit_without_gpu(const char* program) {
  std::fprintf(stderr, "%s: needs a GPU: %s.\n", program, no_gpu_reason().c_str());
  return 77;
}

DeviceInfo query_device(int device) {
  cudaDeviceProp prop{};
  WORKBOOK_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceInfo info;
  info.device = device;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.max_threads_per_block = prop.maxThreadsPerBlock;
  info.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  info.warp_size = prop.warpSize;
  info.total_memory_bytes = prop.totalGlobalMem;
  info.l2_cache_bytes = prop.l2CacheSize;

  WORKBOOK_CUDA_CHECK(cudaSetDevice(device));
  std::size_t free_bytes = 0, total_bytes = 0;
  WORKBOOK_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  info.free_memory_bytes = free_bytes;

  // cudaDeviceProp::memoryClockRate was removed in CUDA 13; the attributes remain.
  int clock_khz = 0, bus_bits = 0;
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  info.theoretical_bandwidth_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  return info;
}

double measure_copy_bandwidth_gbps(std::size_t bytes, int samples) {
  DeviceBuffer<unsigned char> src(bytes), dst(bytes);
  WORKBOOK_CUDA_CHECK(cudaMemset(src.data(), 1, bytes));
  TimingOptions options;
  options.warmup = 3;
  options.samples = samples;
  const TimingStats stats = time_on_device(
      [&](cudaStream_t stream) {
        WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream));
      },
      options);
  return gigabytes_per_second(2.0 * static_cast<double>(bytes), stats.median_ms);  // read + write
}

std::size_t fit_in_free_memory(std::size_t cap, int arrays) {
  std::size_t free_bytes = 0, total_bytes = 0;
  WORKBOOK_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return std::min(cap, free_bytes / 2 / (static_cast<std::size_t>(arrays) * sizeof(float)));
}

double copy_bandwidth_gbps_for_run() {
  static const double cached = [] {
    // The bandwidth the grader measured, as the environment held it at start-up: code being
    // graded that calls setenv cannot move the yardstick it is measured against.
    const char* given = startup_env("WORKBOOK_COPY_BANDWIDTH_GBPS");
    const double given_gbps = given != nullptr ? std::atof(given) : 0.0;
    if (given_gbps > 0) return given_gbps;
    std::size_t free_bytes = 0, total_bytes = 0;
    WORKBOOK_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t bytes = std::min<std::size_t>(std::size_t{1} << 30, free_bytes / 4);
    return measure_copy_bandwidth_gbps(bytes);
  }();
  return cached;
}

}  // namespace workbook
