// Lesson 04: reductions. Reference solution.
#include "reduction.hpp"

#include "workbook/workbook.hpp"

#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>

#include <cstdint>
#include <stdexcept>
#include <string>

__global__ void reduce_block(const float* in, std::size_t n, float* block_sums) {
  extern __shared__ float partial[];
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + tid;
  partial[tid] = i < n ? in[i] : 0.0f;  // threads past the end add nothing, but take part
  __syncthreads();
  // Sequential addressing: the active threads stay contiguous (whole warps idle, no
  // divergence inside a warp) and a warp reads 32 consecutive words (no bank conflicts).
  for (unsigned s = blockDim.x / 2; s >= 32; s /= 2) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();  // level by level: nobody reads a sum before it is written
  }
  if (tid < 32) {  // the last 32 values: one warp, registers and shuffles, no barriers
    float v = partial[tid];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (tid == 0) block_sums[blockIdx.x] = v;
  }
}

namespace {

constexpr int kThreads = 512;

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of \p v over the block, in thread 0 (and in the rest of warp 0).
__device__ float block_sum(float v) {
  __shared__ float warp_sums[kThreads / 32];
  __syncthreads();  // a previous call's readers are done with warp_sums
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0f;
  return threadIdx.x < 32 ? warp_sum(v) : 0.0f;
}

// This thread's share of in[0 .. n-1], grid-stride, in float4 loads over the 16-byte aligned
// body, with \p Unroll independent loads in flight per thread.
template <int Unroll>
__device__ float thread_sum(const float* in, std::size_t n) {
  const std::size_t tid = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t misaligned = (reinterpret_cast<std::uintptr_t>(in) / sizeof(float)) % 4;
  const std::size_t head = misaligned == 0 ? 0 : (4 - misaligned < n ? 4 - misaligned : n);
  const float4* body = reinterpret_cast<const float4*>(in + head);
  const std::size_t quads = (n - head) / 4;
  float sums[Unroll] = {};
  std::size_t q = tid;
  for (; q + (Unroll - 1) * threads < quads; q += Unroll * threads) {
    float4 v[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) v[u] = __ldcs(body + q + u * threads);  // streamed: read once
#pragma unroll
    for (int u = 0; u < Unroll; ++u) sums[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; q < quads; q += threads) {
    const float4 v = __ldcs(body + q);
    sums[0] += (v.x + v.y) + (v.z + v.w);
  }
  float sum = 0.0f;
#pragma unroll
  for (int u = 0; u < Unroll; ++u) sum += sums[u];
  if (tid < head) sum += in[tid];                                 // before the first float4
  const std::size_t tail = head + 4 * quads;
  if (tid < n - tail) sum += in[tail + tid];                      // after the last one
  return sum;
}

// One pass: each block reduces its grid-stride share and writes one partial; the block that
// finishes last (counted with an atomic) adds the partials in index order and writes *out.
// The order of every addition is fixed by the grid, so the result is the same every run.
template <int Unroll>
__global__ void __launch_bounds__(kThreads)
reduce_one_pass(const float* in, std::size_t n, float* out, float* partials, unsigned* blocks_done) {
  const float mine = block_sum(thread_sum<Unroll>(in, n));
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = mine;
    __threadfence();  // the partial is visible to every block before the count says so
    last = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();  // acquire: the partials the count promised are read after it
  float v = 0.0f;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) v += __ldcg(&partials[b]);  // from L2
  v = block_sum(v);
  if (threadIdx.x == 0) *out = v;
}

// Enough blocks to fill every SM (as many as fit at once), fewer when n is small.
template <int Unroll>
unsigned grid_for(std::size_t n) {
  static const unsigned full = [] {
    int device = 0, sms = 0, per_sm = 0;
    WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
    WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    WORKBOOK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_one_pass<Unroll>, kThreads, 0));
    return unsigned(sms) * unsigned(per_sm > 0 ? per_sm : 1);
  }();
  const std::size_t needed = (n + 4 * Unroll * kThreads - 1) / (4 * Unroll * kThreads);
  return unsigned(needed < full ? (needed > 0 ? needed : 1) : full);
}

template <int Unroll>
void sum_one_pass(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                  cudaStream_t stream, const char* who) {
  const unsigned grid = grid_for<Unroll>(n);
  // Workspace: the counter, then the partials, 256 bytes apart.
  if (workspace == nullptr || 256 + grid * sizeof(float) > workspace_bytes) {
    throw std::invalid_argument(std::string(who) + ": the workspace holds " + std::to_string(workspace_bytes) +
                                " bytes; " + std::to_string(256 + grid * sizeof(float)) + " are needed");
  }
  auto* blocks_done = static_cast<unsigned*>(workspace);
  auto* partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + 256);
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(blocks_done, 0, sizeof(unsigned), stream));  // fresh every call
  reduce_one_pass<Unroll><<<grid, kThreads, 0, stream>>>(in, n, out, partials, blocks_done);
  WORKBOOK_CHECK_LAUNCH();
}

struct Square {
  __host__ __device__ float operator()(float x) const { return x * x; }
};
struct SquareRoot {
  __host__ __device__ float operator()(float x) const { return sqrtf(x); }
};

}  // namespace

void reduce_sum(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream) {
  sum_one_pass<2>(in, n, out, workspace, workspace_bytes, stream, "reduce_sum");
}

void norm_l2_cub(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                 cudaStream_t stream) {
  // CuPy's ReductionKernel in CUB's terms: identity 0, map x * x (applied by the input iterator
  // as CUB reads each value), reduce +, post-map sqrt (applied by the output iterator as CUB
  // writes the result). Reduce over a transform iterator rather than TransformReduce, which
  // CUB has only from 2.4 (CUDA 12.5): this builds with CUDA 12.4 too.
  const auto squares = thrust::make_transform_iterator(in, Square{});
  const auto result = thrust::make_transform_output_iterator(out, SquareRoot{});
  std::size_t needed = 0;
  cudaError_t status = cub::DeviceReduce::Reduce(nullptr, needed, squares, result, n, cuda::std::plus<>{}, 0.0f,
                                                 stream);
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("norm_l2_cub: CUB's size query failed: ") + cudaGetErrorString(status));
  }
  if (needed > workspace_bytes) {
    throw std::runtime_error("norm_l2_cub: CUB needs " + std::to_string(needed) + " bytes of temporary storage; the "
                             "workspace has " + std::to_string(workspace_bytes));
  }
  status = cub::DeviceReduce::Reduce(workspace, needed, squares, result, n, cuda::std::plus<>{}, 0.0f, stream);
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("norm_l2_cub: CUB failed: ") + cudaGetErrorString(status));
  }
}

void reduce_sum_challenge(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                          cudaStream_t stream) {
  sum_one_pass<4>(in, n, out, workspace, workspace_bytes, stream, "reduce_sum_challenge");
}
