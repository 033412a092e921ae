// grader::fill_shared_memory: every SM's shared memory set to one value before a rerun.
#include "grader.hpp"

#include "workbook/cuda_check.hpp"

#include <utility>

namespace grader {
namespace {

// Writes \p value into \p words floats of dynamic shared memory. "grader_own_": left unchecked by
// compute-sanitizer's check of a pass (grader/driver/sanitizer.py, GRADER_KERNEL_MARK).
__global__ void grader_own_fill_shared_memory(float value, int words) {
  extern __shared__ float shared[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) shared[i] = value;
}

}  // namespace

void fill_shared_memory(float value) {
  // As much as one block may have, two blocks per SM, so that each SM runs one.
  static const std::pair<int, int> bytes_and_blocks = [] {
    int optin = 0, sms = 0;
    WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    WORKBOOK_CUDA_CHECK(
        cudaFuncSetAttribute(grader_own_fill_shared_memory, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    return std::pair<int, int>{optin, 2 * sms};
  }();
  const auto [bytes, blocks] = bytes_and_blocks;
  grader_own_fill_shared_memory<<<blocks, 1024, bytes>>>(value, bytes / int(sizeof(float)));
  WORKBOOK_CHECK_LAUNCH();
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());  // done before the rerun is queued, on any stream
}

}  // namespace grader
