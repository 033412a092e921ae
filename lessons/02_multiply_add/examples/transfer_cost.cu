// Worked example for lesson 02: what copying data to the GPU costs, from pageable and from
// pinned host memory, next to what the GPU does with it. ctest runs it.
#include "workbook/workbook.hpp"

#include <cstdio>
#include <vector>

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("transfer_cost");
  const std::size_t n = 1 << 26;  // 256 MiB
  const std::size_t bytes = n * sizeof(float);
  workbook::DeviceBuffer<float> device(n), device_copy(n);

  //! [pinned]
  std::vector<float> pageable(n, 1.0f);      // ordinary memory: the OS may move or swap its pages
  workbook::PinnedBuffer<float> pinned(n);   // cudaMallocHost: locked in place, the GPU can DMA it
  //! [pinned]
  std::fill(pinned.data(), pinned.data() + n, 1.0f);

  workbook::TimingOptions options;
  options.samples = 5;
  const auto pageable_ms = workbook::time_on_device([&](cudaStream_t s) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device.data(), pageable.data(), bytes, cudaMemcpyHostToDevice, s));
  }, options).median_ms;
  const auto pinned_ms = workbook::time_on_device([&](cudaStream_t s) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.data(), bytes, cudaMemcpyHostToDevice, s));
  }, options).median_ms;
  const auto on_device_ms = workbook::time_on_device([&](cudaStream_t s) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device_copy.data(), device.data(), bytes, cudaMemcpyDeviceToDevice, s));
  }, options).median_ms;

  std::printf("256 MiB host -> device: pageable %.2f ms (%.1f GB/s), pinned %.2f ms (%.1f GB/s); "
              "device -> device %.3f ms (%.0f GB/s, read + write)\n",
              pageable_ms, workbook::gigabytes_per_second(bytes, pageable_ms), pinned_ms,
              workbook::gigabytes_per_second(bytes, pinned_ms), on_device_ms,
              workbook::gigabytes_per_second(2.0 * bytes, on_device_ms));
  return pinned_ms > 0 && pageable_ms > 0 ? 0 : 1;
}
