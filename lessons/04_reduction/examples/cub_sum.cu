// Worked example for lesson 04: device-wide reductions with CUB, in the form CUDA 12.4 (CUB 2.3)
// already compiles. The two-call pattern for temporary storage with cub::DeviceReduce::Sum on a
// stream; a map applied by an input iterator (the largest |x|, through cub::DeviceReduce::Reduce
// with an operator of our own); a post-map applied by an output iterator (the mean of x); CUB's
// run-to-run determinism; and CUB's speed against the copy bandwidth. It shows the map and the
// post-map apart, never together, and does not compute the L2 norm: that is task 3. Lesson
// 04's README quotes it between the //! [name] markers; ctest runs it.
#include "workbook/workbook.hpp"

#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

//! [functors]
struct AbsoluteValue {  // a map
  __host__ __device__ float operator()(float x) const { return fabsf(x); }
};
struct Larger {  // a reduce operator: associative and commutative
  __host__ __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};
struct DivideBy {  // a post-map
  float divisor;
  __host__ __device__ float operator()(float x) const { return x / divisor; }
};
//! [functors]

namespace {

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float read(const workbook::DeviceBuffer<float>& one) {
  float x = 0;
  one.copy_to_host(&x);
  return x;
}

}  // namespace

int main(int, char** argv) {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  const std::size_t n = 10'000'019;  // any n: CUB handles the tail and any alignment
  workbook::DeviceBuffer<float> in(n), out(1);
  workbook::fill_random_device(in.data(), n, 3);  // uniform in [-1, 1]
  std::vector<float> host(n);
  in.copy_to_host(host.data());
  double exact_sum = 0, exact_abs = 0;
  float exact_max = 0;
  for (const float x : host) {
    exact_sum += x, exact_abs += std::abs(double(x));
    exact_max = std::max(exact_max, std::abs(x));
  }
  workbook::Stream stream(cudaStreamNonBlocking);

  //! [two_calls]
  // Call 1, with no storage (nullptr): CUB only writes how many bytes of scratch it needs.
  std::size_t temp_bytes = 0;
  WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, in.data(), out.data(), n, stream.get()));
  workbook::DeviceBuffer<char> temp(temp_bytes);  // allocate once; reuse it for every call of this shape
  // Call 2, the same arguments plus the storage: the sum is queued on the stream; nothing waits.
  WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), temp_bytes, in.data(), out.data(), n, stream.get()));
  //! [two_calls]
  stream.synchronize();
  const float sum = read(out);
  std::printf("n = %zu: Sum needs %zu bytes of temporary storage\n", n, temp_bytes);
  std::printf("  Sum             %14.6f  (float64 on the host: %14.6f)\n", sum, exact_sum);

  // The largest |x|. Its temporary storage is sized by a first call with nullptr, as above.
  const auto magnitudes_for_size = thrust::make_transform_iterator(in.data(), AbsoluteValue{});
  std::size_t max_bytes = 0;
  WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, max_bytes, magnitudes_for_size, out.data(), n, Larger{},
                                                0.0f, stream.get()));
  workbook::DeviceBuffer<char> max_temp(max_bytes);
  //! [map]
  // The map |x| comes from an iterator that applies it as CUB reads each element; the reduce
  // operator keeps the larger; 0 is its identity here, as |x| >= 0.
  const auto magnitudes = thrust::make_transform_iterator(in.data(), AbsoluteValue{});
  WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Reduce(max_temp.data(), max_bytes, magnitudes, out.data(), n, Larger{},
                                                0.0f, stream.get()));
  //! [map]
  stream.synchronize();
  const float largest = read(out);  // a maximum rounds nothing: it must be exactly the host's
  std::printf("  max |x|         %14.8f  (on the host:         %14.8f)\n", largest, exact_max);

  // The mean; its storage sized by a first call with nullptr, as above.
  std::size_t mean_bytes = 0;
  WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, mean_bytes, in.data(),
                                             thrust::make_transform_output_iterator(out.data(), DivideBy{float(n)}),
                                             n, stream.get()));
  workbook::DeviceBuffer<char> mean_temp(mean_bytes);
  //! [post_map]
  // A plain Sum, written through an iterator that divides by n as CUB stores the result.
  const auto mean_out = thrust::make_transform_output_iterator(out.data(), DivideBy{float(n)});
  WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Sum(mean_temp.data(), mean_bytes, in.data(), mean_out, n, stream.get()));
  //! [post_map]
  stream.synchronize();
  const float mean = read(out);
  std::printf("  mean            %14.8f  (float64 on the host: %14.8f)\n", mean, exact_sum / n);

  // Run-to-run determinism: the same input, the same GPU, the same bits every time.
  std::set<std::uint32_t> seen;
  for (int run = 0; run < 20; ++run) {
    WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), temp_bytes, in.data(), out.data(), n, stream.get()));
    stream.synchronize();
    seen.insert(bits(read(out)));
  }
  std::printf("  20 more Sums gave %zu distinct bit pattern%s\n", seen.size(), seen.size() == 1 ? "" : "s");
  const double unit = 24 * std::ldexp(1.0, -24) * exact_abs;  // ceil(log2 n) u sum|x|, n = 10^7
  const bool close = std::abs(sum - exact_sum) <= unit && largest == exact_max &&
                     std::abs(mean - exact_sum / n) <= unit / n;

  // Speed: GB/s read, against the measured device-to-device copy bandwidth (read + write). Timed
  // as the grader does (the L2 cache keeps what the last run left in it) and as ./sweep does
  // (L2 flushed before each sample).
  const double copy = workbook::copy_bandwidth_gbps_for_run();
  std::printf("\ncub::DeviceReduce::Sum on this GPU (copy bandwidth %.0f GB/s), median of 50:\n", copy);
  std::printf("  %10s  %26s  %26s\n", "n", "L2 as the last run left it", "L2 flushed before each run");
  for (const int log2n : {20, 24, 26, 28}) {
    const std::size_t m = workbook::fit_in_free_memory(std::size_t(1) << log2n, 2);
    workbook::DeviceBuffer<float> big(m);
    workbook::fill_random_device(big.data(), m, 5);
    std::size_t bytes = 0;
    WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, big.data(), out.data(), m));
    workbook::DeviceBuffer<char> storage(bytes);
    std::printf("  %10zu", m);
    for (const bool flush : {false, true}) {
      workbook::TimingOptions options;
      options.samples = 50;
      options.flush_l2 = flush;
      const auto t = workbook::time_on_device([&](cudaStream_t s) {
        std::size_t b = bytes;
        WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Sum(storage.data(), b, big.data(), out.data(), m, s));
      }, options);
      const double gbps = workbook::gigabytes_per_second(double(m) * sizeof(float), t.median_ms);
      std::printf("  %8.1f us %5.0f GB/s %4.0f%%", 1e3 * t.median_ms, gbps, 100 * gbps / copy);
    }
    std::printf("\n");
  }
  if (!close || seen.size() != 1) std::printf("\nFAILED: a result is off, or the Sum changed between runs\n");
  return close && seen.size() == 1 ? 0 : 1;
}
