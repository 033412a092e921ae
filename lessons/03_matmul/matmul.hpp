/// \file
/// Lesson 03's interface: the functions you write in exercises/03_matmul/matmul.cu. The
/// grader and the sweep (./sweep 03) call exactly these, so keep their names and parameters.
///
/// Every matrix is row-major, float32, in device memory: A is M x K (element (r, k) at
/// A[r * K + k]), B is K x N and C = A * B is M x N. M, N and K can be any positive size,
/// not only multiples of the tile.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

/// The tile width of matmul_tiled: it is launched with blocks of kTile x kTile threads.
constexpr int kTile = 32;

/// Task 1: one thread per element of C. Launched with 2D blocks of any shape (32 x 8,
/// 16 x 16, 32 x 32, ...) and a grid that covers C: threadIdx.x and blockIdx.x run along the
/// columns of C (0 .. N-1), threadIdx.y and blockIdx.y along its rows (0 .. M-1).
__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K);

/// Task 2: shared-memory tiling. Launched with dim3(kTile, kTile) blocks and a grid of
/// dim3(ceil(N / kTile), ceil(M / kTile)) blocks, x along the columns as in task 1.
__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K);

/// Task 3: C = A * B with cuBLAS in FP32 (no TF32), on \p handle as it is given (its stream,
/// its math mode). Throws an exception when cuBLAS reports an error. Returns without waiting.
void matmul_cublas(cublasHandle_t handle, const float* A, const float* B, float* C, int M, int N, int K);

/// Task 4 (challenge, optional): a hand-written kernel with register blocking and vectorized
/// loads. Chooses and launches its own grid on \p stream; returns without waiting. Any
/// pointer alignment and any sizes must work. Calling cuBLAS here scores zero.
void matmul_challenge(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream = nullptr);
