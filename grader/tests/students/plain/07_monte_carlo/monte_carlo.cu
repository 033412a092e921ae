// Lesson 07: Monte Carlo: random numbers with cuRAND, atomics and histograms.
// Read lessons/07_monte_carlo/README.md first.
// (The plain student's work: tasks 1-3 done plainly, the challenge left alone.)
//
// Fill in the TODOs, one per task of the lesson (task 4 is an optional challenge). Grade your work with
//     ./grade 07
#include "monte_carlo.hpp"

#include "workbook/curand_check.hpp"
#include "workbook/workbook.hpp"

#include <algorithm>
#include <cmath>

namespace {

// Task 1: a Philox state per thread, one point per loop turn, a sum per warp.
__global__ void pi_kernel(std::uint64_t n, std::uint64_t seed, unsigned long long* inside) {
  const std::uint64_t id = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::uint64_t threads = std::uint64_t(gridDim.x) * blockDim.x;
  curandStatePhilox4_32_10_t state;
  curand_init(seed, id, 0, &state);
  unsigned int hits = 0;
  for (std::uint64_t i = id; i < n; i += threads) {
    const float x = curand_uniform(&state);
    const float y = curand_uniform(&state);
    if (x * x + y * y <= 1.0f) ++hits;
  }
  for (int offset = 16; offset > 0; offset /= 2) hits += __shfl_down_sync(0xffffffffu, hits, offset);
  if (threadIdx.x % 32 == 0 && hits > 0) atomicAdd(inside, (unsigned long long)hits);
}

// Task 2: one histogram per block in shared memory.
__global__ void histogram_kernel(const float* values, std::size_t n, float lo, float hi, unsigned int* counts, int bins) {
  extern __shared__ unsigned int local[];
  for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const float scale = bins / (hi - lo);
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = values[i];
    if (v >= lo && v < hi) {
      int b = int((v - lo) * scale);
      if (b > bins - 1) b = bins - 1;
      atomicAdd(&local[b], 1u);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x) {
    if (local[b] > 0) atomicAdd(&counts[b], local[b]);
  }
}

}  // namespace

void count_inside_circle(std::uint64_t n, std::uint64_t seed, unsigned long long* inside, cudaStream_t stream) {
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(inside, 0, sizeof(unsigned long long), stream));
  if (n == 0) return;
  const int threads = 256;
  const int blocks = int(std::min<std::uint64_t>((n + threads - 1) / threads, 1024));
  pi_kernel<<<blocks, threads, 0, stream>>>(n, seed, inside);
  WORKBOOK_CHECK_LAUNCH();
}

void histogram(const float* values, std::size_t n, float lo, float hi, unsigned int* counts, int bins,
               cudaStream_t stream) {
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(counts, 0, bins * sizeof(unsigned int), stream));
  if (n == 0) return;
  const int threads = 256;
  const int blocks = int(std::min<std::size_t>((n + threads - 1) / threads, 1024));
  histogram_kernel<<<blocks, threads, bins * sizeof(unsigned int), stream>>>(values, n, lo, hi, counts, bins);
  WORKBOOK_CHECK_LAUNCH();
}

void thermal_velocities(curandGenerator_t generator, float* v, std::size_t particles, float kT_over_m,
                        cudaStream_t stream) {
  const std::size_t count = 3 * particles;
  if (count == 0) return;
  // curandGenerateNormal makes pairs: draw an even number into a buffer of my own, copy count of them.
  const std::size_t even = count + count % 2;
  float* buffer = nullptr;
  WORKBOOK_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&buffer), even * sizeof(float), stream));
  WORKBOOK_CURAND_CHECK(curandSetStream(generator, stream));
  WORKBOOK_CURAND_CHECK(curandGenerateNormal(generator, buffer, even, 0.0f, std::sqrt(kT_over_m)));
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(v, buffer, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  WORKBOOK_CUDA_CHECK(cudaFreeAsync(buffer, stream));
}

void walkers_start(Walkers walkers, std::uint64_t seed, cudaStream_t stream) {
  // TODO(task 4): (challenge) every walker at the origin, and its generator state in
  // walkers.states seeded so that the walkers are independent and the same seed gives the same walk.
  // Lesson sections: "Keeping states between calls", "Task 4".
  (void)walkers, (void)seed, (void)stream;
}

void walkers_advance(Walkers walkers, int steps, float sigma, cudaStream_t stream) {
  // TODO(task 4): (challenge) move every walker `steps` steps, each adding an independent
  // normal(0, sigma^2) to x and to y, drawing from the walker's state so that this call continues
  // where the last one stopped. Fast: this call is timed against cuRAND's host API drawing the same
  // numbers into memory and a kernel adding them to the positions. Lesson section: "Task 4".
  (void)walkers, (void)steps, (void)sigma, (void)stream;
}
