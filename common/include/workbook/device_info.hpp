/// \file
/// What the GPU is, and how fast it can move memory. Performance in this workbook is
/// always a ratio to a ceiling measured on the same GPU in the same run: the measured
/// device-to-device copy bandwidth is the ceiling memory-bound kernels are judged against.
#pragma once

#include <cstddef>
#include <string>

namespace workbook {

/// Properties of one GPU, read from the CUDA runtime.
struct DeviceInfo {
  int device = 0;                    ///< CUDA device index
  std::string name;                  ///< e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0;                  ///< compute capability, major (9 for Hopper)
  int cc_minor = 0;                  ///< compute capability, minor
  int sm_count = 0;                  ///< streaming multiprocessors
  int max_threads_per_block = 0;     ///< 1024 on every current GPU
  int max_threads_per_sm = 0;        ///< resident threads per SM (2048 on Hopper)
  int warp_size = 0;                 ///< 32
  std::size_t total_memory_bytes = 0;  ///< device memory
  std::size_t free_memory_bytes = 0;   ///< free when queried
  int l2_cache_bytes = 0;            ///< L2 cache size
  double theoretical_bandwidth_gbps = 0;  ///< 2 x memory clock x bus width (datasheet-style peak)
};

/// Number of usable CUDA devices; 0 (never an exception) when there is no GPU or no driver.
int cuda_device_count() noexcept;

/// One sentence saying why no GPU can be used (no device, no driver, driver too old).
std::string no_gpu_reason();

/// For programs that need a GPU and found none: prints why to stderr and returns 77, the
/// exit status CTest (SKIP_RETURN_CODE) and automake read as "skipped".
int exit_without_gpu(const char* program);

/// Reads the properties of \p device. Throws CudaError on failure.
DeviceInfo query_device(int device = 0);

/// The largest n <= \p cap such that \p arrays float arrays of n elements fit in half the
/// device's free memory (the other half stays for the guards, the runtime and others).
std::size_t fit_in_free_memory(std::size_t cap, int arrays);

/// Measures device-to-device cudaMemcpy bandwidth in GB/s, counting bytes read plus bytes
/// written, on a buffer of \p bytes (choose it far larger than L2). Median of \p samples.
double measure_copy_bandwidth_gbps(std::size_t bytes, int samples = 10);

/// The copy bandwidth for this run: the value the environment variable
/// WORKBOOK_COPY_BANDWIDTH_GBPS had when the program started (startup_env), when the grader
/// measured it already, else measured once here (on 1 GiB, or a quarter of free memory if
/// less) and cached.
double copy_bandwidth_gbps_for_run();

}  // namespace workbook
