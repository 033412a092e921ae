// Lesson 01: vector add. Reference solution.
//
// The plain kernels are already close to the memory-bandwidth ceiling: a vector add reads
// 8 bytes and writes 4 per element and does one addition, so nothing but memory traffic
// matters. What matters is that consecutive threads touch consecutive elements (coalesced
// access) and that the grid keeps every SM busy.
#include "vector_add.hpp"

#include "workbook/workbook.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
  const int stride = blockDim.x * gridDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) c[i] = a[i] + b[i];
}

void vector_add_host(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;  // a launch with 0 blocks would be an invalid configuration
  workbook::DeviceBuffer<float> d_a(n), d_b(n), d_c(n);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_a.data(), a, d_a.bytes(), cudaMemcpyHostToDevice));
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_b.data(), b, d_b.bytes(), cudaMemcpyHostToDevice));
  const int block = 256;
  const int grid = (n + block - 1) / block;
  vector_add<<<grid, block>>>(d_a.data(), d_b.data(), d_c.data(), n);
  WORKBOOK_CHECK_LAUNCH();
  WORKBOOK_CUDA_CHECK(cudaMemcpy(c, d_c.data(), d_c.bytes(), cudaMemcpyDeviceToHost));
}
