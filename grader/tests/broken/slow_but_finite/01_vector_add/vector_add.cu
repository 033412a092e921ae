// Broken on purpose (task 2): correct, but every launch keeps the GPU busy for 1.5 s (the
// first thread of block 0 waits on the GPU's clock), so the task's tests finish one after
// another yet not within the time limit. The grader must say it was slow and still making
// progress, not that a kernel never ends (hint timeout-slow).
#include "vector_add.hpp"

__global__ void vector_add(const float*, const float*, float*, int) {}

__global__ void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) c[i] = a[i] + b[i];
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long start = 0, now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < 1500000000ull);
  }
}

void vector_add_host(const float*, const float*, float*, int) {}
