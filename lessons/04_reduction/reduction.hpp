/// \file
/// Lesson 04's interface: the functions you write in exercises/04_reduction/reduction.cu. The
/// grader and the sweep (./sweep 04) call exactly these, so keep their names and parameters.
///
/// Every array is float32 in device memory. A sum of n = 0 elements is 0. Results are written
/// to device memory (\p out, one float), on the stream given, without waiting for the GPU:
/// the caller waits when it needs the value, as with cub::DeviceReduce.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

/// Scratch device memory the grader passes to tasks 2, 3 and 4: this many bytes, 256-byte
/// aligned, holding leftovers from earlier calls (or garbage) when a call begins. Use it for
/// block partial sums, a counter, or CUB's temporary storage.
constexpr std::size_t kWorkspaceBytes = std::size_t(1) << 20;

/// Task 1: one partial sum per block, with a shared-memory tree. Block b sums the elements
/// in[b * blockDim.x + t] for t = 0 .. blockDim.x - 1 that exist (index < n) and writes the
/// sum to block_sums[b]. Launched with a grid of ceil(n / blockDim.x) blocks, blockDim.x any
/// power of two from 32 to 1024, and blockDim.x * sizeof(float) bytes of dynamic shared
/// memory (extern __shared__ float[]).
__global__ void reduce_block(const float* in, std::size_t n, float* block_sums);

/// Task 2: *out = the sum of in[0 .. n-1], computed on the GPU by your own kernels: fast,
/// right on every call (whatever *out and the workspace hold when it begins), everything on
/// \p stream. Returns without waiting.
void reduce_sum(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream);

/// Task 3: *out = sqrt(the sum of in[i] * in[i]), the L2 norm, through CUB (the map, reduce,
/// post-map shape of CuPy's ReductionKernel): no kernels of your own. Uses \p workspace for
/// CUB's temporary storage and throws std::runtime_error when it is too small or CUB reports
/// an error. Everything on \p stream; returns without waiting.
void norm_l2_cub(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                 cudaStream_t stream);

/// Task 4 (challenge, optional): reduce_sum as fast as cub::DeviceReduce::Sum (within 3%, the
/// timing noise) for 2^26 and 2^28 floats, with your own kernels only. Any n and any alignment
/// of \p in.
void reduce_sum_challenge(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                          cudaStream_t stream);
