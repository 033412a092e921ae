// Worked example for lesson 01: y = alpha * x, the whole way from host arrays to a
// checked result. Lesson 01's README quotes it between the //! [name] markers; ctest runs it.
// It shows one element per thread and the grid-stride loop on a different operation than
// the tasks, so the tasks are still yours to write.
#include "workbook/workbook.hpp"

#include <cstdio>
#include <vector>

//! [kernel]
// Runs on the GPU, once per thread. Every thread computes its own global index.
__global__ void scale(float alpha, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // like cuda.grid(1) in Numba
  if (i < n) {                                           // the last block may stick out past n
    y[i] = alpha * x[i];
  }
}
//! [kernel]

//! [grid_stride]
// Any grid works: each thread handles i, i + stride, i + 2*stride, ... while inside the array.
__global__ void scale_grid_stride(float alpha, const float* x, float* y, int n) {
  const int stride = blockDim.x * gridDim.x;  // threads in the whole grid
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    y[i] = alpha * x[i];
  }
}
//! [grid_stride]

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("scale");

  //! [round_trip]
  const int n = 1'000'003;  // deliberately not a multiple of the block size
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i);

  workbook::DeviceBuffer<float> d_x(n), d_y(n);  // cudaMalloc now, cudaFree when they go out of scope
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_x.data(), x.data(), d_x.bytes(), cudaMemcpyHostToDevice));

  const int block = 256;                        // threads per block: a multiple of 32
  const int grid = (n + block - 1) / block;     // enough blocks to cover n, rounded up
  scale<<<grid, block>>>(2.0f, d_x.data(), d_y.data(), n);
  WORKBOOK_CHECK_LAUNCH();                      // was the launch itself valid?

  WORKBOOK_CUDA_CHECK(cudaMemcpy(y.data(), d_y.data(), d_y.bytes(), cudaMemcpyDeviceToHost));
  //! [round_trip]

  // The same result from a grid far smaller than n.
  std::vector<float> y2(n);
  workbook::DeviceBuffer<float> d_y2(n);
  scale_grid_stride<<<4, 128>>>(2.0f, d_x.data(), d_y2.data(), n);
  WORKBOOK_CHECK_LAUNCH();
  WORKBOOK_CUDA_CHECK(cudaMemcpy(y2.data(), d_y2.data(), d_y2.bytes(), cudaMemcpyDeviceToHost));

  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += (y[i] != 2.0f * x[i]) + (y2[i] != 2.0f * x[i]);
  std::printf("scale: %d wrong elements of %d\n", wrong, 2 * n);
  return wrong == 0 ? 0 : 1;
}
