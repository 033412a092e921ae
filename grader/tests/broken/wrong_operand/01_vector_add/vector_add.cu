// Broken on purpose (task 1): adds a to itself, so every element is written with a wrong
// value (hint wrong-values).
#include "vector_add.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + a[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}

void vector_add_host(const float*, const float*, float*, int) {}
