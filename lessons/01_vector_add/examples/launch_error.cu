// Worked example for lesson 01: what a launch with 2048 threads per block returns, and how
// the helper library reports it. Lesson 01's README quotes it; ctest runs it.
#include "workbook/workbook.hpp"

#include <cstdio>

__global__ void do_nothing() {}

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("launch_error");

  //! [raw]
  do_nothing<<<1, 2048>>>();                 // at most 1024 threads per block on every GPU
  const cudaError_t code = cudaGetLastError();  // the launch error; reading it also clears it
  std::printf("%s: %s\n", cudaGetErrorName(code), cudaGetErrorString(code));
  //! [raw]
  // CUDA 13 answers cudaErrorInvalidValue; CUDA 12 and older cudaErrorInvalidConfiguration.
  if (code != cudaErrorInvalidValue && code != cudaErrorInvalidConfiguration) return 1;

  //! [checked]
  try {
    do_nothing<<<1, 2048>>>();
    WORKBOOK_CHECK_LAUNCH();
  } catch (const workbook::CudaError& e) {
    std::printf("caught: %s\n", e.what());
  }
  //! [checked]
  return 0;
}
