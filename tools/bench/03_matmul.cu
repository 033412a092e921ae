// The sweep of lesson 03: GFLOP/s of C = A * B against N for square N x N x N matrices, for
// each of the lesson's functions (naive, tiled, the cuBLAS call, the challenge) and, as the
// baselines, cuBLAS itself in FP32 and in TF32 tensor-core math. ./sweep 03 runs it for the
// student's code and for the reference solution. What is timed, the sizes, the flops and bytes
// of a product and the launches are lesson 03's benchmark declaration
// (grader/03_matmul/benchmark.hpp), which the grader's timed tests use too.
//
// --blocks sets the naive kernel's blocks (B threads as 32 x B/32; default 256 = 32 x 8); the
// tiled kernel always runs kTile x kTile blocks, and cuBLAS and the challenge choose their own
// launch (grid_mode "own", block and grid empty). No host-device transfers are timed here
// (lesson 02 covers them), but the baselines are treated like lesson 02's transfers: they do
// not depend on the code swept, so --no-transfers leaves them out, and ./sweep passes it to
// every run after the first that succeeded: they appear once in the CSV.
//
// Each function is announced ("# checking OP", "# measuring OP n=N ...") before it runs. One
// that crashes takes the process with it (an illegal address breaks the CUDA context for good),
// so ./sweep names it from the last announcement and runs this again with --skip OP.
#include "benchmark.hpp"
#include "matmul.hpp"
#include "sweep.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const char* const kLesson = "03_matmul";

struct Handle {
  explicit Handle(cublasMath_t mode) {
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    cublasSetMathMode(h, mode);
  }
  ~Handle() { cublasDestroy(h); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  cublasHandle_t h = nullptr;
};

namespace declared = matmul_benchmark;

// C = A * B with cuBLAS on the handle's math mode (row-major, as in the lesson).
void library_gemm(cublasHandle_t h, const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t s) {
  if (const cublasStatus_t status = declared::row_major_sgemm(h, A, B, C, M, N, K, s); status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cublasSgemm failed: ") + cublasGetStatusString(status));
  }
}

// One of the lesson's functions, launched on a stream for M x N x K.
using Gemm = std::function<void(const float*, const float*, float*, int, int, int, cudaStream_t)>;

struct Kernel {
  std::string operation;   // the CSV's operation column
  std::string grid_mode;   // "2d", "tiles" or "own"
  int block = 0;           // threads per block, 0 when the code chooses
  Gemm run;
  long long grid(int M, int N) const {
    if (grid_mode == "own") return 0;
    const dim3 g = declared::grid_for(grid_mode == "tiles" ? dim3(kTile, kTile) : dim3(32, block / 32), M, N);
    return static_cast<long long>(g.x) * g.y;
  }
};

std::vector<Kernel> lesson_kernels(const std::vector<int>& naive_blocks, cublasHandle_t handle) {
  std::vector<Kernel> kernels;
  for (const int block : naive_blocks) {
    kernels.push_back({"matmul_naive", "2d", block, [block](const float* A, const float* B, float* C, int M, int N,
                                                           int K, cudaStream_t s) {
      declared::launch_naive(A, B, C, M, N, K, dim3(32, block / 32), s);
    }});
  }
  kernels.push_back({"matmul_tiled", "tiles", kTile * kTile, declared::launch_tiled});
  kernels.push_back({"matmul_cublas", "own", 0, [handle](const float* A, const float* B, float* C, int M, int N,
                                                         int K, cudaStream_t s) {
    cublasSetStream(handle, s);
    matmul_cublas(handle, A, B, C, M, N, K);
  }});
  kernels.push_back({"matmul_challenge", "own", 0, [](const float* A, const float* B, float* C, int M, int N, int K,
                                                      cudaStream_t s) { matmul_challenge(A, B, C, M, N, K, s); }});
  return kernels;
}

// Whether \p run computes C = A * B on an awkward shape, within float32's error (as the
// grader measures it); \p why says what is wrong when not.
bool computes_the_product(const Gemm& run, cublasHandle_t fp32, std::string& why) {
  const int M = 257, N = 263, K = 259;
  workbook::DeviceBuffer<float> A(std::size_t(M) * K), B(std::size_t(K) * N), C(std::size_t(M) * N),
      R(std::size_t(M) * N);
  workbook::fill_random_device(A.data(), A.size(), 31);
  workbook::fill_random_device(B.data(), B.size(), 32);
  library_gemm(fp32, A.data(), B.data(), R.data(), M, N, K, nullptr);
  workbook::fill_words_device(C.data(), C.size(), workbook::kPoisonBits);
  if (!bench::runs([&] { run(A.data(), B.data(), C.data(), M, N, K, nullptr); }, why)) return false;
  std::vector<float> got(C.size()), want(R.size());
  WORKBOOK_CUDA_CHECK(cudaMemcpy(got.data(), C.data(), C.bytes(), cudaMemcpyDeviceToHost));
  WORKBOOK_CUDA_CHECK(cudaMemcpy(want.data(), R.data(), R.bytes(), cudaMemcpyDeviceToHost));
  if (std::all_of(got.begin(), got.end(), workbook::is_poison)) {
    why = "it wrote nothing";
    return false;
  }
  const auto report =
      workbook::compare_to_reference(got.data(), want.data(), got.size(), workbook::float32_dot_tolerance(K));
  if (!report.ok()) why = "wrong results: " + report.describe();
  return report.ok();
}

}  // namespace

