// Broken on purpose (task 3): sets the handle's math mode (pedantic FP32). The results are
// right, but the handle is the caller's (hint cublas-math-mode, without the TF32 remark).
#include "matmul.hpp"

#include "workbook/workbook.hpp"

#include <stdexcept>
#include <string>

__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

void matmul_cublas(cublasHandle_t handle, const float* A, const float* B, float* C, int M, int N, int K) {
  cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t status = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cublasSgemm failed: ") + cublasGetStatusString(status));
  }
}

void matmul_challenge(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K, (void)stream;
}
