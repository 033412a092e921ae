// Broken on purpose (task 3): the round trip is right, but the device memory is never freed;
// the tracer sees the allocations outlive the call.
#include "vector_add.hpp"

#include "workbook/workbook.hpp"

#include <cstddef>

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}

void vector_add_host(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  WORKBOOK_CUDA_CHECK(cudaMalloc(&d_a, bytes));
  WORKBOOK_CUDA_CHECK(cudaMalloc(&d_b, bytes));
  WORKBOOK_CUDA_CHECK(cudaMalloc(&d_c, bytes));
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice));
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_b, b, bytes, cudaMemcpyHostToDevice));
  vector_add<<<(n + 255) / 256, 256>>>(d_a, d_b, d_c, n);
  WORKBOOK_CHECK_LAUNCH();
  WORKBOOK_CUDA_CHECK(cudaMemcpy(c, d_c, bytes, cudaMemcpyDeviceToHost));
}
