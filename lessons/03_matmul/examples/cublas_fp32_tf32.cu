// Worked example for lesson 03: cuBLAS from row-major C++. A matrix-vector product y = A x on a
// row-major M x K matrix through cublasSgemv, which sees that matrix as its transpose; then a
// 4096^3 matrix product in FP32 and in TF32 tensor-core math, with the speed and the accuracy
// of each. The product is timed in cuBLAS's own column-major terms, where the layout makes no
// difference to the speed: the row-major C = A B is task 3. (The README's figures were measured
// when this program multiplied the same buffers in the other order, the same GEMM shape and
// inputs; its errors now differ in their last digits.) Lesson 03's README quotes it between
// the //! [name] markers; ctest runs it.
#include "workbook/workbook.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

//! [check]
// Every cuBLAS call returns a status; like WORKBOOK_CUDA_CHECK for the runtime, never drop it.
// A failed call throws, naming the call and where it was made, as the workbook's CUDA checks do.
void cublas_check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                             " failed: " + cublasGetStatusString(status));
  }
}
#define CUBLAS_CHECK(call) cublas_check((call), #call, __FILE__, __LINE__)
//! [check]

// y = A x for a row-major M x K matrix A, through cuBLAS; returns the largest error against a
// float64 product on the host.
double row_major_gemv(cublasHandle_t handle) {
  const int M = 3000, K = 2000;  // not square, so that a wrong dimension shows
  workbook::DeviceBuffer<float> A(std::size_t(M) * K), x(K), y(M);
  workbook::fill_random_device(A.data(), A.size(), 3);
  workbook::fill_random_device(x.data(), x.size(), 4);
  //! [gemv]
  // Row-major A (M x K, rows of K floats) is, read column by column, the K x M matrix A^T with
  // leading dimension K. So y = A x is y = (A^T)^T x: transpose what cuBLAS sees.
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasSgemv(handle, CUBLAS_OP_T, K, M, &one, A.data(), K, x.data(), 1, &zero, y.data(), 1));
  //! [gemv]
  std::vector<float> a(A.size()), xs(K), ys(M);
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());  // the handle's stream is the legacy one here
  A.copy_to_host(a.data());
  x.copy_to_host(xs.data());
  y.copy_to_host(ys.data());
  double worst = 0;
  for (int r = 0; r < M; ++r) {
    double exact = 0;
    for (int k = 0; k < K; ++k) exact += double(a[std::size_t(r) * K + k]) * xs[k];
    worst = std::max(worst, std::abs(ys[r] - exact));
  }
  return worst;
}

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("cublas_fp32_tf32");
  //! [handle]
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));  // once per program: it allocates and sets up, slowly
  //! [handle]
  const double gemv_error = row_major_gemv(handle);
  std::printf("row-major y = A x through cublasSgemv, 3000 x 2000: largest error %.1e\n", gemv_error);

  const int n = 4096;  // C = A * B in cuBLAS's column-major terms, all n x n
  const std::size_t elements = std::size_t(n) * n;
  workbook::DeviceBuffer<float> A(elements), B(elements), C(elements);
  workbook::fill_random_device(A.data(), elements, 1);
  workbook::fill_random_device(B.data(), elements, 2);
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major: element (r, c) of A is A[c * n + r]. For the speed the layout does not matter.
  CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, A.data(), n, B.data(), n, &beta,
                           C.data(), n));
  std::vector<float> fp32(elements), tf32(elements);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(fp32.data(), C.data(), C.bytes(), cudaMemcpyDeviceToHost));

  const auto sgemm = [&](cudaStream_t s) {
    CUBLAS_CHECK(cublasSetStream(handle, s));
    CUBLAS_CHECK(
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, A.data(), n, B.data(), n, &beta, C.data(), n));
  };
  const double flops = 2.0 * n * double(n) * n;
  const auto fp32_time = workbook::time_on_device(sgemm);

  //! [tf32]
  // TF32: the same call, now allowed to round A and B to 10-bit mantissas and use tensor cores.
  CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
  //! [tf32]
  const auto tf32_time = workbook::time_on_device(sgemm);
  sgemm(nullptr);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(tf32.data(), C.data(), C.bytes(), cudaMemcpyDeviceToHost));
  CUBLAS_CHECK(cublasDestroy(handle));

  // Accuracy: both against float64 on a sample of elements of C, indexed column-major.
  std::vector<float> a(elements), b(elements);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(a.data(), A.data(), A.bytes(), cudaMemcpyDeviceToHost));
  WORKBOOK_CUDA_CHECK(cudaMemcpy(b.data(), B.data(), B.bytes(), cudaMemcpyDeviceToHost));
  double err32 = 0, errtf = 0;
  for (int sample = 0; sample < 256; ++sample) {
    const int r = (sample * 977) % n, c = (sample * 1553 + 7) % n;
    double exact = 0;
    for (int k = 0; k < n; ++k) exact += double(a[std::size_t(k) * n + r]) * b[std::size_t(c) * n + k];
    err32 = std::max(err32, std::abs(fp32[std::size_t(c) * n + r] - exact));
    errtf = std::max(errtf, std::abs(tf32[std::size_t(c) * n + r] - exact));
  }
  std::printf("cuBLAS, %d x %d x %d, inputs uniform in [-1, 1]:\n", n, n, n);
  std::printf("  FP32: %6.3f ms, %6.1f TFLOP/s, largest error %.1e\n", fp32_time.median_ms,
              flops / fp32_time.median_ms / 1e9, err32);
  std::printf("  TF32: %6.3f ms, %6.1f TFLOP/s, largest error %.1e (%.1fx faster, %.0fx less accurate)\n",
              tf32_time.median_ms, flops / tf32_time.median_ms / 1e9, errtf, fp32_time.median_ms / tf32_time.median_ms,
              errtf / err32);
  // y = A x sums 2000 products of numbers in [-1, 1]: float32 errors stay far below 1e-3, while
  // a wrong dimension or operand gives errors of order 1.
  return gemv_error < 1e-3 ? 0 : 1;
}
