// Broken variant (a contract class: a memory error that leaves the values right): the reference
// solution with matmul_naive loading the next element of A's row one step ahead. On the last step
// of the last row that load reads A[M * K], one float past the end of A; its value is never used,
// so C is right and the grader's guard around A (read, never written) shows nothing. Only the check
// of the pass under compute-sanitizer memcheck, where A has no guard, sees the read.
#include "matmul.hpp"

#include "workbook/workbook.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;  // consecutive threads: consecutive columns
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float sum = 0.0f;
  float a = A[row * K];
  for (int k = 0; k < K; ++k) {
    const float a_next = A[row * K + k + 1];  // the next round's, loaded early; past A on the last round
    sum += a * B[k * N + col];
    a = a_next;
  }
  C[row * N + col] = sum;
}

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int col = blockIdx.x * kTile + tx;
  const int row = blockIdx.y * kTile + ty;
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;  // zeros past the edges
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them
    for (int k = 0; k < kTile; ++k) sum += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  if (row < M && col < N) C[row * N + col] = sum;
}

void matmul_cublas(cublasHandle_t handle, const float* A, const float* B, float* C, int M, int N, int K) {
  // cuBLAS is column-major. A row-major M x N matrix is its transpose in column-major, so
  // compute C^T = B^T * A^T: column-major N x M = (N x K) * (K x M), with no copies.
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t status =
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cublasSgemm failed: ") + cublasGetStatusString(status));
  }
}

namespace {

// Block tile 128 x 128, K step 8, 256 threads, each computing an 8 x 8 block of C in registers.
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, kThreads = (BM / TM) * (BN / TN);

__global__ void __launch_bounds__(kThreads)
matmul_register_blocked(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M,
                        int N, int K, bool vector_ok) {
  __shared__ float As[2][BK][BM];  // A tile, transposed: As[k][m]
  __shared__ float Bs[2][BK][BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int ty = tid / (BN / TN), tx = tid % (BN / TN);

  // Which elements this thread loads: A tile is BM x BK (4 floats per thread), B tile BK x BN.
  const int a_row = tid / (BK / 4), a_col = (tid % (BK / 4)) * 4;   // 128 rows x 2 float4
  const int b_row = tid / (BN / 4), b_col = (tid % (BN / 4)) * 4;   // 8 rows x 32 float4

  float acc[TM][TN] = {};
  float4 a_next, b_next;

  auto load = [&](int k0) {
    const int ar = row0 + a_row, ak = k0 + a_col;
    const int bk = k0 + b_row, bc = col0 + b_col;
    if (vector_ok && ar < M && ak + 3 < K) {
      a_next = *reinterpret_cast<const float4*>(&A[static_cast<long long>(ar) * K + ak]);
    } else {
      a_next.x = (ar < M && ak + 0 < K) ? A[static_cast<long long>(ar) * K + ak + 0] : 0.0f;
      a_next.y = (ar < M && ak + 1 < K) ? A[static_cast<long long>(ar) * K + ak + 1] : 0.0f;
      a_next.z = (ar < M && ak + 2 < K) ? A[static_cast<long long>(ar) * K + ak + 2] : 0.0f;
      a_next.w = (ar < M && ak + 3 < K) ? A[static_cast<long long>(ar) * K + ak + 3] : 0.0f;
    }
    if (vector_ok && bk < K && bc + 3 < N) {
      b_next = *reinterpret_cast<const float4*>(&B[static_cast<long long>(bk) * N + bc]);
    } else {
      b_next.x = (bk < K && bc + 0 < N) ? B[static_cast<long long>(bk) * N + bc + 0] : 0.0f;
      b_next.y = (bk < K && bc + 1 < N) ? B[static_cast<long long>(bk) * N + bc + 1] : 0.0f;
      b_next.z = (bk < K && bc + 2 < N) ? B[static_cast<long long>(bk) * N + bc + 2] : 0.0f;
      b_next.w = (bk < K && bc + 3 < N) ? B[static_cast<long long>(bk) * N + bc + 3] : 0.0f;
    }
  };
  auto store = [&](int buf) {
    As[buf][a_col + 0][a_row] = a_next.x;
    As[buf][a_col + 1][a_row] = a_next.y;
    As[buf][a_col + 2][a_row] = a_next.z;
    As[buf][a_col + 3][a_row] = a_next.w;
    *reinterpret_cast<float4*>(&Bs[buf][b_row][b_col]) = b_next;
  };

  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool more = k0 + BK < K;
    if (more) load(k0 + BK);  // the next tile's global loads overlap this tile's math
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
      const float4 a0 = *reinterpret_cast<const float4*>(&As[buf][k][ty * TM]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[buf][k][ty * TM + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * TN]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * TN + 4]);
      a[0] = a0.x, a[1] = a0.y, a[2] = a0.z, a[3] = a0.w, a[4] = a1.x, a[5] = a1.y, a[6] = a1.z, a[7] = a1.w;
      b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w, b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    if (more) {
      store(buf ^ 1);  // the other buffer: nobody reads it in this round
      __syncthreads();
      buf ^= 1;
    }
  }

  for (int i = 0; i < TM; ++i) {
    const int r = row0 + ty * TM + i;
    if (r >= M) break;
    const int c = col0 + tx * TN;
    if (vector_ok && c + TN <= N) {
      *reinterpret_cast<float4*>(&C[static_cast<long long>(r) * N + c]) =
          make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
      *reinterpret_cast<float4*>(&C[static_cast<long long>(r) * N + c + 4]) =
          make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    } else {
      for (int j = 0; j < TN && c + j < N; ++j) C[static_cast<long long>(r) * N + c + j] = acc[i][j];
    }
  }
}

}  // namespace

void matmul_challenge(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K < 0) throw std::invalid_argument("matmul_challenge: M and N must be positive, K >= 0");
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  const bool vector_ok = K % 4 == 0 && N % 4 == 0 && aligned(A) && aligned(B) && aligned(C);
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  matmul_register_blocked<<<grid, kThreads, 0, stream>>>(A, B, C, M, N, K, vector_ok);
  WORKBOOK_CHECK_LAUNCH();
}
