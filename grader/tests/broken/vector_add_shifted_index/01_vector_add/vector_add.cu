// Broken on purpose (task 1): each thread stores one element too far right, c[i + 1], with the
// bounds check i < n intact. Element 0 is never written, 1 .. n-1 hold their neighbour's sum and
// element n is written past the end: the write at n is what off_by_one (i <= n) shows too, but
// here the inside is wrong as well, so no off-by-one-end hint may fire.
#include "vector_add.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i + 1] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}
void vector_add_host(const float*, const float*, float*, int) {}