int main(int argc, char** argv) {
  bench::Defaults defaults;
  defaults.sizes.assign(std::begin(declared::kSweepSizes), std::end(declared::kSweepSizes));
  defaults.blocks = {declared::kDefaultNaiveBlock};
  defaults.grid_modes = {"2d"};
  const bench::Options options = bench::parse_options(argc, argv, kLesson, defaults);
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  try {
    for (const int block : options.blocks) {
      if (block % 32 != 0 || block > 1024) {
        std::fprintf(stderr, "%s: --blocks %d: the naive kernel runs 32 x B/32 threads, so B must be a multiple "
                             "of 32 up to 1024\n", argv[0], block);
        return 2;
      }
    }
    Handle fp32(CUBLAS_DEFAULT_MATH), tf32(CUBLAS_TF32_TENSOR_OP_MATH), student(CUBLAS_DEFAULT_MATH);
    // Only what computes the right product is timed; the rest is named and left out.
    std::vector<Kernel> kernels;
    bool checked = false;
    for (const Kernel& k : lesson_kernels(options.blocks, student.h)) {
      if (options.skips(k.operation)) continue;
      bench::announce_check(k.operation);
      checked = true;
      std::string why;
      if (computes_the_product(k.run, fp32.h, why)) {
        kernels.push_back(k);
      } else {
        std::fprintf(stderr, "%s: %s (%s) is not timed: %s\n", argv[0], k.operation.c_str(),
                     options.implementation.c_str(), why.c_str());
      }
    }
    if (checked && kernels.empty()) {
      std::fprintf(stderr, "%s: none of the lesson's functions computes C = A * B (%s), so nothing was timed.\n"
                           "./grade 03 tells what is wrong.\n", argv[0], options.implementation.c_str());
      return bench::kExitIncorrect;
    }
    std::vector<std::pair<std::string, cublasHandle_t>> baselines;  // see the top of this file
    if (options.transfers) {
      for (const auto& baseline : {std::pair{"cublas_fp32", fp32.h}, std::pair{"cublas_tf32", tf32.h}}) {
        if (!options.skips(baseline.first)) baselines.emplace_back(baseline);
      }
    }
    const bench::RunInfo info = bench::run_info();

    std::vector<int> sizes;
    for (const std::size_t n : options.sizes) {
      if (workbook::fit_in_free_memory(n * n, 4) < n * n) {
        std::fprintf(stderr, "%s: N = %zu does not fit in half the free GPU memory; left out\n", argv[0], n);
      } else {
        sizes.push_back(static_cast<int>(n));
      }
    }
    bench::begin_output(sizes.size() * (kernels.size() + baselines.size()), options);

    for (const int n : sizes) {
      const std::size_t elements = std::size_t(n) * n;
      workbook::DeviceBuffer<float> A(elements), B(elements), C(elements);
      workbook::fill_random_device(A.data(), elements, 1);
      workbook::fill_random_device(B.data(), elements, 2);
      const auto measure = [&](const std::string& implementation, const std::string& operation,
                               const std::string& mode, int block, long long grid, const Gemm& run) {
        bench::Row row{kLesson, implementation, operation, static_cast<std::size_t>(n), block, mode, grid};
        row.bytes = declared::least_bytes(n, n, n);
        row.flops = declared::flops(n, n, n);
        bench::announce(row, options);
        row.stats = bench::time_measurement(
            [&](cudaStream_t s) { run(A.data(), B.data(), C.data(), n, n, n, s); }, options);
        bench::emit(row, info);
      };
      for (const Kernel& k : kernels) {
        measure(options.implementation, k.operation, k.grid_mode, k.block, k.grid(n, n), k.run);
      }
      for (const auto& [operation, handle] : baselines) {
        const cublasHandle_t h = handle;
        measure("cuBLAS", operation, "own", 0, 0, [h](const float* A, const float* B, float* C, int M, int N, int K,
                                                      cudaStream_t s) { library_gemm(h, A, B, C, M, N, K, s); });
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
