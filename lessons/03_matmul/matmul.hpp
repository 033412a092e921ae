/// \file
/// Lesson 03's interface (groundwork for issue 4: not in lessons/manifest.json yet, so
/// nothing builds or grades it). Row-major matrices: A is M x K, B is K x N, C is M x N.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

/// Tile width of the shared-memory kernel: blocks of kTile x kTile threads.
constexpr int kTile = 32;

/// Task 1: one thread per element of C; launch with 2D blocks, x along the columns of C.
__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K);

/// Task 2: shared-memory tiling; launch with kTile x kTile blocks covering C.
__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K);

/// Task 3: C = A * B through cuBLAS (FP32 math), row-major, on the handle's stream.
void matmul_cublas(cublasHandle_t handle, const float* A, const float* B, float* C, int M, int N, int K);

/// Task 4 (challenge): register blocking and vectorized loads; launches its own grid.
void matmul_challenge(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream = nullptr);
