// Worked example for lesson 02: three ways to time a kernel, two of them wrong or rough.
// Lesson 02's README quotes it between the //! [name] markers; ctest runs it. It times a
// different kernel (y = x * x) than the tasks, so the tasks are still yours to write.
#include "workbook/workbook.hpp"

#include <chrono>
#include <cstdio>

__global__ void square(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = x[i] * x[i];
}

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("event_timing");
  const int n = 1 << 26;  // 256 MiB per array: far more than the L2 cache holds
  workbook::DeviceBuffer<float> x(n), y(n);
  workbook::fill_random_device(x.data(), n, 1);
  const int block = 256, grid = (n + block - 1) / block;
  square<<<grid, block>>>(x.data(), y.data(), n);  // warm-up: loads the module, wakes the clocks
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());

  //! [host_clock_wrong]
  // Wrong: a launch only queues the kernel and returns at once. This times the queueing.
  auto t0 = std::chrono::steady_clock::now();
  square<<<grid, block>>>(x.data(), y.data(), n);
  auto t1 = std::chrono::steady_clock::now();
  const double queued_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  //! [host_clock_wrong]
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());

  //! [host_clock_synced]
  // Roughly right: wait for the GPU before reading the clock. Includes the launch and
  // synchronisation overheads, and the host clock's own noise.
  t0 = std::chrono::steady_clock::now();
  square<<<grid, block>>>(x.data(), y.data(), n);
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  t1 = std::chrono::steady_clock::now();
  const double synced_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  //! [host_clock_synced]

  //! [events]
  // Right: events are timestamps the GPU itself writes when the stream reaches them.
  cudaEvent_t start, stop;
  WORKBOOK_CUDA_CHECK(cudaEventCreate(&start));
  WORKBOOK_CUDA_CHECK(cudaEventCreate(&stop));

  WORKBOOK_CUDA_CHECK(cudaEventRecord(start));  // queued on the default stream, before the kernel
  square<<<grid, block>>>(x.data(), y.data(), n);
  WORKBOOK_CUDA_CHECK(cudaEventRecord(stop));   // queued after the kernel
  WORKBOOK_CUDA_CHECK(cudaEventSynchronize(stop));  // wait until the GPU has passed `stop`

  float event_ms = 0;
  WORKBOOK_CUDA_CHECK(cudaEventElapsedTime(&event_ms, start, stop));  // milliseconds, about 0.5 us resolution
  WORKBOOK_CUDA_CHECK(cudaEventDestroy(start));
  WORKBOOK_CUDA_CHECK(cudaEventDestroy(stop));
  //! [events]
  WORKBOOK_CHECK_LAUNCH();

  const double gbps = workbook::gigabytes_per_second(8.0 * n, event_ms);
  std::printf("n = %d: host clock, no wait %.4f ms; host clock after synchronize %.4f ms; events %.4f ms (%.0f GB/s)\n",
              n, queued_ms, synced_ms, event_ms, gbps);
  // The lesson's claim, checked: the unsynchronised host clock misses most of the kernel.
  return queued_ms < event_ms ? 0 : 1;
}
