// Lesson 07's inputs and yardsticks (baselines.hpp).
#include "baselines.hpp"

#include "workbook/curand_check.hpp"
#include "workbook/workbook.hpp"

#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

namespace monte_carlo_baselines {

std::vector<float> energies(std::size_t n, std::uint64_t seed, float lo, float hi, int bins, bool edges) {
  std::vector<float> values(n);
  const double width = (double(hi) - lo) / bins;
  // 2^26 of them for the timed test: on every core, not one (a second of the GPU's time alone).
  workbook::parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      // u in (0, 1]: -log(u) is an exponential variate, finite.
      const double u = (double(workbook::mix64(workbook::mix64(seed) ^ i) >> 11) + 1.0) * 0x1.0p-53;
      float v = float(-std::log(u));
      const double t = (double(v) - lo) / width;
      const double f = t - std::floor(t);
      if (t > 0 && t < bins && (f < 1e-3 || f > 1 - 1e-3)) v = float(lo + (std::floor(t) + 0.5) * width);  // the bin's middle
      values[i] = v;
    }
  });
  if (edges && n > 0) {
    const float specials[] = {lo,
                              std::nextafter(lo, -std::numeric_limits<float>::infinity()),
                              float(lo - 0.3 * width),
                              std::nextafter(hi, -std::numeric_limits<float>::infinity()),
                              hi,
                              std::nextafter(hi, std::numeric_limits<float>::infinity()),
                              std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
    // Each special value at a place of its own, from a seeded start; in a short input, as many as fit.
    constexpr std::size_t kSpecials = sizeof specials / sizeof specials[0];
    const std::size_t start = std::size_t(workbook::mix64(seed + 101) % n), step = std::max<std::size_t>(1, n / kSpecials);
    for (std::size_t k = 0; k < kSpecials && k < n; ++k) {
      const std::size_t at = n <= 16 ? k : (start + k * step) % n;  // k * step < n: all different
      values[at] = specials[k];
    }
  }
  return values;
}

std::vector<unsigned int> histogram_on_host(const std::vector<float>& values, float lo, float hi, int bins) {
  std::vector<unsigned int> counts(std::size_t(bins), 0u);
  const double scale = bins / (double(hi) - double(lo));
  std::mutex guard;
  workbook::parallel_for(values.size(), [&](std::size_t begin, std::size_t end) {
    std::vector<unsigned int> mine(std::size_t(bins), 0u);
    for (std::size_t i = begin; i < end; ++i) {
      const float v = values[i];
      if (!(v >= lo && v < hi)) continue;
      const int b = std::min(int((double(v) - lo) * scale), bins - 1);
      ++mine[std::size_t(b)];
    }
    const std::lock_guard<std::mutex> lock(guard);
    for (std::size_t b = 0; b < mine.size(); ++b) counts[b] += mine[b];
  });
  return counts;
}

EdgeFacts edge_facts(const std::vector<float>& values, float lo, float hi, int bins) {
  EdgeFacts facts;
  const double width = (double(hi) - lo) / bins;
  for (const float v : values) {
    if (std::isnan(v)) {
      ++facts.not_finite;
      ++facts.nan;
    } else if (v < lo) {
      ++facts.below_lo;
      facts.just_below_lo += double(v) > lo - width;
      facts.not_finite += std::isinf(v);
    } else if (v >= hi) {
      ++facts.at_or_above_hi;
      facts.not_finite += std::isinf(v);
    } else if (double(v) >= hi - width / 1000) {
      ++facts.just_below_hi;
    }
  }
  return facts;
}

namespace {

__global__ void global_atomics_kernel(const float* values, std::size_t n, float lo, float hi, float scale,
                                      unsigned int* counts, int bins) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = values[i];
    if (v >= lo && v < hi) atomicAdd(&counts[min(int((v - lo) * scale), bins - 1)], 1u);
  }
}

constexpr int kCountThreads = 256;

__global__ void count_inside_kernel(const float2* points, std::uint64_t n, unsigned long long* inside) {
  unsigned long long mine = 0;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float2 p = points[i];
    mine += p.x * p.x + p.y * p.y <= 1.0f;
  }
  using Reduce = cub::BlockReduce<unsigned long long, kCountThreads>;
  __shared__ typename Reduce::TempStorage scratch;
  const unsigned long long block = Reduce(scratch).Sum(mine);
  if (threadIdx.x == 0) atomicAdd(inside, block);
}

constexpr int kWalkThreads = 256;

