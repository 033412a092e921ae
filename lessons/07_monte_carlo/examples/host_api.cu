// Worked example for lesson 07: cuRAND's host API. A generator made, seeded and put on a stream of
// our own; uniform and normal variates written to device memory; what the same seed gives and
// what the next call gives; the statistics that tell whether a sample is what it claims to be (a
// z-test of the mean, a chi-square test of the variance); how fast the library writes numbers to
// memory; and the status a pseudo-random generator returns when asked for an odd number of normals.
// It makes no velocities and handles no odd count: task 3 is yours. Lesson 07's README quotes it
// between the //! [name] markers; ctest runs it (exit 0, or 77 without a GPU).
#include "workbook/curand_check.hpp"  // WORKBOOK_CURAND_CHECK: cuRAND returns curandStatus_t, not cudaError_t
#include "workbook/workbook.hpp"

#include <curand.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

// Mean and unbiased variance of a sample, in double.
struct Moments {
  double mean, variance;
};
Moments moments(const std::vector<float>& x) {
  double sum = 0, sum2 = 0;
  for (float v : x) sum += v;
  const double mean = sum / x.size();
  for (float v : x) sum2 += (v - mean) * (v - mean);
  return {mean, sum2 / (x.size() - 1.0)};
}

std::vector<float> to_host(const workbook::DeviceBuffer<float>& d, cudaStream_t s) {
  std::vector<float> h(d.size());
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(h.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost, s));
  WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(s));
  return h;
}

}  // namespace

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("host_api");
  workbook::Stream stream(cudaStreamNonBlocking);
  const std::size_t n = std::size_t{1} << 24;
  workbook::DeviceBuffer<float> u(n);

  //! [generator]
  curandGenerator_t generator;
  WORKBOOK_CURAND_CHECK(curandCreateGenerator(&generator, CURAND_RNG_PSEUDO_PHILOX4_32_10));  // once: allocates
  WORKBOOK_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(generator, 2024));
  WORKBOOK_CURAND_CHECK(curandSetStream(generator, stream.get()));  // its kernels go on our stream
  WORKBOOK_CURAND_CHECK(curandGenerateUniform(generator, u.data(), n));  // queued: returns at once
  //! [generator]
  const std::vector<float> first = to_host(u, stream.get());

  // The same seed again: a second generator gives the same numbers; the first one's next call does not.
  WORKBOOK_CURAND_CHECK(curandGenerateUniform(generator, u.data(), n));
  const std::vector<float> next = to_host(u, stream.get());
  curandGenerator_t twin;
  WORKBOOK_CURAND_CHECK(curandCreateGenerator(&twin, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  WORKBOOK_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(twin, 2024));
  WORKBOOK_CURAND_CHECK(curandSetStream(twin, stream.get()));
  WORKBOOK_CURAND_CHECK(curandGenerateUniform(twin, u.data(), n));
  const std::vector<float> again = to_host(u, stream.get());
  WORKBOOK_CURAND_CHECK(curandDestroyGenerator(twin));
  const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  std::printf("2^24 uniforms, seed 2024: a second generator with the same seed gives %s numbers; "
              "the next call gives %s ones\n",
              same_bits(first, again) ? "the same" : "DIFFERENT", same_bits(first, next) ? "the SAME" : "new");

  // Is it uniform on (0, 1]? The mean's z-score: its distance from 1/2 in standard errors.
  const Moments um = moments(first);
  float lowest = 1, highest = 0;
  for (float v : first) lowest = std::fmin(lowest, v), highest = std::fmax(highest, v);
  std::printf("  mean %.6f, z = (mean - 1/2) / sqrt(1 / (12 N)) = %+.2f; variance %.6f (1/12 = %.6f); "
              "smallest %.3g, largest %.9g\n",
              um.mean, (um.mean - 0.5) / std::sqrt(1.0 / (12.0 * n)), um.variance, 1.0 / 12, lowest, highest);

  //! [normal]
  const float stddev = 2.0f;
  WORKBOOK_CURAND_CHECK(curandGenerateNormal(generator, u.data(), n, 0.0f, stddev));  // n even: see below
  //! [normal]
  const Moments nm = moments(to_host(u, stream.get()));
  // (N - 1) s^2 / sigma^2 is chi-square with N - 1 degrees of freedom: mean N - 1, variance 2 (N - 1).
  const double chi2 = (n - 1.0) * nm.variance / (stddev * stddev);
  std::printf("2^24 normals, mean 0, standard deviation %.1f:\n", stddev);
  std::printf("  mean %+.6f, z = mean / (sigma / sqrt(N)) = %+.2f\n", nm.mean, nm.mean / (stddev / std::sqrt(n)));
  std::printf("  variance %.6f, chi-square (N - 1) s^2 / sigma^2 = %.0f for N - 1 = %zu, "
              "z = (chi2 - (N - 1)) / sqrt(2 (N - 1)) = %+.2f\n",
              nm.variance, chi2, n - 1, (chi2 - (n - 1.0)) / std::sqrt(2.0 * (n - 1.0)));

  //! [odd]
  // Box-Muller turns two uniforms into two normals, so a pseudo-random generator writes normals in
  // pairs: an odd count is refused, and nothing is written.
  const curandStatus_t odd = curandGenerateNormal(generator, u.data(), 1001, 0.0f, 1.0f);
  //! [odd]
  std::printf("curandGenerateNormal of 1001 values: %s\n", workbook::curand_status_name(odd));

  // What the library costs: 2^26 uniforms written to device memory, 4 bytes each.
  const std::size_t big = std::size_t{1} << 26;
  workbook::DeviceBuffer<float> many(big);
  workbook::TimingOptions options;
  options.stream = stream.get();
  const auto t = workbook::time_on_device(
      [&](cudaStream_t) { WORKBOOK_CURAND_CHECK(curandGenerateUniform(generator, many.data(), big)); }, options);
  std::printf("curandGenerateUniform of 2^26 floats: %.3f ms, %.1f G numbers/s, %.0f GB/s written "
              "(copy bandwidth %.0f GB/s, reads and writes)\n",
              t.median_ms, big / (t.median_ms * 1e6), workbook::gigabytes_per_second(4.0 * big, t.median_ms),
              workbook::copy_bandwidth_gbps_for_run());

  //! [destroy]
  WORKBOOK_CURAND_CHECK(curandDestroyGenerator(generator));  // frees it: once, when no more numbers are needed
  //! [destroy]
  return 0;
}
