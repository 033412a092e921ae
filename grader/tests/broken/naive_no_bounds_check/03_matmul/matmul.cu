// Broken on purpose (task 1): no bounds check, so the threads of the rounded-up grid with
// row >= M or col >= N write past the end of C (hint matrix-writes-outside).
#include "matmul.hpp"

#include "workbook/workbook.hpp"

#include <stdexcept>
#include <string>

__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  float sum = 0.0f;
  for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
  C[row * N + col] = sum;
}

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

void matmul_cublas(cublasHandle_t handle, const float* A, const float* B, float* C, int M, int N, int K) {
  (void)handle, (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

void matmul_challenge(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K, (void)stream;
}
