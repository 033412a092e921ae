// Broken on purpose (task 2): every element added to *out with its own atomicAdd, after *out is
// zeroed by cudaMemsetAsync on the given stream. That is a serial sum in a random order: its
// rounding error grows with n, not log n, and on an offset input it leaves the tree-shaped bound
// the grader allows (H100: 66 times the bound at n = 270335, where 16 pass). The order changes
// from run to run, yet no race may be claimed (the old reduction-race evidence fired here): the
// verdict states the error.
#include "reduction.hpp"

#include "workbook/workbook.hpp"

#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>

#include <stdexcept>
#include <string>

__global__ void reduce_block(const float* in, std::size_t n, float* block_sums) {
  extern __shared__ float s[];
  const unsigned t = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) block_sums[blockIdx.x] = s[0];
}

__global__ void sum_kernel(const float* in, std::size_t n, float* out) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    atomicAdd(out, in[i]);  // one atomic per element, all on one address
  }
}

void reduce_sum(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream) {
  (void)workspace, (void)workspace_bytes;
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), stream));
  if (n == 0) return;
  int sms = 0;
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const std::size_t needed = (n + 255) / 256;
  const unsigned grid = unsigned(needed < std::size_t(sms) * 8 ? needed : std::size_t(sms) * 8);
  sum_kernel<<<grid, 256, 0, stream>>>(in, n, out);
  WORKBOOK_CHECK_LAUNCH();
}

struct Square {
  __device__ float operator()(float x) const { return x * x; }
};
struct Root {
  __device__ float operator()(float x) const { return sqrtf(x); }
};

void norm_l2_cub(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                 cudaStream_t stream) {
  auto squares = thrust::make_transform_iterator(in, Square{});
  auto result = thrust::make_transform_output_iterator(out, Root{});
  std::size_t bytes = 0;
  if (cub::DeviceReduce::Reduce(nullptr, bytes, squares, result, n, cuda::std::plus<>{}, 0.0f, stream) !=
      cudaSuccess) {
    throw std::runtime_error("CUB size query failed");
  }
  if (bytes > workspace_bytes) throw std::runtime_error("workspace too small for CUB");
  if (cub::DeviceReduce::Reduce(workspace, bytes, squares, result, n, cuda::std::plus<>{}, 0.0f, stream) !=
      cudaSuccess) {
    throw std::runtime_error("CUB reduction failed");
  }
}

void reduce_sum_challenge(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                          cudaStream_t stream) {
  // TODO(task 4): optional challenge. reduce_sum again, as fast as CUB (97% of cub::DeviceReduce::Sum)
  // at 2^26 and 2^28 floats, with your own kernels only; any n and any alignment of `in` (it need not
  // start on a 16-byte boundary). Lesson sections: "More work per thread", "Task 4".
  (void)in, (void)n, (void)out, (void)workspace, (void)workspace_bytes, (void)stream;
}
