// Seeded random fills; the device kernel and the host loop compute the same values.
#include "workbook/random.hpp"

#include "workbook/cuda_check.hpp"
#include "workbook/parallel.hpp"

#include <random>

namespace workbook {
namespace {

__global__ void fill_random_kernel(float* out, std::size_t n, std::uint64_t seed, float lo, float hi) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    out[i] = random_uniform(seed, i, lo, hi);
  }
}

}  // namespace

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo, float hi) {
  std::vector<float> values(n);
  fill_random(values.data(), n, seed, lo, hi);
  return values;
}

void fill_random(float* out, std::size_t n, std::uint64_t seed, float lo, float hi) {
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = random_uniform(seed, i, lo, hi);
  });
}

void fill_random_device(float* out, std::size_t n, std::uint64_t seed, float lo, float hi, void* stream) {
  if (n == 0) return;
  const int block = 256;
  const std::size_t blocks_needed = (n + block - 1) / block;
  const int grid = static_cast<int>(blocks_needed < 65536 ? blocks_needed : 65536);
  fill_random_kernel<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(out, n, seed, lo, hi);
  WORKBOOK_CHECK_LAUNCH();
}

std::uint64_t fresh_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32 | device()) % 1000000000ull;
}

}  // namespace workbook
