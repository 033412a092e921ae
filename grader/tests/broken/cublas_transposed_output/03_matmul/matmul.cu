// Broken on purpose (task 3): transposes both inputs with CUBLAS_OP_T, which is right for
// them, but leaves C column-major: the right values in transposed places (hint
// transposed-result).
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
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t status = cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_T, M, N, K, &alpha, A, K, B, N, &beta, C, M);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cublasSgemm failed: ") + cublasGetStatusString(status));
  }
}

void matmul_challenge(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K, (void)stream;
}
