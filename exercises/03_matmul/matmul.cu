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
  // TODO(task 1): one thread per element of C.
  //   1. col = blockIdx.x * blockDim.x + threadIdx.x; row = blockIdx.y * blockDim.y + threadIdx.y.
  //      (x along the columns: the threads of a warp then read neighbouring elements of B
  //      and write neighbouring elements of C.)
  //   2. Threads with row >= M or col >= N do nothing.
  //   3. Sum A[row * K + k] * B[k * N + col] over k = 0 .. K-1 in a float, then store it
  //      in C[row * N + col].
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  // TODO(task 2): the same product, one kTile x kTile tile of A and of B at a time in
  // shared memory. Blocks are kTile x kTile threads; thread (tx, ty) computes C[row][col]
  // with col = blockIdx.x * kTile + tx and row = blockIdx.y * kTile + ty.
  //   1. __shared__ float As[kTile][kTile], Bs[kTile][kTile];
  //   2. For each tile t = 0, 1, ... while t * kTile < K:
  //        a. As[ty][tx] = A[row][t * kTile + tx] and Bs[ty][tx] = B[t * kTile + ty][col],
  //           or 0 when that element lies outside A or B;
  //        b. __syncthreads();
  //        c. add As[ty][k] * Bs[k][tx] for k = 0 .. kTile-1 to a running sum;
  //        d. __syncthreads();
  //   3. Store the sum in C[row][col] if row < M and col < N. No early return: every thread
  //      of the block must reach every __syncthreads().
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

void matmul_cublas(cublasHandle_t handle, const float* A, const float* B, float* C, int M, int N, int K) {
  // TODO(task 3): C = A * B with cublasSgemm (FP32), on the handle as it is given.
  //   cuBLAS is column-major: it sees each of these row-major matrices as its transpose.
  //   So ask it for C^T = B^T * A^T, which needs no transposition at all:
  //       cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N)
  //   with alpha = 1 and beta = 0. Throw std::runtime_error when the status it returns is not
  //   CUBLAS_STATUS_SUCCESS (cublasGetStatusString(status) says why).
  (void)handle, (void)A, (void)B, (void)C, (void)M, (void)N, (void)K;
}

void matmul_challenge(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  // TODO(task 4): optional challenge. Write your own kernel (no cuBLAS) above this function
  // and launch it here on `stream`, with the grid and blocks of your choice.
  //   - Register blocking: each thread computes a small block of C (say 8 x 8) and keeps it
  //     in registers, so each value read from shared memory feeds 8 multiply-adds.
  //   - Bigger block tiles (say 128 x 128 with a K step of 8) and float4 loads, used only
  //     when K and N are multiples of 4 and the pointers are 16-byte aligned.
  //   - Any M, N, K and any alignment must give the right C.
  (void)A, (void)B, (void)C, (void)M, (void)N, (void)K, (void)stream;
}
