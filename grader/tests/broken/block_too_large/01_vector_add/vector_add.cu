// Broken on purpose (task 3): 2048 threads per block is more than any GPU allows; the
// launch fails and WORKBOOK_CHECK_LAUNCH reports it.
#include "vector_add.hpp"

#include "workbook/workbook.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}

void vector_add_host(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  workbook::DeviceBuffer<float> d_a(n), d_b(n), d_c(n);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_a.data(), a, d_a.bytes(), cudaMemcpyHostToDevice));
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_b.data(), b, d_b.bytes(), cudaMemcpyHostToDevice));
  vector_add<<<(n + 2047) / 2048, 2048>>>(d_a.data(), d_b.data(), d_c.data(), n);
  WORKBOOK_CHECK_LAUNCH();
  WORKBOOK_CUDA_CHECK(cudaMemcpy(c, d_c.data(), d_c.bytes(), cudaMemcpyDeviceToHost));
}
