// The --wrap side of cublas_spy.hpp. Each wrapper has the exact signature of the function it
// stands in for (most __real_ declarations are taken from cuBLAS's own prototypes with
// decltype, so a mismatch does not compile).
#include "cublas_spy.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <mutex>

namespace {

std::mutex mutex;
std::vector<std::string> calls;
int gemms = 0;
int failed_gemms = 0;

// Notes a call and passes its status through.
cublasStatus_t note(const char* name, bool gemm, cublasStatus_t status) {
  const std::lock_guard<std::mutex> lock(mutex);
  if (std::find(calls.begin(), calls.end(), name) == calls.end()) calls.emplace_back(name);
  if (gemm) ++gemms;
  if (gemm && status != CUBLAS_STATUS_SUCCESS) ++failed_gemms;
  return status;
}

}  // namespace

namespace grader {

void reset_cublas_calls() {
  const std::lock_guard<std::mutex> lock(mutex);
  calls.clear();
  gemms = 0;
  failed_gemms = 0;
}

std::vector<std::string> cublas_calls() {
  const std::lock_guard<std::mutex> lock(mutex);
  return calls;
}

int cublas_gemm_calls() {
  const std::lock_guard<std::mutex> lock(mutex);
  return gemms;
}

int cublas_failed_gemm_calls() {
  const std::lock_guard<std::mutex> lock(mutex);
  return failed_gemms;
}

}  // namespace grader

extern "C" {

decltype(cublasCreate_v2) __real_cublasCreate_v2;
decltype(cublasSgemm_v2) __real_cublasSgemm_v2;
// cublas_api.h overloads these two for C++ callers, so they are declared by hand.
cublasStatus_t __real_cublasGemmEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                   const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                   cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
decltype(cublasSgemmEx) __real_cublasSgemmEx;
decltype(cublasSgemmStridedBatched) __real_cublasSgemmStridedBatched;
cublasStatus_t __real_cublasGemmStridedBatchedEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                 const void*, const void*, cudaDataType, int, long long int,
                                                 const void*, cudaDataType, int, long long int, const void*, void*,
                                                 cudaDataType, int, long long int, int, cublasComputeType_t,
                                                 cublasGemmAlgo_t);
decltype(cublasLtCreate) __real_cublasLtCreate;
decltype(cublasSgemm_v2_64) __real_cublasSgemm_v2_64;
cublasStatus_t __real_cublasGemmEx_64(cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t, int64_t, int64_t,
                                      const void*, const void*, cudaDataType, int64_t, const void*, cudaDataType,
                                      int64_t, const void*, void*, cudaDataType, int64_t, cublasComputeType_t,
                                      cublasGemmAlgo_t);
decltype(cublasLtMatmul) __real_cublasLtMatmul;

cublasStatus_t __wrap_cublasCreate_v2(cublasHandle_t* handle) {
  return note("cublasCreate", false, __real_cublasCreate_v2(handle));
}

cublasStatus_t __wrap_cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                     int n, int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                                     const float* beta, float* C, int ldc) {
  return note("cublasSgemm", true,
              __real_cublasSgemm_v2(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

cublasStatus_t __wrap_cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
                                   const void* B, cudaDataType Btype, int ldb, const void* beta, void* C,
                                   cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                   cublasGemmAlgo_t algo) {
  return note("cublasGemmEx", true,
              __real_cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
                             ldc, computeType, algo));
}

cublasStatus_t __wrap_cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                    int n, int k, const float* alpha, const void* A, cudaDataType Atype, int lda,
                                    const void* B, cudaDataType Btype, int ldb, const float* beta, void* C,
                                    cudaDataType Ctype, int ldc) {
  return note("cublasSgemmEx", true,
              __real_cublasSgemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
                              ldc));
}

cublasStatus_t __wrap_cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k, const float* alpha,
                                                const float* A, int lda, long long int strideA, const float* B,
                                                int ldb, long long int strideB, const float* beta, float* C, int ldc,
                                                long long int strideC, int batchCount) {
  return note("cublasSgemmStridedBatched", true,
              __real_cublasSgemmStridedBatched(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
                                          beta, C, ldc, strideC, batchCount));
}

cublasStatus_t __wrap_cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                 cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                                 const void* A, cudaDataType Atype, int lda, long long int strideA,
                                                 const void* B, cudaDataType Btype, int ldb, long long int strideB,
                                                 const void* beta, void* C, cudaDataType Ctype, int ldc,
                                                 long long int strideC, int batchCount,
                                                 cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return note("cublasGemmStridedBatchedEx", true,
              __real_cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype,
                                           ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo));
}

cublasStatus_t __wrap_cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                        int64_t m, int64_t n, int64_t k, const float* alpha, const float* A,
                                        int64_t lda, const float* B, int64_t ldb, const float* beta, float* C,
                                        int64_t ldc) {
  return note("cublasSgemm_64", true,
              __real_cublasSgemm_v2_64(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

cublasStatus_t __wrap_cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                      int64_t m, int64_t n, int64_t k, const void* alpha, const void* A,
                                      cudaDataType Atype, int64_t lda, const void* B, cudaDataType Btype, int64_t ldb,
                                      const void* beta, void* C, cudaDataType Ctype, int64_t ldc,
                                      cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return note("cublasGemmEx_64", true,
              __real_cublasGemmEx_64(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C,
                                     Ctype, ldc, computeType, algo));
}

cublasStatus_t __wrap_cublasLtCreate(cublasLtHandle_t* handle) {
  return note("cublasLtCreate", false, __real_cublasLtCreate(handle));
}

cublasStatus_t __wrap_cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                                     const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                                     cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                                     cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                                     const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes,
                                     cudaStream_t stream) {
  return note("cublasLtMatmul", true,
              __real_cublasLtMatmul(handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
                               workspaceSizeInBytes, stream));
}

}  // extern "C"
