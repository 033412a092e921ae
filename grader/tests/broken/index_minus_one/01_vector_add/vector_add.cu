// Broken on purpose (task 1): element i is stored at c[i - 1], as if indices started at 1,
// so thread 0 writes before the start of c (hint writes-before-start).
#include "vector_add.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i - 1] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}

void vector_add_host(const float*, const float*, float*, int) {}
