// Broken variant: matmul_challenge calls cuBLAS instead of a hand-written kernel. The
// grader sees the call (grader/03_matmul/cublas_spy.hpp) and gives task 4 no points.
#include "matmul.hpp"

#include "workbook/workbook.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;  // consecutive threads: consecutive columns
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float sum = 0.0f;
  for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
  C[row * N + col] = sum;
}

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int col = blockIdx.x * kTile + tx;
  const int row = blockIdx.y * kTile + ty;
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;  // zeros past the edges
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them
    for (int k = 0; k < kTile; ++k) sum += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  if (row < M && col < N) C[row * N + col] = sum;
}

void matmul_cublas(cublasHandle_t handle, const float* A, const float* B, float* C, int M, int N, int K) {
  // cuBLAS is column-major. A row-major M x N matrix is its transpose in column-major, so
  // compute C^T = B^T * A^T: column-major N x M = (N x K) * (K x M), with no copies.
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t status =
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cublasSgemm failed: ") + cublasGetStatusString(status));
  }
}

void matmul_challenge(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  // The "challenge" handed to the library: fast and correct, and not what the task asks for.
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    cublasCreate(&h);
    return h;
  }();
  cublasSetStream(handle, stream);
  matmul_cublas(handle, A, B, C, M, N, K);
}
