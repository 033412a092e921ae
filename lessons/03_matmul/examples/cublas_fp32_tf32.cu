// Worked example for lesson 03: cuBLAS from row-major C++, in FP32 and in TF32 tensor-core
// math, with the speed and the accuracy of each. Lesson 03's README quotes it between the
// //! [name] markers; ctest runs it.
#include "workbook/workbook.hpp"

#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <vector>

//! [check]
// Every cuBLAS call returns a status; like WORKBOOK_CUDA_CHECK for the runtime, never drop it.
#define CUBLAS_CHECK(call)                                                                         \
  do {                                                                                             \
    const cublasStatus_t status_ = (call);                                                         \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cublasGetStatusString(status_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
//! [check]

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("cublas_fp32_tf32");
  const int n = 4096;  // C = A * B, all n x n, row-major
  const std::size_t elements = std::size_t(n) * n;
  workbook::DeviceBuffer<float> A(elements), B(elements), C(elements);
  workbook::fill_random_device(A.data(), elements, 1);
  workbook::fill_random_device(B.data(), elements, 2);

  //! [handle]
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));  // once per program: it allocates and sets up, slowly
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A * B is column-major C^T = B^T * A^T: swap the operands and M with N.
  CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, B.data(), n, A.data(), n, &beta,
                           C.data(), n));
  //! [handle]
  std::vector<float> fp32(elements), tf32(elements);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(fp32.data(), C.data(), C.bytes(), cudaMemcpyDeviceToHost));

  const auto sgemm = [&](cudaStream_t s) {
    cublasSetStream(handle, s);
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, B.data(), n, A.data(), n, &beta, C.data(), n);
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

  // Accuracy: both against float64 on a sample of elements of C.
  std::vector<float> a(elements), b(elements);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(a.data(), A.data(), A.bytes(), cudaMemcpyDeviceToHost));
  WORKBOOK_CUDA_CHECK(cudaMemcpy(b.data(), B.data(), B.bytes(), cudaMemcpyDeviceToHost));
  double err32 = 0, errtf = 0;
  for (int sample = 0; sample < 256; ++sample) {
    const int r = (sample * 977) % n, c = (sample * 1553 + 7) % n;
    double exact = 0;
    for (int k = 0; k < n; ++k) exact += double(a[std::size_t(r) * n + k]) * b[std::size_t(k) * n + c];
    err32 = std::max(err32, std::abs(fp32[std::size_t(r) * n + c] - exact));
    errtf = std::max(errtf, std::abs(tf32[std::size_t(r) * n + c] - exact));
  }
  std::printf("cuBLAS, %d x %d x %d, inputs uniform in [-1, 1]:\n", n, n, n);
  std::printf("  FP32: %6.3f ms, %6.1f TFLOP/s, largest error %.1e\n", fp32_time.median_ms,
              flops / fp32_time.median_ms / 1e9, err32);
  std::printf("  TF32: %6.3f ms, %6.1f TFLOP/s, largest error %.1e (%.1fx faster, %.0fx less accurate)\n",
              tf32_time.median_ms, flops / tf32_time.median_ms / 1e9, errtf, fp32_time.median_ms / tf32_time.median_ms,
              errtf / err32);
  return 0;
}
