// What lesson 03 times, declared once for the grader's timed tests and for ./sweep 03
// (tools/bench/03_matmul.cu): C = A * B for M x N x K matrices in row-major order, by each of the
// lesson's functions, against cuBLAS's SGEMM on the same data. A product does 2 M N K flops and
// moves at least A, B and C once; the figure of merit is GFLOP/s as a fraction of cuBLAS's,
// measured in the same run.
//
// ./sweep 03 times square matrices of the sizes kSweepSizes, the naive kernel with blocks of
// 32 x (B / 32) threads (B = kDefaultNaiveBlock unless --blocks says otherwise); each task's
// timed test is the point N = kGradedN (task 1 keeping the best of kGradedNaiveBlocks).
#pragma once

#include "matmul.hpp"

#include "workbook/workbook.hpp"

#include <cublas_v2.h>

namespace matmul_benchmark {

constexpr int kSweepSizes[] = {128, 256, 512, 1024, 2048, 4096, 8192};
constexpr int kDefaultNaiveBlock = 256;  // 32 x 8
constexpr int kGradedN = 4096;
inline const dim3 kGradedNaiveBlocks[] = {dim3(32, 8), dim3(16, 16), dim3(32, 32)};

// A multiply and an add per term of each of the M x N dot products of length K.
inline double flops(int M, int N, int K) { return 2.0 * M * N * K; }

// The least traffic: A and B read once, C written once.
inline double least_bytes(int M, int N, int K) {
  return 4.0 * (double(M) * K + double(K) * N + double(M) * N);
}

// The grid of \p block threads that covers an M x N output, a thread per element.
inline dim3 grid_for(dim3 block, int M, int N) { return dim3((N + block.x - 1) / block.x, (M + block.y - 1) / block.y); }

// matmul_naive and matmul_tiled launched as the lesson says, on \p stream.
inline void launch_naive(const float* A, const float* B, float* C, int M, int N, int K, dim3 block,
                         cudaStream_t stream) {
  matmul_naive<<<grid_for(block, M, N), block, 0, stream>>>(A, B, C, M, N, K);
}
inline void launch_tiled(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  const dim3 block(kTile, kTile);
  matmul_tiled<<<grid_for(block, M, N), block, 0, stream>>>(A, B, C, M, N, K);
}

// C = A * B in row-major order by cuBLAS on \p handle (its math mode), on \p stream: cuBLAS is
// column-major, and a row-major C = A * B is the column-major C^T = B^T * A^T.
inline cublasStatus_t row_major_sgemm(cublasHandle_t handle, const float* A, const float* B, float* C, int M, int N,
                                      int K, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  if (const cublasStatus_t status = cublasSetStream(handle, stream); status != CUBLAS_STATUS_SUCCESS) return status;
  return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N);
}

// How the grader times one product (measure()'s policy; the sweep takes its numbers from the
// command line and flushes L2).
inline workbook::MeasureOptions graded_timing() {
  workbook::MeasureOptions options;
  options.warmup = 2;
  options.samples = 10;
  options.slow_ms = 500.0;  // a pathologically slow kernel is timed once
  options.precision = 0.01;  // enough samples to know the median to 1%, no more (measure())
  return options;
}

}  // namespace matmul_benchmark
