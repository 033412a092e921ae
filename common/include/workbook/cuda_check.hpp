/// \file
/// Error checking for CUDA calls: a failed call throws workbook::CudaError naming the
/// call, the file and the line, so a test runner can report it. Nothing here calls exit().
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace workbook {

/// A failed CUDA runtime call. what() reads like
/// "vector_add.cu:42: cudaMalloc(&p, bytes) failed: cudaErrorMemoryAllocation (out of memory)".
class CudaError : public std::runtime_error {
public:
  /// Builds the message from the error code, the call's source text and where it was made.
  CudaError(cudaError_t code, const char* call, const char* file, int line);

  /// The CUDA error code, e.g. cudaErrorIllegalAddress.
  cudaError_t code() const noexcept { return code_; }

private:
  cudaError_t code_;
};

/// Throws CudaError when \p code is not cudaSuccess. Use through WORKBOOK_CUDA_CHECK.
void cuda_check(cudaError_t code, const char* call, const char* file, int line);

/// Like cuda_check, but for destructors and other noexcept places: prints the error to
/// stderr instead of throwing and returns false when \p code is not cudaSuccess.
bool cuda_check_noexcept(cudaError_t code, const char* call, const char* file, int line) noexcept;

/// Throws CudaError if the last kernel launch on this thread failed (bad launch
/// configuration, too many resources, ...). Does not wait for the kernel to finish.
void check_last_launch(const char* file, int line);

}  // namespace workbook

/// Runs a CUDA runtime call and throws workbook::CudaError if it fails.
#define WORKBOOK_CUDA_CHECK(call) ::workbook::cuda_check((call), #call, __FILE__, __LINE__)

/// Checks the launch that came just before: `kernel<<<grid, block>>>(...); WORKBOOK_CHECK_LAUNCH();`
#define WORKBOOK_CHECK_LAUNCH() ::workbook::check_last_launch(__FILE__, __LINE__)
