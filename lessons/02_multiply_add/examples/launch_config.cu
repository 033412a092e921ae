// Worked example for lesson 02: the facts a launch configuration is chosen from, the two
// usual grids, and what an impossible configuration does. ctest runs it.
#include "workbook/workbook.hpp"

#include <cstdio>

__global__ void square(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = x[i] * x[i];
}

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("launch_config");
  const int n = 10'000'000;
  workbook::DeviceBuffer<float> x(n), y(n);

  //! [limits]
  int device = 0, sm_count = 0, max_block = 0, max_threads_per_sm = 0;
  WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&max_block, cudaDevAttrMaxThreadsPerBlock, device));
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  //! [limits]

  //! [grids]
  const int block = 256;
  // "cover": one thread per element, rounded up to whole blocks.
  const int cover = (n + block - 1) / block;
  // "wave": as many blocks as the SMs can hold at once; a grid-stride loop does the rest.
  int blocks_per_sm = 0;
  WORKBOOK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, square, block, 0));
  const int wave = blocks_per_sm * sm_count;
  //! [grids]
  std::printf("%d SMs, at most %d threads per block and %d per SM; block %d: cover grid %d, wave grid %d "
              "(%d blocks per SM)\n", sm_count, max_block, max_threads_per_sm, block, cover, wave, blocks_per_sm);

  square<<<cover, block>>>(x.data(), y.data(), n);
  WORKBOOK_CHECK_LAUNCH();
  square<<<wave, block>>>(x.data(), y.data(), n);
  WORKBOOK_CHECK_LAUNCH();

  //! [invalid]
  square<<<cover, 2048>>>(x.data(), y.data(), n);  // more threads per block than any GPU allows
  const cudaError_t error = cudaGetLastError();    // the launch was rejected; nothing ran
  std::printf("2048 threads per block: %s (%s)\n", cudaGetErrorName(error), cudaGetErrorString(error));
  //! [invalid]
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  return error != cudaSuccess ? 0 : 1;
}
