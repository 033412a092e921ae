/// \file
/// Lesson 01's interface: the functions you write in exercises/01_vector_add/vector_add.cu.
/// The grader calls exactly these, so keep their names and parameters as they are.
#pragma once

#include <cuda_runtime.h>

/// Task 1: c[i] = a[i] + b[i] for 0 <= i < n, one element per thread. The grader launches
/// it with (n + block - 1) / block blocks for several block sizes, so the last block
/// usually has threads with i >= n.
__global__ void vector_add(const float* a, const float* b, float* c, int n);

/// Task 2: the same sum with a grid-stride loop, correct for any grid and block size: the
/// grader launches it with grids far smaller than n as well as larger ones.
__global__ void vector_add_grid_stride(const float* a, const float* b, float* c, int n);

/// Task 3: c = a + b where a, b and c are host arrays of n floats: allocate device memory,
/// copy the inputs over, launch, check the launch, copy the result back. n may be 0.
void vector_add_host(const float* a, const float* b, float* c, int n);
