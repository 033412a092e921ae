// Broken on purpose (task 1): the index uses gridDim.x where blockDim.x belongs, so with
// more than one block the threads stop short of n although the grid has a thread for every
// element. The grader must blame the index, not the grid (hint index-misses-tail).
#include "vector_add.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * gridDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}

void vector_add_host(const float*, const float*, float*, int) {}
