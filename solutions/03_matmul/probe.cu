// Groundwork probe for issue 4 (lesson 03), not built by CMake: checks the reference kernels
// against cuBLAS on awkward shapes and times them at 4096^3. On a GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icommon/include -Ilessons/03_matmul solutions/03_matmul/probe.cu \
//        solutions/03_matmul/matmul.cu common/src/*.cpp common/src/*.cu -lcublas -o probe && ./probe
// It goes away once the grader tests and the lesson 03 sweep exist.
#include "matmul.hpp"
#include "workbook/workbook.hpp"
#include <cstdio>
#include <cmath>
#include <vector>
#include <algorithm>

using namespace workbook;
static double max_rel(const std::vector<float>& a, const std::vector<float>& b, double scale) {
  double m = 0; for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs((double)a[i] - b[i]) / scale); return m;
}
int main() {
  cublasHandle_t h; cublasCreate(&h);
  const int shapes[][3] = {{1,1,1},{17,33,127},{127,1,33},{33,127,17},{1000,1000,1000},{1001,999,1003},{4096,4096,4096}};
  for (auto& s : shapes) {
    int M = s[0], N = s[1], K = s[2];
    DeviceBuffer<float> A((size_t)M*K), B((size_t)K*N), C((size_t)M*N), R((size_t)M*N);
    fill_random_device(A.data(), A.size(), 1); fill_random_device(B.data(), B.size(), 2);
    matmul_cublas(h, A.data(), B.data(), R.data(), M, N, K);
    std::vector<float> ref(R.size()), got(R.size());
    WORKBOOK_CUDA_CHECK(cudaMemcpy(ref.data(), R.data(), R.bytes(), cudaMemcpyDeviceToHost));
    // host float64 spot check of cuBLAS on a few elements
    std::vector<float> ha(A.size()), hb(B.size());
    WORKBOOK_CUDA_CHECK(cudaMemcpy(ha.data(), A.data(), A.bytes(), cudaMemcpyDeviceToHost));
    WORKBOOK_CUDA_CHECK(cudaMemcpy(hb.data(), B.data(), B.bytes(), cudaMemcpyDeviceToHost));
    double cub_err = 0;
    for (int t = 0; t < 50; ++t) { int i = (t * 7919) % M, j = (t * 104729) % N; double sum = 0;
      for (int k = 0; k < K; ++k) sum += (double)ha[(size_t)i*K+k] * hb[(size_t)k*N+j];
      cub_err = std::max(cub_err, std::abs(sum - ref[(size_t)i*N+j]) / std::sqrt((double)K)); }
    const double scale = std::sqrt((double)K);
    auto check = [&](const char* name, auto launch) {
      cudaMemset(C.data(), 0xFF, C.bytes()); launch(); WORKBOOK_CHECK_LAUNCH(); WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
      WORKBOOK_CUDA_CHECK(cudaMemcpy(got.data(), C.data(), C.bytes(), cudaMemcpyDeviceToHost));
      std::printf("  %-10s max |err|/sqrt(K) = %.2e\n", name, max_rel(got, ref, scale));
    };
    std::printf("M=%d N=%d K=%d (cublas vs f64: %.2e)\n", M, N, K, cub_err);
    dim3 blk(kTile, kTile), grd((N + kTile - 1) / kTile, (M + kTile - 1) / kTile);
    check("naive", [&]{ matmul_naive<<<grd, blk>>>(A.data(), B.data(), C.data(), M, N, K); });
    check("tiled", [&]{ matmul_tiled<<<grd, blk>>>(A.data(), B.data(), C.data(), M, N, K); });
    check("challenge", [&]{ matmul_challenge(A.data(), B.data(), C.data(), M, N, K); });
    if (M == 4096) {
      const double flop = 2.0 * M * N * K;
      TimingOptions o; o.warmup = 2; o.samples = 10;
      auto gf = [&](const char* name, std::function<void(cudaStream_t)> w) { auto t = time_on_device(w, o); double g = flop / t.median_ms / 1e6; std::printf("  %-12s %8.3f ms %8.0f GFLOP/s\n", name, t.median_ms, g); return g; };
      double fp32 = gf("cublas fp32", [&](cudaStream_t st){ cublasSetStream(h, st); matmul_cublas(h, A.data(), B.data(), C.data(), M, N, K); });
      cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
      double tf32 = gf("cublas tf32", [&](cudaStream_t st){ cublasSetStream(h, st); matmul_cublas(h, A.data(), B.data(), C.data(), M, N, K); });
      cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
      double nv = gf("naive", [&](cudaStream_t st){ matmul_naive<<<grd, blk, 0, st>>>(A.data(), B.data(), C.data(), M, N, K); });
      double ti = gf("tiled", [&](cudaStream_t st){ matmul_tiled<<<grd, blk, 0, st>>>(A.data(), B.data(), C.data(), M, N, K); });
      double ch = gf("challenge", [&](cudaStream_t st){ matmul_challenge(A.data(), B.data(), C.data(), M, N, K, st); });
      std::printf("ratios to cuBLAS FP32: naive %.1f%% tiled %.1f%% challenge %.1f%%; TF32/FP32 %.2fx\n", 100*nv/fp32, 100*ti/fp32, 100*ch/fp32, tf32/fp32);
    }
  }
  return 0;
}
