// The performance thresholds of lesson 01 must separate a plain correct kernel from a
// pathological launch: the reference kernels pass them, launched as the timed tests launch them
// (grader/01_vector_add/vector_add_test.cu: task 1 one thread an element, task 2 one full wave),
// and a grid of one block of one thread does not. The thresholds come from lessons/manifest.json
// through CMake.
#include "vector_add.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

namespace {

double fraction_of_copy(int grid, int block, std::size_t n, int samples, bool grid_stride) {
  workbook::DeviceBuffer<float> a(n), b(n), c(n);
  workbook::fill_random_device(a.data(), n, 1);
  workbook::fill_random_device(b.data(), n, 2);
  workbook::TimingOptions options;
  options.warmup = samples > 1 ? 2 : 0;
  options.samples = samples;
  const auto stats = workbook::time_on_device(
      [&](cudaStream_t s) {
        if (grid_stride) {
          vector_add_grid_stride<<<grid, block, 0, s>>>(a.data(), b.data(), c.data(), static_cast<int>(n));
        } else {
          vector_add<<<grid, block, 0, s>>>(a.data(), b.data(), c.data(), static_cast<int>(n));
        }
      },
      options);
  return workbook::gigabytes_per_second(3.0 * n * sizeof(float), stats.median_ms) /
         workbook::copy_bandwidth_gbps_for_run();
}

}  // namespace

TEST_CASE("lesson 01 threshold separates plain from one-thread launches", "[gpu]") {
  if (workbook::cuda_device_count() == 0) SKIP(workbook::no_gpu_reason());
  const auto info = workbook::query_device(0);
  // The timed tests' size, 1 GiB per array, far beyond L2.
  const std::size_t large = workbook::fit_in_free_memory(std::size_t{1} << 28, 3);
  const int one_each = static_cast<int>((large + 255) / 256);
  const double task1 = fraction_of_copy(one_each, 256, large, 10, false);
  // The reference's grid-stride kernel reads float4s: with one thread an element, three in four
  // threads would find nothing to do (0.63 of the copy bandwidth on an H200). Task 2 is timed
  // with one full wave, as here.
  const int wave = info.sm_count * (info.max_threads_per_sm / 256);
  const double task2 = fraction_of_copy(wave, 256, large, 10, true);
  // One thread walks the array alone: latency-bound, so its rate hardly depends on n;
  // 2^20 elements keep the run short.
  const double single = fraction_of_copy(1, 1, std::size_t{1} << 20, 1, true);
  CAPTURE(info.name, task1, task2, single, WORKBOOK_TASK1_THRESHOLD, WORKBOOK_TASK2_THRESHOLD);
  CHECK(task1 >= WORKBOOK_TASK1_THRESHOLD);
  CHECK(task2 >= WORKBOOK_TASK2_THRESHOLD);
  CHECK(single < WORKBOOK_TASK1_THRESHOLD);
  CHECK(single < WORKBOOK_TASK2_THRESHOLD);
  CHECK(single < 0.01);
}
