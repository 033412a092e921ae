// Broken on purpose (task 2): the grid-stride loop never advances, so the kernel never ends.
#include "vector_add.hpp"

__global__ void vector_add(const float*, const float*, float*, int) {}

__global__ void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;) c[i] = a[i] + b[i];
}

void vector_add_host(const float*, const float*, float*, int) {}
