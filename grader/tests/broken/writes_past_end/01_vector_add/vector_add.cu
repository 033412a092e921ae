// Broken on purpose (task 2): the loop bound counts bytes, not elements, so it writes
// three times n elements past the end of c.
#include "vector_add.hpp"

__global__ void vector_add(const float*, const float*, float*, int) {}

__global__ void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
  const int bytes = n * static_cast<int>(sizeof(float));
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += blockDim.x * gridDim.x) c[i] = a[i] + b[i];
}

void vector_add_host(const float*, const float*, float*, int) {}
