/// \file
/// Lesson 05: streams. The interface the exercise implements (exercises/05_streams/streams.cu)
/// and the two kernels the lesson gives (lessons/05_streams/kernels.cu). The grader calls
/// these functions; their names and parameters are fixed.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace streams {

// ---- Given by the lesson (kernels.cu); every task uses them. ----

/// out[i] = f(in[i]) for i < n, where f runs \p work rounds of arithmetic on its input (one FMA
/// each): \p work sets how long the kernel takes, so that compute can be made to take as long as
/// the copies. Enqueued on \p stream; does nothing for n = 0. \p in may equal \p out.
void transform(const float* in, float* out, std::size_t n, int work, cudaStream_t stream);

/// out[i] = (in[i-1] + in[i] + in[i+1]) / 3 for i < n, the ends repeating their own value: a
/// three-point smoothing. \p out must not overlap \p in (neighbours are read). Enqueued on
/// \p stream; does nothing for n = 0.
void smooth(const float* in, float* out, std::size_t n, cudaStream_t stream);

// ---- Task 1 ----

/// host_out[i] = f(host_in[i]) for i < n (f as in transform() with \p work), through the GPU:
/// the input is cut into \p num_chunks chunks (as equal as can be), and each chunk is copied in,
/// transformed and copied out on one of \p num_streams streams, so that copies of one chunk
/// overlap the kernel of another. host_in and host_out are pinned (cudaMallocHost);
/// device_in and device_out hold n floats each. Returns when host_out is complete, having
/// waited only for its own streams. num_chunks may exceed n; num_streams < 1 or num_chunks < 1
/// throws std::invalid_argument naming the bad value.
void process(const float* host_in, float* host_out, float* device_in, float* device_out, std::size_t n, int work,
             int num_streams, int num_chunks);

// ---- Task 2 ----

/// Two stages on two streams, ordered on the GPU only: transform(device_in -> device_out) on
/// \p compute, then device_out copied to host_out (pinned) on \p copy, which must not start
/// before the kernel ends. Returns at once, before the GPU is done; whoever called it waits on
/// \p copy to read host_out.
void compute_then_copy(const float* device_in, float* device_out, float* host_out, std::size_t n, int work,
                       cudaStream_t compute, cudaStream_t copy);

// ---- Task 3 ----

/// Batch b is elements [offsets[b], offsets[b+1]) of device_in and device_out, b < num_batches
/// (offsets is a host array of num_batches + 1 increasing values). For each batch:
/// device_out = smooth(transform(device_in)) over the batch alone, through temporary device
/// memory (a buffer per batch, or one the size of the largest), allocated and freed in stream
/// order on \p stream. Returns without
/// waiting; nothing stays allocated once \p stream has finished.
void transform_batches(const float* device_in, float* device_out, const std::size_t* offsets, int num_batches,
                       int work, cudaStream_t stream);

// ---- Task 4 (optional challenge) ----

/// Task 1's result from pageable host memory (a std::vector, a NumPy array): host_in and
/// host_out are ordinary memory; \p staging is \p staging_floats floats of pinned memory to
/// stage chunks through. The copies must still overlap the kernels. device_in and device_out
/// hold n floats each. Returns when host_out is complete, having waited only for its own
/// streams and events.
void process_pageable(const float* host_in, float* host_out, float* device_in, float* device_out, std::size_t n,
                      int work, float* staging, std::size_t staging_floats);

}  // namespace streams
