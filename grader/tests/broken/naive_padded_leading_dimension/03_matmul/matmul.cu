// Broken on purpose (task 1): the bounds check is right, but C is indexed with a leading
// dimension of N + 1, the padding of a shared-memory tile (As[kTile][kTile + 1]) carried over
// into a global index. The last row's stores land past the end of C, within the reach of the
// grid's extra threads, while most elements inside C are wrong: no matrix-writes-outside hint.
#include "matmul.hpp"

#include "workbook/workbook.hpp"

#include <stdexcept>
#include <string>

__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float sum = 0.0f;
    for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
    C[row * (N + 1) + col] = sum;
  }
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
