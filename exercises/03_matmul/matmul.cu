// Lesson 03: matrix multiply. Read lessons/03_matmul/README.md first.
//
// Fill in the TODOs; each is one task of the lesson (task 4 is an optional challenge).
// Grade your work with
//     ./grade 03
// and find shared-memory races with
//     ./grade --sanitize 03
// Untouched, this file compiles and every task is graded "not implemented yet".
//
// All matrices are row-major: A is M x K, B is K x N, C = A * B is M x N.
#include "matmul.hpp"

#include "workbook/workbook.hpp"

#include <stdexcept>
#include <string>

__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  // TODO(task 1): C = A * B, one thread per element of C. x runs along the columns of C and y along its
  // rows (matmul.hpp). The grader launches 2D blocks of several shapes (32 x 8, 16 x 16, 32 x 32, 64 x 2,
  // 8 x 4) with a grid rounded up to cover C, on shapes such as 1 x 1 x 1, 17 x 33 x 127 and
  // 1001 x 999 x 1003: every element of C written, nothing outside A, B and C touched. Timed at 4096^3
  // against cuBLAS FP32: half of what a naive kernel of the grader's reaches on the same GPU (6% on an
  // H100). Lesson sections: "2D grids and row-major indexing", "Which index is `threadIdx.x`: coalescing".
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  // TODO(task 2): the same product, staged through shared memory one kTile x kTile tile of A and of B at
  // a time, so that each element read from global memory serves kTile multiply-adds. Blocks are
  // kTile x kTile threads and the grid is ceil(N / kTile) x ceil(M / kTile), x along the columns as in
  // task 1 (matmul.hpp). M, N and K need not be multiples of kTile, and some blocks stick out of C
  // (a few lie wholly outside it). No races: the grader reruns large shapes on fresh data, and
  // ./grade --sanitize 03 runs racecheck. Timed at 4096^3 against cuBLAS FP32: 1.2 x what a naive kernel
  // of the grader's reaches on the same GPU (14% on an H100), so a kernel without tiles falls short.
  // Lesson section: "Shared-memory tiling".
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

void matmul_cublas(cublasHandle_t handle, const float* A, const float* B, float* C, int M, int N, int K) {
  // TODO(task 3): C = A * B through cublasSgemm, in FP32 (not TF32), on the row-major matrices as they
  // are: no transposed copy, no kernel of your own. Use `handle` as it is given: do not create one or
  // change its stream or math mode. Throw std::runtime_error, saying why, when cuBLAS reports an error
  // (the grader calls it with M = -1). Returns without waiting. Timed at 4096^3 against the grader's own
  // cublasSgemm (90%). Lesson section: "cuBLAS: the library when it fits".
  (void)handle, (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

void matmul_challenge(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  // TODO(task 4): optional challenge. Your fastest hand-written kernel (define it above this function;
  // calling cuBLAS here scores zero), launched on `stream` with the grid and blocks of your choice,
  // returning without waiting. Any M, N and K, and pointers that need not be 16-byte aligned, must give
  // the right C. Timed at 4096^3 against cuBLAS FP32 (40%). Lesson sections: "Shared-memory tiling" (its
  // last paragraph, "Why only 17%"), "Task 4 (challenge, optional)".
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K, (void)stream;
}
