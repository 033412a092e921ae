// Worked example for lesson 07: cuRAND's device API, on an integral that is none of the tasks.
//   1. What curand_init costs: 2^20 states of XORWOW and of Philox, state i set up with
//      curand_init(seed, i, 0) (its own subsequence), timed with CUDA events; and XORWOW's
//      faster, weaker set-up with a seed per thread.
//   2. I = integral of exp(-x^2) over [0, 1] = sqrt(pi)/2 erf(1) by plain Monte Carlo, with one
//      Philox state per thread kept in device memory between calls: the estimate and its standard
//      error at growing N, the error falling as 1/sqrt(N).
//   3. The two classic mistakes, measured: every thread on the same subsequence, and the states
//      set up again before every call.
// It counts no points in a circle and moves no walker: tasks 1 and 4 are yours. Lesson 07's README
// quotes it between the //! [name] markers; ctest runs it (exit 0, or 77 without a GPU).
#include "workbook/workbook.hpp"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <curand_kernel.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace cg = cooperative_groups;

namespace {

constexpr int kBlock = 256;
constexpr double kExact = 0.74682413281242702540;  // sqrt(pi)/2 erf(1)

//! [init]
// One generator state per thread, in device memory. State i starts subsequence i of the seed's
// sequence: no two threads draw the same numbers, however many each draws.
template <class State>
__global__ void init_states(State* states, int count, std::uint64_t seed) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) curand_init(seed, i, 0, &states[i]);
}
//! [init]

// XORWOW set up the quicker way cuRAND's documentation offers: a different seed per thread (a hash
// of the seed and i), subsequence 0. No skip-ahead, and fewer guarantees: two seeds' sequences are
// not promised to be uncorrelated.
__global__ void init_xorwow_seed_per_thread(curandStateXORWOW_t* states, int count, std::uint64_t seed) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) curand_init(workbook::mix64(workbook::mix64(seed) ^ i), 0, 0, &states[i]);
}

// The first mistake: every thread on subsequence 0 of the same seed, so every thread draws the
// same numbers as every other.
__global__ void init_same_subsequence(curandStatePhilox4_32_10_t* states, int count, std::uint64_t seed) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) curand_init(seed, 0, 0, &states[i]);
}

//! [integrate]
// Adds f(u) = exp(-u^2) and f(u)^2 over n uniform draws u to sums[0] and sums[1]. The grid has one
// thread per state (blocks of kBlock). Each thread copies its state into registers, draws, and
// stores it back, so that the next call continues its sequence instead of repeating it.
__global__ void sum_exp_minus_x2(curandStatePhilox4_32_10_t* states, std::uint64_t n, double* sums) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  curandStatePhilox4_32_10_t state = states[t];  // a local copy: registers, not global memory
  double f_sum = 0, f2_sum = 0;
  const std::uint64_t stride = std::uint64_t{blockDim.x} * gridDim.x;
  for (std::uint64_t i = t; i < n; i += stride) {
    const float u = curand_uniform(&state);  // uniform in (0, 1]
    const double f = expf(-u * u);
    f_sum += f;
    f2_sum += f * f;
  }
  states[t] = state;  // where this thread's next call starts

  // The block's sums (lesson 04), then one atomicAdd per block for each sum.
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  f_sum = cg::reduce(warp, f_sum, cg::plus<double>());
  f2_sum = cg::reduce(warp, f2_sum, cg::plus<double>());
  __shared__ double warp_sums[2][kBlock / 32];
  if (warp.thread_rank() == 0) {
    warp_sums[0][warp.meta_group_rank()] = f_sum;
    warp_sums[1][warp.meta_group_rank()] = f2_sum;
  }
  block.sync();
  if (threadIdx.x < 2) {  // thread 0 adds the f's, thread 1 the f^2's
    double s = 0;
    for (int w = 0; w < kBlock / 32; ++w) s += warp_sums[threadIdx.x][w];
    atomicAdd(&sums[threadIdx.x], s);
  }
}
//! [integrate]

struct Estimate {
  double mean;            // the estimate of I
  double standard_error;  // its standard error, from the sample's own variance
};

