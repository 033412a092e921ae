// Broken on purpose (task 1): no bounds check, so the last block's extra threads write past c.
// Tasks 2 and 3 are left unimplemented. Expected verdicts: expected.json beside this tree.
#include "vector_add.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}
void vector_add_host(const float*, const float*, float*, int) {}
