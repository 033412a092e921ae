// Lesson 05: the two kernels the lesson gives. The tasks are about where and when they run
// (streams, events, allocations), not about the kernels themselves.
#include "streams.hpp"

#include "workbook/cuda_check.hpp"

namespace {

constexpr int kThreads = 256;

// y starts at x and takes `work` steps y = y / 2 + x: a chain of dependent FMAs (one per step,
// none of which the compiler may merge or reorder), so the time grows with `work` while the
// result stays near 2x, a value that still tells every input element apart.
__global__ void transform_kernel(const float* in, float* out, std::size_t n, int work) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float x = in[i];
    float y = x;
    for (int k = 0; k < work; ++k) y = fmaf(y, 0.5f, x);
    out[i] = y;
  }
}

__global__ void smooth_kernel(const float* in, float* out, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float left = in[i > 0 ? i - 1 : i];
    const float right = in[i + 1 < n ? i + 1 : i];
    out[i] = (left + in[i] + right) * (1.0f / 3.0f);
  }
}

// One thread per element, capped at 2^31 - 1 blocks' worth (the loops cover the rest).
unsigned blocks_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 0x7fffffffu ? blocks : 0x7fffffffu);
}

}  // namespace

namespace streams {

void transform(const float* in, float* out, std::size_t n, int work, cudaStream_t stream) {
  if (n == 0) return;
  transform_kernel<<<blocks_for(n), kThreads, 0, stream>>>(in, out, n, work);
  WORKBOOK_CHECK_LAUNCH();
}

void smooth(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  smooth_kernel<<<blocks_for(n), kThreads, 0, stream>>>(in, out, n);
  WORKBOOK_CHECK_LAUNCH();
}

}  // namespace streams
