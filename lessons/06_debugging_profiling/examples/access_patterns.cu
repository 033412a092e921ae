// Worked example for lesson 06: what Nsight Compute's memory counters say about two access
// patterns, each at several strides.
//   gather_strided  out[i] = in[i * stride]: a warp's 32 loads span 32 * stride floats of global
//                   memory (sectors per request: 4 at stride 1, up to 32)
//   shared_strided  each warp stores and loads 32 floats of shared memory `stride` words apart
//                   (wavefronts per instruction: 1 at stride 1, up to 32 when all hit one bank)
// Each configuration runs once inside cudaProfilerStart/Stop, the range that
// `ncu --profile-from-start off` profiles (as the grader does), then is timed with CUDA events.
// It reads no matrix and writes no tile: the transposes of tasks 2-4 are yours. Lesson 06's
// README quotes it between the //! [name] markers; ctest runs it (exit 0, or 77 without a GPU).
#include "workbook/workbook.hpp"

#include <cuda_profiler_api.h>

#include <cstdio>

namespace {

constexpr int kStrides[] = {1, 2, 4, 8, 32, 33};

//! [gather]
// out[i] = in[i * stride]. The stores are always coalesced; the loads of a warp touch
// 32 * stride * 4 bytes, so from stride 8 on every load is a sector of its own.
__global__ void gather_strided(const float* in, float* out, int n, int stride) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[static_cast<long long>(i) * stride];
}
//! [gather]

//! [shared]
// Shared memory is 32 banks of 4-byte words, word w in bank w % 32. Lane l uses word l * stride.
__global__ void shared_strided(float* out, int stride, int rounds) {
  __shared__ float words[32 * 33];
  const int lane = threadIdx.x;  // blocks of one warp
  float value = lane;
  for (int r = 0; r < rounds; ++r) {
    words[lane * stride] = value;
    __syncwarp();
    value += words[((lane + 1) % 32) * stride];  // a neighbour's word: it must go through memory
    __syncwarp();
  }
  out[blockIdx.x * 32 + lane] = value;
}
//! [shared]

}  // namespace

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("access_patterns");
  const int n = 1 << 22;  // 16 MiB written per launch
  const int max_stride = 33;
  workbook::DeviceBuffer<float> in(static_cast<std::size_t>(n) * max_stride), out(n);
  workbook::fill_random_device(in.data(), in.size(), 1);
  const int shared_blocks = 4096, rounds = 64;
  workbook::DeviceBuffer<float> shared_out(shared_blocks * 32);
  workbook::Stream stream(cudaStreamNonBlocking);
  const cudaStream_t s = stream.get();
  const auto gather = [&](int stride, cudaStream_t st) {
    gather_strided<<<(n + 255) / 256, 256, 0, st>>>(in.data(), out.data(), n, stride);
  };
  const auto shared = [&](int stride, cudaStream_t st) {
    shared_strided<<<shared_blocks, 32, 0, st>>>(shared_out.data(), stride, rounds);
  };

  // One launch of each, in the profiled range: ncu sees exactly these 12 kernels.
  WORKBOOK_CUDA_CHECK(cudaProfilerStart());
  for (int stride : kStrides) gather(stride, s);
  for (int stride : kStrides) shared(stride, s);
  WORKBOOK_CHECK_LAUNCH();
  stream.synchronize();
  WORKBOOK_CUDA_CHECK(cudaProfilerStop());

  workbook::TimingOptions options;
  options.flush_l2 = true;
  options.stream = s;
  std::printf("gather_strided, %d floats (GB/s counts the bytes the kernel needs, 8 per element):\n", n);
  for (int stride : kStrides) {
    const auto t = workbook::time_on_device([&](cudaStream_t st) { gather(stride, st); }, options);
    std::printf("  stride %2d: %8.3f ms, %6.0f GB/s\n", stride, t.median_ms,
                workbook::gigabytes_per_second(8.0 * n, t.median_ms));
  }
  std::printf("shared_strided, %d blocks of one warp, %d rounds:\n", shared_blocks, rounds);
  for (int stride : kStrides) {
    const auto t = workbook::time_on_device([&](cudaStream_t st) { shared(stride, st); }, options);
    std::printf("  stride %2d: %8.3f ms\n", stride, t.median_ms);
  }
  WORKBOOK_CHECK_LAUNCH();
  return 0;
}
