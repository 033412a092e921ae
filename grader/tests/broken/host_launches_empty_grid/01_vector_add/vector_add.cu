// Broken on purpose (task 3): no early return for n == 0, so it launches a grid of 0 blocks,
// which CUDA rejects (hint empty-grid).
#include "vector_add.hpp"

#include "workbook/workbook.hpp"

#include <cstddef>

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}

void vector_add_host(const float* a, const float* b, float* c, int n) {
  workbook::DeviceBuffer<float> d_a(n), d_b(n), d_c(n);
  d_a.copy_from_host(a);
  d_b.copy_from_host(b);
  vector_add<<<(n + 255) / 256, 256>>>(d_a.data(), d_b.data(), d_c.data(), n);
  WORKBOOK_CHECK_LAUNCH();
  d_c.copy_to_host(c);
}
