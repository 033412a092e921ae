// Broken variant (a contract class: resources not given back): the reference solution with
// time_multiply_add creating a fresh pair of CUDA events for every sample and never destroying
// them. Every timing is right; each call leaves 2 x samples events behind, which only the contract
// of time_multiply_add, checked on a traced call, sees ("gives back").
#include "multiply_add.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

__device__ float4 fma4(float4 x1, float4 x2, float b) {
  return make_float4(x1.x * x2.x + b, x1.y * x2.y + b, x1.z * x2.z + b, x1.w * x2.w + b);
}

}  // namespace

__global__ void multiply_add(const float* __restrict__ x1, const float* __restrict__ x2, float b,
                             float* __restrict__ y, int n) {
  const int stride = blockDim.x * gridDim.x;
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  const bool aligned = ((reinterpret_cast<std::uintptr_t>(x1) | reinterpret_cast<std::uintptr_t>(x2) |
                         reinterpret_cast<std::uintptr_t>(y)) % sizeof(float4)) == 0;
  int done = 0;  // elements [0, done) are handled by the vector loop
  if (aligned) {
    const int n4 = n / 4;
    const auto* x1v = reinterpret_cast<const float4*>(x1);
    const auto* x2v = reinterpret_cast<const float4*>(x2);
    auto* yv = reinterpret_cast<float4*>(y);
    int i = first;
    for (; i + stride < n4; i += 2 * stride) {  // two independent 16-byte loads per input in flight
      const float4 a0 = x1v[i], b0 = x2v[i], a1 = x1v[i + stride], b1 = x2v[i + stride];
      yv[i] = fma4(a0, b0, b);
      yv[i + stride] = fma4(a1, b1, b);
    }
    if (i < n4) yv[i] = fma4(x1v[i], x2v[i], b);
    done = 4 * n4;
  }
  for (int i = done + first; i < n; i += stride) y[i] = x1[i] * x2[i] + b;  // the tail, or all if unaligned
}

namespace {

// The facts a launcher needs, read once per device: attribute queries are cheap, but a
// launcher called in a timing loop should not repeat them.
struct LaunchLimits {
  int max_block = 0, max_grid = 0, sm_count = 0;
};

const LaunchLimits& limits() {
  static std::vector<LaunchLimits> per_device;
  int device = 0;
  WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
  if (per_device.size() <= static_cast<std::size_t>(device)) per_device.resize(device + 1);
  LaunchLimits& l = per_device[device];
  if (l.max_block == 0) {
    WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&l.max_block, cudaDevAttrMaxThreadsPerBlock, device));
    WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&l.max_grid, cudaDevAttrMaxGridDimX, device));
    WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&l.sm_count, cudaDevAttrMultiProcessorCount, device));
  }
  return l;
}

}  // namespace

void launch_multiply_add(const float* x1, const float* x2, float b, float* y, int n, LaunchConfig config,
                         cudaStream_t stream) {
  const LaunchLimits& l = limits();
  if (n < 0) throw std::invalid_argument("launch_multiply_add: n = " + std::to_string(n) + " is negative");
  if (config.block < 1 || config.block > l.max_block) {
    throw std::invalid_argument("launch_multiply_add: block = " + std::to_string(config.block) +
                                " threads, but this GPU allows 1 to " + std::to_string(l.max_block) +
                                " threads per block");
  }
  if (config.grid < 0 || config.grid > l.max_grid) {
    throw std::invalid_argument("launch_multiply_add: grid = " + std::to_string(config.grid) +
                                " blocks, but it must be 0 (auto) or 1 to " + std::to_string(l.max_grid));
  }
  if (n == 0) return;  // nothing to do, and a grid of 0 blocks is not a launch

  int grid = config.grid;
  if (grid == 0) {
    // Auto: one full wave (every SM filled with as many blocks as can be resident at once),
    // but no more blocks than n needs. The grid-stride loop covers the rest.
    int blocks_per_sm = 0;
    WORKBOOK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, multiply_add, config.block, 0));
    const long long needed = (static_cast<long long>(n) + config.block - 1) / config.block;
    grid = static_cast<int>(std::min<long long>(needed, static_cast<long long>(std::max(blocks_per_sm, 1)) * l.sm_count));
  }
  multiply_add<<<grid, config.block, 0, stream>>>(x1, x2, b, y, n);
  WORKBOOK_CHECK_LAUNCH();
}

workbook::TimingStats time_multiply_add(const float* x1, const float* x2, float b, float* y, int n,
                                        LaunchConfig config, int warmup, int samples) {
  if (samples < 1 || warmup < 0) {
    throw std::invalid_argument("time_multiply_add: need samples >= 1 and warmup >= 0, got samples = " +
                                std::to_string(samples) + ", warmup = " + std::to_string(warmup));
  }
  for (int i = 0; i < warmup; ++i) launch_multiply_add(x1, x2, b, y, n, config);

  std::vector<double> times_ms;
  for (int i = 0; i < samples; ++i) {
    cudaEvent_t start = nullptr, stop = nullptr;  // a fresh pair per sample, never destroyed
    WORKBOOK_CUDA_CHECK(cudaEventCreate(&start));
    WORKBOOK_CUDA_CHECK(cudaEventCreate(&stop));
    WORKBOOK_CUDA_CHECK(cudaEventRecord(start));
    launch_multiply_add(x1, x2, b, y, n, config);
    WORKBOOK_CUDA_CHECK(cudaEventRecord(stop));
    WORKBOOK_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    WORKBOOK_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times_ms.push_back(ms);
  }
  return workbook::summarize_ms(times_ms);
}
