// Lesson 01: vector add. Read lessons/01_vector_add/README.md first.
//
// Fill in the three TODOs; each is one task of the lesson. Grade your work with
//     ./grade 01
// Untouched, this file compiles and every task is graded "not implemented yet".
#include "vector_add.hpp"

#include "workbook/workbook.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  // TODO(task 1): compute this thread's global index i from blockIdx.x, blockDim.x and
  // threadIdx.x. If i is inside the arrays (i < n), set c[i] = a[i] + b[i].
}

__global__ void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
  // TODO(task 2): start at the global index and step by the number of threads in the whole
  // grid (blockDim.x * gridDim.x) while i < n, setting c[i] = a[i] + b[i] at each step.
}

void vector_add_host(const float* a, const float* b, float* c, int n) {
  // TODO(task 3): the host-device round trip.
  //   1. Device buffers for a, b and c: workbook::DeviceBuffer<float> (or cudaMalloc).
  //   2. Copy a and b to the device: cudaMemcpy(..., cudaMemcpyHostToDevice).
  //   3. Launch one of your kernels with enough threads for n, then WORKBOOK_CHECK_LAUNCH().
  //   4. Copy c back: cudaMemcpy(..., cudaMemcpyDeviceToHost).
  // Wrap every CUDA call in WORKBOOK_CUDA_CHECK(...). When n == 0 there is nothing to do.
  (void)a, (void)b, (void)c, (void)n;
}
