// Broken on purpose (task 1): each thread takes element 2i, as if every thread handled two,
// so every other element in the middle of c is never written (hint unwritten-gaps).
#include "vector_add.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}

void vector_add_host(const float*, const float*, float*, int) {}