// One call: n draws from the states, summed on the GPU; the host waits for the two sums.
Estimate estimate(curandStatePhilox4_32_10_t* states, int threads, std::uint64_t n, double* sums,
                  cudaStream_t s) {
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(sums, 0, 2 * sizeof(double), s));
  sum_exp_minus_x2<<<threads / kBlock, kBlock, 0, s>>>(states, n, sums);
  WORKBOOK_CHECK_LAUNCH();
  double host[2];
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(host, sums, sizeof host, cudaMemcpyDeviceToHost, s));
  WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(s));
  const double mean = host[0] / n;
  const double variance = (host[1] / n - mean * mean) * n / (n - 1.0);  // of one f(u)
  return {mean, std::sqrt(variance / n)};
}

}  // namespace

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("device_api");
  workbook::Stream stream(cudaStreamNonBlocking);
  const cudaStream_t s = stream.get();
  const std::uint64_t seed = 20240607;

  // 1. What setting up a state costs.
  const int init_count = 1 << 20;
  workbook::DeviceBuffer<curandStateXORWOW_t> xorwow(init_count);
  workbook::DeviceBuffer<curandStatePhilox4_32_10_t> philox(init_count);
  const int init_blocks = (init_count + kBlock - 1) / kBlock;
  workbook::TimingOptions once;
  once.warmup = 1;
  once.samples = 5;
  once.stream = s;
  const auto xorwow_ms = workbook::time_on_device(
      [&](cudaStream_t st) { init_states<<<init_blocks, kBlock, 0, st>>>(xorwow.data(), init_count, seed); }, once);
  const auto xorwow_seeds_ms = workbook::time_on_device(
      [&](cudaStream_t st) {
        init_xorwow_seed_per_thread<<<init_blocks, kBlock, 0, st>>>(xorwow.data(), init_count, seed);
      },
      once);
  const auto philox_ms = workbook::time_on_device(
      [&](cudaStream_t st) { init_states<<<init_blocks, kBlock, 0, st>>>(philox.data(), init_count, seed); }, once);
  WORKBOOK_CHECK_LAUNCH();
  std::printf("curand_init for %d states (median of %d):\n", init_count, once.samples);
  std::printf("  | generator | set-up | state | ms | ns per state |\n");
  std::printf("  | XORWOW | curand_init(seed, i, 0) | %zu bytes | %.3f | %.1f |\n", sizeof(curandStateXORWOW_t),
              xorwow_ms.median_ms, 1e6 * xorwow_ms.median_ms / init_count);
  std::printf("  | XORWOW | curand_init(hash(seed, i), 0, 0) | %zu bytes | %.3f | %.1f |\n",
              sizeof(curandStateXORWOW_t), xorwow_seeds_ms.median_ms, 1e6 * xorwow_seeds_ms.median_ms / init_count);
  std::printf("  | Philox | curand_init(seed, i, 0) | %zu bytes | %.3f | %.1f |\n",
              sizeof(curandStatePhilox4_32_10_t), philox_ms.median_ms, 1e6 * philox_ms.median_ms / init_count);

  // 2. The integral, one Philox state per thread of a grid that fills the GPU.
  const int threads = workbook::query_device().sm_count * 1024;
  workbook::DeviceBuffer<curandStatePhilox4_32_10_t> states(threads);
  workbook::DeviceBuffer<double> sums(2);
  init_states<<<threads / kBlock, kBlock, 0, s>>>(states.data(), threads, seed);
  WORKBOOK_CHECK_LAUNCH();
  std::printf("\nI = integral of exp(-x^2) over [0, 1] = %.8f, %d threads, states kept between calls:\n", kExact,
              threads);
  std::printf("  | N | estimate | standard error | error | error / SE |\n");
  for (int log2n = 16; log2n <= 28; log2n += 4) {
    const std::uint64_t n = std::uint64_t{1} << log2n;
    const Estimate e = estimate(states.data(), threads, n, sums.data(), s);
    std::printf("  | 2^%d | %.8f | %.2e | %+.2e | %+.2f |\n", log2n, e.mean, e.standard_error, e.mean - kExact,
                (e.mean - kExact) / e.standard_error);
  }
  const std::uint64_t big = std::uint64_t{1} << 28;
  const auto draw = workbook::time_on_device(
      [&](cudaStream_t st) { sum_exp_minus_x2<<<threads / kBlock, kBlock, 0, st>>>(states.data(), big, sums.data()); },
      once);
  WORKBOOK_CHECK_LAUNCH();
  std::printf("  drawing and summing 2^28 values: %.3f ms, %.1f G draws/s\n", draw.median_ms,
              big / (draw.median_ms * 1e6));

  // 3a. Every thread on the same subsequence: N draws, but only N / threads different ones.
  const std::uint64_t n = std::uint64_t{1} << 24;
  init_same_subsequence<<<threads / kBlock, kBlock, 0, s>>>(states.data(), threads, seed);
  WORKBOOK_CHECK_LAUNCH();
  const Estimate same = estimate(states.data(), threads, n, sums.data(), s);
  std::printf("\nN = 2^24, every thread on subsequence 0:   %.8f +- %.1e, error / SE = %+.1f\n", same.mean,
              same.standard_error, (same.mean - kExact) / same.standard_error);

  // 3b. States set up again before each call, against states kept: two calls each.
  Estimate again[2], kept[2];
  for (Estimate& e : again) {
    init_states<<<threads / kBlock, kBlock, 0, s>>>(states.data(), threads, seed);
    WORKBOOK_CHECK_LAUNCH();
    e = estimate(states.data(), threads, n, sums.data(), s);
  }
  init_states<<<threads / kBlock, kBlock, 0, s>>>(states.data(), threads, seed);
  WORKBOOK_CHECK_LAUNCH();
  for (Estimate& e : kept) e = estimate(states.data(), threads, n, sums.data(), s);
  std::printf("N = 2^24, states set up before each call: %.12f, then %.12f\n", again[0].mean, again[1].mean);
  std::printf("N = 2^24, states kept between calls:      %.12f, then %.12f\n", kept[0].mean, kept[1].mean);
  return 0;
}