// Walker i's step s takes normals[(2s) * walkers + i] for x and normals[(2s + 1) * walkers + i]
// for y: a warp's 32 walkers read 32 neighbouring floats at every step.
__global__ void walk_from_memory_kernel(const float* normals, float* positions, int walkers, int steps, float sigma) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= walkers) return;
  float x = positions[i], y = positions[walkers + i];
  for (int s = 0; s < steps; ++s) {
    x = fmaf(sigma, normals[(2 * std::size_t(s)) * walkers + i], x);
    y = fmaf(sigma, normals[(2 * std::size_t(s) + 1) * walkers + i], y);
  }
  positions[i] = x;
  positions[walkers + i] = y;
}

int grid_for(std::size_t n, int threads) {
  static const int sms = [] {
    int device = 0;
    WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
    return workbook::query_device(device).sm_count;
  }();
  const int most = sms * 8;
  return int(std::max<std::size_t>(1, std::min<std::size_t>((n + threads - 1) / threads, std::size_t(most))));
}

}  // namespace

void global_atomics_histogram(const float* values, std::size_t n, float lo, float hi, unsigned int* counts, int bins,
                              cudaStream_t stream) {
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(counts, 0, sizeof *counts * std::size_t(bins), stream));
  if (n == 0) return;
  global_atomics_kernel<<<grid_for(n, 256), 256, 0, stream>>>(values, n, lo, hi, float(bins) / (hi - lo), counts, bins);
  WORKBOOK_CHECK_LAUNCH();
}

HostApiPi::HostApiPi(std::uint64_t n) : n_(n) {
  WORKBOOK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&uniforms_), sizeof(float) * 2 * std::max<std::uint64_t>(n, 1)));
  WORKBOOK_CURAND_CHECK(curandCreateGenerator(&generator_, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  WORKBOOK_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(generator_, 20261125));
}

HostApiPi::~HostApiPi() {
  if (generator_ != nullptr) curandDestroyGenerator(generator_);
  if (uniforms_ != nullptr) workbook::cuda_check_noexcept(cudaFree(uniforms_), "cudaFree(uniforms_)", __FILE__, __LINE__);
}

void HostApiPi::run(unsigned long long* inside, cudaStream_t stream) {
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(inside, 0, sizeof *inside, stream));
  WORKBOOK_CURAND_CHECK(curandSetStream(generator_, stream));
  WORKBOOK_CURAND_CHECK(curandGenerateUniform(generator_, uniforms_, 2 * n_));
  count_inside_kernel<<<grid_for(n_, kCountThreads), kCountThreads, 0, stream>>>(reinterpret_cast<const float2*>(uniforms_),
                                                                                  n_, inside);
  WORKBOOK_CHECK_LAUNCH();
}

HostApiWalk::HostApiWalk(int walkers, int steps)
    : walkers_(walkers), steps_(steps), count_(2 * std::size_t(walkers) * std::size_t(steps)) {
  count_ += count_ & 1;
  WORKBOOK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&normals_), sizeof(float) * std::max<std::size_t>(count_, 2)));
  WORKBOOK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&positions_), sizeof(float) * 2 * std::max(walkers, 1)));
  WORKBOOK_CUDA_CHECK(cudaMemset(positions_, 0, sizeof(float) * 2 * std::max(walkers, 1)));
  WORKBOOK_CURAND_CHECK(curandCreateGenerator(&generator_, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  WORKBOOK_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(generator_, 20261125));
}

HostApiWalk::~HostApiWalk() {
  if (generator_ != nullptr) curandDestroyGenerator(generator_);
  if (normals_ != nullptr) workbook::cuda_check_noexcept(cudaFree(normals_), "cudaFree(normals_)", __FILE__, __LINE__);
  if (positions_ != nullptr) workbook::cuda_check_noexcept(cudaFree(positions_), "cudaFree(positions_)", __FILE__, __LINE__);
}

void HostApiWalk::run(float sigma, cudaStream_t stream) {
  WORKBOOK_CURAND_CHECK(curandSetStream(generator_, stream));
  WORKBOOK_CURAND_CHECK(curandGenerateNormal(generator_, normals_, count_, 0.0f, 1.0f));
  if (walkers_ == 0 || steps_ == 0) return;
  walk_from_memory_kernel<<<(walkers_ + kWalkThreads - 1) / kWalkThreads, kWalkThreads, 0, stream>>>(
      normals_, positions_, walkers_, steps_, sigma);
  WORKBOOK_CHECK_LAUNCH();
}

}  // namespace monte_carlo_baselines
