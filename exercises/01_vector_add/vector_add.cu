// Lesson 01: vector add. Read lessons/01_vector_add/README.md first.
//
// Fill in the three TODOs; each is one task of the lesson. Grade your work with
//     ./grade 01
// Untouched, this file compiles and every task is graded "not implemented yet".
#include "vector_add.hpp"

#include "workbook/workbook.hpp"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  // TODO(task 1): c[i] = a[i] + b[i] for every i < n, each thread handling one element. The grader
  // launches this kernel with (n + block - 1) / block blocks of 32 to 1024 threads, for n from 1 to
  // about 67 million, mostly not multiples of the block: every element must be written, and nothing
  // outside a, b and c read or written. Timed at n = 2^28 against the GPU's copy bandwidth (70% earns
  // the points). Lesson sections: "Threads, blocks and the grid", "Worked example: y = alpha * x".
}

__global__ void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
  // TODO(task 2): the same sum, right for ANY grid: the grader launches it with grids far smaller than
  // n (down to a single warp), exactly large enough, and larger. Every element written exactly once,
  // nothing outside the arrays touched. Timed with one full wave of blocks (every SM filled once)
  // against the copy bandwidth (70%). Lesson section: "The grid-stride loop".
}

void vector_add_host(const float* a, const float* b, float* c, int n) {
  // TODO(task 3): c = a + b where a, b and c are HOST arrays of n floats, computed on the GPU by one
  // of your kernels: the inputs must get to the device and the result back into c. Every CUDA call
  // checked (WORKBOOK_CUDA_CHECK) and the launch too (WORKBOOK_CHECK_LAUNCH); device memory you
  // allocate is freed again, also when an error is thrown; n may be 0. Lesson sections: "Host and
  // device", "Worked example: y = alpha * x", "Checking errors", "Task 3: `vector_add_host`, the
  // round trip".
  (void)a, (void)b, (void)c, (void)n;
}
