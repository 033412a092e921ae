// Grader tests for lesson 03 (matrix multiply: naive, shared-memory tiling, cuBLAS, challenge).
//
// Every task is checked on shapes that are not multiples of the tile (1, 17, 33, 127, 1000,
// ...) with fresh seeded inputs, against a float64 product on the host for small shapes and
// the grader's own cuBLAS FP32 product for large ones, with a tolerance that grows with K.
// C is poisoned and guarded as in lesson 01. The tiled and challenge kernels are also run
// again and again on fresh data, because a missing __syncthreads() is a race that shows up
// only now and then (./grade --sanitize 03 runs racecheck, which sees it every time).
// Performance is GFLOP/s at 4096^3 as a fraction of cuBLAS FP32 timed in the same process.
#include "matmul.hpp"

#include "cublas_spy.hpp"
#include "grader.hpp"
#include "output_matcher.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr const char* kExercise = "exercises/03_matmul/matmul.cu";
constexpr int kPerfSize = 4096;

struct Shape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + " x " + std::to_string(N) + " x " + std::to_string(K); }
  double flops() const { return 2.0 * M * N * K; }
};

// The grader's own cuBLAS handle, FP32 math, on the default stream.
cublasHandle_t reference_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    return h;
  }();
  return handle;
}

void reference_gemm(const float* A, const float* B, float* C, const Shape& s, cudaStream_t stream = nullptr) {
  const float alpha = 1.0f, beta = 0.0f;
  cublasSetStream(reference_handle(), stream);
  const cublasStatus_t status = cublasSgemm(reference_handle(), CUBLAS_OP_N, CUBLAS_OP_N, s.N, s.M, s.K, &alpha, B,
                                            s.N, A, s.K, &beta, C, s.N);
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("the grader's cublasSgemm failed");
}

// A, B and C on the device (guarded), from seeded streams, and the expected C.
struct Problem {
  Problem(Shape s, const std::string& name)
      : shape(s),
        A(std::size_t(s.M) * s.K, workbook::kInputGuardBits),
        B(std::size_t(s.K) * s.N, workbook::kInputGuardBits),
        C(std::size_t(s.M) * s.N),
        seed_a(grader::seed_for("A " + name + " " + s.str())),
        seed_b(grader::seed_for("B " + name + " " + s.str())) {
    A.fill_random(seed_a);
    B.fill_random(seed_b);
  }

  // float64 on the host for small products, the grader's cuBLAS FP32 product for large ones.
  const std::vector<float>& expected() {
    if (!expected_.empty()) return expected_;
    const auto [M, N, K] = shape;
    if (double(M) * N * K <= double(1 << 25)) {
      std::vector<double> a(std::size_t(M) * K), b(std::size_t(K) * N), c(std::size_t(M) * N, 0.0);
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = workbook::random_uniform(seed_a, i, -1, 1);
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = workbook::random_uniform(seed_b, i, -1, 1);
      for (int r = 0; r < M; ++r) {
        for (int k = 0; k < K; ++k) {
          const double x = a[std::size_t(r) * K + k];
          for (int col = 0; col < N; ++col) c[std::size_t(r) * N + col] += x * b[std::size_t(k) * N + col];
        }
      }
      expected_.assign(c.begin(), c.end());
    } else {
      workbook::DeviceBuffer<float> reference(C.size());
      reference_gemm(A.data(), B.data(), reference.data(), shape);
      expected_.resize(C.size());
      WORKBOOK_CUDA_CHECK(cudaMemcpy(expected_.data(), reference.data(), reference.bytes(), cudaMemcpyDeviceToHost));
    }
    return expected_;
  }

  Shape shape;
  workbook::GuardedDeviceArray A, B, C;
  std::uint64_t seed_a, seed_b;

 private:
  std::vector<float> expected_;
};

// The shapes every task is checked on: tiny, prime, one past the tile, thin in each
// dimension, two drawn from the run's seed, and (not under the sanitizer) large ones.
std::vector<Shape> correctness_shapes() {
  std::vector<Shape> shapes{{1, 1, 1},    {17, 33, 127}, {33, 127, 17}, {127, 1, 33}, {1, 127, 33},
                            {32, 32, 32}, {33, 33, 33},  {64, 96, 1}};
  const std::uint64_t s = grader::seed_for("shapes");
  const auto draw = [&](int i, int range) { return 1 + int(workbook::mix64(s + i) % range); };
  shapes.push_back({draw(0, 100), draw(1, 100), draw(2, 100)});
  if (grader::sanitize_mode()) return shapes;
  shapes.push_back({127, 127, 127});
  shapes.push_back({1000, 17, 33});
  shapes.push_back({100, 1, 1000});
  shapes.push_back({draw(3, 400), draw(4, 400), draw(5, 400)});
  shapes.push_back({1000, 1000, 1000});
  shapes.push_back({1001, 999, 1003});
  shapes.push_back({257, 2049, 65});
  return shapes;
}

// Wrong elements of C described as a matrix: how many, where, and what that usually means
// (\p tiled: for a kernel that works in tiles, so edge tiles are a suspect of their own).
std::string matrix_errors(const Shape& s, const std::vector<float>& got, const std::vector<float>& want,
                          const workbook::Tolerance& tol, bool tiled) {
  std::size_t wrong = 0, unwritten = 0;
  double worst_relative = 0;  // of the written wrong elements, against |C| + 1
  int r0 = s.M, r1 = -1, c0 = s.N, c1 = -1;
  std::ostringstream first;
  for (int r = 0; r < s.M; ++r) {
    for (int c = 0; c < s.N; ++c) {
      const std::size_t i = std::size_t(r) * s.N + c;
      const bool unset = workbook::is_poison(got[i]);
      const double error = std::abs(double(got[i]) - want[i]);
      if (!unset && error <= tol.abs + tol.rel * std::abs(want[i])) continue;
      if (wrong < 4) {
        first << "\n  C[" << r << "][" << c << "]: expected " << workbook::format_value(want[i]) << ", got "
              << workbook::format_value(got[i], unset);
      }
      ++wrong;
      unwritten += unset;
      if (!unset) worst_relative = std::max(worst_relative, error / (std::abs(want[i]) + 1.0));
      r0 = std::min(r0, r), r1 = std::max(r1, r), c0 = std::min(c0, c), c1 = std::max(c1, c);
    }
  }
  if (wrong == 0) return {};
  std::ostringstream out;
  out << wrong << " of " << std::size_t(s.M) * s.N << " elements of C are wrong (" << unwritten
      << " never written), in rows " << r0 << ".." << r1 << " and columns " << c0 << ".." << c1
      << " (tolerance " << tol.abs << " for K = " << s.K << ")." << first.str() << "\nHint: ";
  const int full_rows = s.M / kTile * kTile, full_cols = s.N / kTile * kTile;
  if (unwritten == wrong) {
    out << "elements never written: does the grid cover all of C, is x the column (0 .. N-1) and y the row "
           "(0 .. M-1), and is the bounds check row < M && col < N (not a return before a __syncthreads())?";
  } else if (unwritten == 0 && worst_relative < 4e-3) {
    out << "every wrong element is close, but further off than float32 rounding allows for this K: is the "
           "arithmetic in lower precision, such as TF32 tensor-core math (CUBLAS_COMPUTE_32F_FAST_TF32, "
           "CUBLAS_TF32_TENSOR_OP_MATH) or half-precision sums?";
  } else if (tiled && (r0 >= full_rows || c0 >= full_cols)) {
    out << "the wrong elements all lie in the partial tiles at the bottom or right edge of C. Every thread "
           "loads its element of the A and B tiles, 0 past the edge of the matrix, even when its own element "
           "of C is outside C: no early return, and every thread reaches every __syncthreads().";
  } else {
    out << "A[r][k] is A[r * K + k], B[k][c] is B[k * N + c] and C[r][c] is C[r * N + c]; the sum runs over "
           "all K products. If the errors move from run to run, two warps race on shared memory: a "
           "__syncthreads() is missing (./grade --sanitize 03 runs racecheck).";
  }
  return out.str();
}

// Waits for the GPU and checks C; \p what names the call that computed it, \p tiled says it
// works in tiles (so wrong edge tiles get their own hint).
void check_product(Problem& p, const std::string& what, bool tiled = false) {
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  const grader::DeviceOutput out = grader::read_back(p.C);
  const workbook::Tolerance tol = workbook::float32_dot_tolerance(p.shape.K);
  const std::string errors = matrix_errors(p.shape, out.values, p.expected(), tol, tiled);
  if (errors.empty() && out.guards.intact()) return;
  std::string guards;
  if (!out.guards.intact()) {
    guards = "\n" + out.guards.describe(out.values.size()) +
             ".\nHint: a thread with row >= M or col >= N wrote to C: check both before the store.";
  }
  FAIL(what << " computed a wrong C = A * B with M x N x K = " << p.shape.str() << ".\n" << errors << guards);
}

// True when \p run wrote no element of C on a small awkward shape: the untouched skeleton.
template <class Run>
bool writes_nothing(Run run) {
  Problem p({17, 33, 127}, "probe");
  run(p);
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  const auto out = grader::read_back(p.C);
  return out.guards.intact() &&
         std::all_of(out.values.begin(), out.values.end(), [](float x) { return workbook::is_poison(x); });
}

dim3 grid_for(dim3 block, const Shape& s) {
  return dim3((s.N + block.x - 1) / block.x, (s.M + block.y - 1) / block.y);
}

void launch_naive(Problem& p, dim3 block, cudaStream_t stream = nullptr) {
  const auto [M, N, K] = p.shape;
  matmul_naive<<<grid_for(block, p.shape), block, 0, stream>>>(p.A.data(), p.B.data(), p.C.data(), M, N, K);
  WORKBOOK_CHECK_LAUNCH();
}

void launch_tiled(Problem& p, cudaStream_t stream = nullptr, int extra_blocks = 0) {
  const auto [M, N, K] = p.shape;
  dim3 grid = grid_for(dim3(kTile, kTile), p.shape);
  grid.x += extra_blocks, grid.y += extra_blocks;
  matmul_tiled<<<grid, dim3(kTile, kTile), 0, stream>>>(p.A.data(), p.B.data(), p.C.data(), M, N, K);
  WORKBOOK_CHECK_LAUNCH();
}

// The same product again and again, on fresh inputs each time: a race on shared memory (a
// missing __syncthreads()) corrupts a few elements in some runs and not in others.
template <class Run>
void check_fresh_runs(const std::string& what, Run run) {
  if (grader::sanitize_mode()) return;  // racecheck does this job there, on the small shapes
  for (const Shape s : {Shape{1024, 1024, 1024}, Shape{2048, 1536, 1056}}) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      Problem p(s, what + " fresh run " + std::to_string(attempt));
      CAPTURE(s.str(), attempt);
      run(p);
      check_product(p, what + " (run " + std::to_string(attempt + 1) + " of 4 on fresh data)", true);
    }
  }
}

// Times \p launch on the default stream: one probe launch, then warm-up and samples unless
// it is pathologically slow.
template <class Launch>
workbook::TimingStats time_launch(Launch launch) {
  workbook::TimingOptions options;
  options.warmup = 0;
  options.samples = 1;
  workbook::TimingStats stats = workbook::time_on_device(launch, options);
  if (stats.median_ms < 500.0) {
    options.warmup = 2;
    options.samples = 10;
    stats = workbook::time_on_device(launch, options);
  }
  return stats;
}

// Records GFLOP/s of \p stats on \p p's shape and its ratio to cuBLAS FP32 on the same inputs.
void record_rate(Problem& p, const workbook::TimingStats& stats) {
  workbook::DeviceBuffer<float> scratch(p.C.size());
  const auto cublas = time_launch([&](cudaStream_t s) {
    reference_gemm(p.A.data(), p.B.data(), scratch.data(), p.shape, s);
  });
  const double gflops = p.shape.flops() / (stats.median_ms * 1e6);
  const double cublas_gflops = p.shape.flops() / (cublas.median_ms * 1e6);
  grader::record_metric("n", p.shape.M);
  grader::record_metric("median_ms", stats.median_ms);
  grader::record_metric("gflops", gflops);
  grader::record_metric("cublas_gflops", cublas_gflops);
  grader::record_metric("fraction_of_cublas", gflops / cublas_gflops);
}

// The cuBLAS functions called during \p run, as "cublasCreate, cublasSgemm".
template <class Run>
std::string cublas_calls_during(Run run) {
  grader::reset_cublas_calls();
  run();
  std::string names;
  for (const auto& name : grader::cublas_calls()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// Captures what \p run launches on \p stream into a CUDA graph; returns the number of nodes
// (-1 when the capture failed) and replays the graph, so its output can be checked.
template <class Run>
int launches_captured_on(cudaStream_t stream, Run run, std::string& error) {
  WORKBOOK_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  try {
    run();
  } catch (const std::exception& e) {
    error = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  (void)cudaGetLastError();
  if (end != cudaSuccess || graph == nullptr) {
    error += std::string(" (stream capture failed: ") + cudaGetErrorName(end) + ")";
    return -1;
  }
  std::size_t nodes = 0;
  WORKBOOK_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (nodes > 0) {
    cudaGraphExec_t exec = nullptr;
    WORKBOOK_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    WORKBOOK_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(stream));
    WORKBOOK_CUDA_CHECK(cudaGraphExecDestroy(exec));
  }
  WORKBOOK_CUDA_CHECK(cudaGraphDestroy(graph));
  return static_cast<int>(nodes);
}

// A cuBLAS handle for the student's code, destroyed at the end of the test.
struct StudentHandle {
  StudentHandle() {
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
  }
  ~StudentHandle() { cublasDestroy(handle); }
  StudentHandle(const StudentHandle&) = delete;
  StudentHandle& operator=(const StudentHandle&) = delete;
  cublasHandle_t handle = nullptr;
};

}  // namespace

TEST_CASE("Task 1: matmul_naive is correct for every shape and block shape", "[task_1]") {
  grader::require_gpu();
  if (writes_nothing([](Problem& p) { launch_naive(p, dim3(16, 16)); })) {
    grader::not_implemented(std::string("matmul_naive wrote no element of C (TODO(task 1) in ") + kExercise + ")");
  }
  std::vector<dim3> blocks{dim3(32, 8), dim3(16, 16)};
  if (!grader::sanitize_mode()) blocks.insert(blocks.end(), {dim3(32, 32), dim3(64, 2), dim3(8, 4)});
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 1");
    for (const dim3 block : blocks) {
      CAPTURE(s.str(), block.x, block.y);
      p.C.poison();
      launch_naive(p, block);
      check_product(p, "matmul_naive with blocks of " + std::to_string(block.x) + " x " + std::to_string(block.y));
    }
  }
}

TEST_CASE("Task 1: matmul_naive GFLOP/s at 4096^3", "[task_1][perf]") {
  grader::require_gpu();
  Problem p({kPerfSize, kPerfSize, kPerfSize}, "task 1 perf");
  launch_naive(p, dim3(32, 8));
  check_product(p, "matmul_naive");
  workbook::TimingStats best;
  for (const dim3 block : {dim3(32, 8), dim3(16, 16), dim3(32, 32)}) {
    const auto stats = time_launch([&](cudaStream_t s) { launch_naive(p, block, s); });
    if (best.samples == 0 || stats.median_ms < best.median_ms) best = stats;
  }
  record_rate(p, best);
}

TEST_CASE("Task 2: matmul_tiled is correct for every shape, tile multiple or not", "[task_2]") {
  grader::require_gpu();
  if (writes_nothing([](Problem& p) { launch_tiled(p); })) {
    grader::not_implemented(std::string("matmul_tiled wrote no element of C (TODO(task 2) in ") + kExercise + ")");
  }
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 2");
    CAPTURE(s.str());
    launch_tiled(p);
    check_product(p, "matmul_tiled", true);
  }
  SECTION("blocks entirely outside C write nothing") {
    Problem p({33, 65, 40}, "task 2 extra blocks");
    launch_tiled(p, nullptr, 2);
    check_product(p, "matmul_tiled with 2 more blocks than needed in x and y", true);
  }
}

TEST_CASE("Task 2: matmul_tiled gives the right C run after run on fresh data", "[task_2]") {
  grader::require_gpu();
  check_fresh_runs("matmul_tiled", [](Problem& p) { launch_tiled(p); });
}

TEST_CASE("Task 2: matmul_tiled GFLOP/s at 4096^3", "[task_2][perf]") {
  grader::require_gpu();
  Problem p({kPerfSize, kPerfSize, kPerfSize}, "task 2 perf");
  launch_tiled(p);
  check_product(p, "matmul_tiled", true);
  record_rate(p, time_launch([&](cudaStream_t s) { launch_tiled(p, s); }));
}

TEST_CASE("Task 3: matmul_cublas is correct in FP32 for every shape", "[task_3]") {
  grader::require_gpu();
  StudentHandle h;
  if (writes_nothing([&](Problem& p) { matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), 17, 33, 127); })) {
    grader::not_implemented(std::string("matmul_cublas wrote no element of C (TODO(task 3) in ") + kExercise + ")");
  }
  cublasMath_t mode_before = CUBLAS_DEFAULT_MATH, mode_after = CUBLAS_DEFAULT_MATH;
  cublasGetMathMode(h.handle, &mode_before);
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 3");
    CAPTURE(s.str());
    grader::reset_cublas_calls();
    matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), s.M, s.N, s.K);
    if (grader::cublas_gemm_calls() == 0) {
      FAIL("matmul_cublas computed C without calling a cuBLAS GEMM function: task 3 asks for the library "
           "(cublasSgemm). Your own kernels are tasks 1, 2 and 4.");
    }
    check_product(p, "matmul_cublas");
  }
  cublasGetMathMode(h.handle, &mode_after);
  if (mode_after != mode_before) {
    FAIL("matmul_cublas changed the handle's math mode from " << int(mode_before) << " to " << int(mode_after)
         << ".\nHint: task 3 asks for FP32 math on the handle as it is given; TF32 tensor-core math "
            "(CUBLAS_TF32_TENSOR_OP_MATH) is faster and less accurate, which the lesson measures separately.");
  }
}

TEST_CASE("Task 3: matmul_cublas uses the handle's stream and reports cuBLAS errors", "[task_3]") {
  grader::require_gpu();
  StudentHandle h;
  Problem p({96, 80, 72}, "task 3 stream");
  matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), 96, 80, 72);  // cuBLAS sets itself up outside capture
  check_product(p, "matmul_cublas");
  SECTION("the handle's stream") {
    workbook::Stream stream(cudaStreamNonBlocking);
    cublasSetStream(h.handle, stream.get());
    p.C.poison();
    std::string error;
    const int nodes = launches_captured_on(stream.get(), [&] {
      matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), 96, 80, 72);
    }, error);
    WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
    cudaStream_t after = nullptr;
    cublasGetStream(h.handle, &after);
    if (nodes < 1 || after != stream.get() || !error.empty()) {
      FAIL("matmul_cublas did not run on the stream set on its handle: captured launches " << nodes
           << (after != stream.get() ? ", and the handle's stream was changed" : "") << error
           << ".\nHint: cuBLAS runs on the handle's stream; do not call cublasSetStream, cublasCreate or "
              "cudaDeviceSynchronize inside matmul_cublas.");
    }
    check_product(p, "matmul_cublas on a stream");
  }
  SECTION("an impossible call throws") {
    bool threw = false;
    try {
      matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), -1, 80, 72);
    } catch (const std::exception&) {
      threw = true;
    }
    (void)cudaGetLastError();
    if (!threw) {
      FAIL("matmul_cublas(M = -1) returned as if it had worked, but cublasSgemm rejects it with "
           "CUBLAS_STATUS_INVALID_VALUE.\nHint: compare the status cublasSgemm returns with CUBLAS_STATUS_SUCCESS "
           "and throw (std::runtime_error, with cublasGetStatusString(status) in the message) when it differs.");
    }
  }
}

TEST_CASE("Task 3: matmul_cublas GFLOP/s at 4096^3", "[task_3][perf]") {
  grader::require_gpu();
  StudentHandle h;
  Problem p({kPerfSize, kPerfSize, kPerfSize}, "task 3 perf");
  const auto run = [&](cudaStream_t s) {
    cublasSetStream(h.handle, s);
    matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), kPerfSize, kPerfSize, kPerfSize);
  };
  run(nullptr);
  check_product(p, "matmul_cublas");
  record_rate(p, time_launch(run));
}

TEST_CASE("Task 4: matmul_challenge is a correct hand-written kernel for every shape", "[task_4]") {
  grader::require_gpu();
  const auto challenge = [](Problem& p, cudaStream_t stream = nullptr) {
    matmul_challenge(p.A.data(), p.B.data(), p.C.data(), p.shape.M, p.shape.N, p.shape.K, stream);
  };
  std::string calls;
  bool empty = false;
  calls = cublas_calls_during([&] { empty = writes_nothing([&](Problem& p) { challenge(p); }); });
  if (empty && calls.empty()) {
    grader::not_implemented(std::string("matmul_challenge wrote no element of C (TODO(task 4) in ") + kExercise +
                            "); it is optional");
  }
  if (!calls.empty()) {
    FAIL("matmul_challenge called cuBLAS (" << calls << "): task 4 asks for a hand-written kernel, so it scores "
         "nothing. cuBLAS belongs in task 3.");
  }
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 4");
    CAPTURE(s.str());
    challenge(p);
    check_product(p, "matmul_challenge", true);
  }
  SECTION("pointers that are not 16-byte aligned") {
    // Sub-matrices one float into their allocations: float4 loads from them would fault.
    const Shape s{67, 132, 36};
    Problem p(s, "task 4 unaligned");
    workbook::DeviceBuffer<float> a(p.A.size() + 1), b(p.B.size() + 1), c(p.C.size() + 1);
    WORKBOOK_CUDA_CHECK(cudaMemcpy(a.data() + 1, p.A.data(), p.A.size() * sizeof(float), cudaMemcpyDeviceToDevice));
    WORKBOOK_CUDA_CHECK(cudaMemcpy(b.data() + 1, p.B.data(), p.B.size() * sizeof(float), cudaMemcpyDeviceToDevice));
    matmul_challenge(a.data() + 1, b.data() + 1, c.data() + 1, s.M, s.N, s.K);
    WORKBOOK_CUDA_CHECK(cudaMemcpy(p.C.data(), c.data() + 1, p.C.size() * sizeof(float), cudaMemcpyDeviceToDevice));
    check_product(p, "matmul_challenge on pointers offset by one float", true);
  }
  SECTION("it launches on the stream it is given") {
    Problem p({130, 260, 100}, "task 4 stream");
    workbook::Stream stream(cudaStreamNonBlocking);
    std::string error;
    const int nodes = launches_captured_on(stream.get(), [&] { challenge(p, stream.get()); }, error);
    WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
    if (nodes < 1 || !error.empty()) {
      FAIL("matmul_challenge(..., stream) launched nothing on that stream (captured launches: "
           << nodes << ")" << error << ".\nHint: kernel<<<grid, block, 0, stream>>>(...), and no synchronization "
           "inside matmul_challenge.");
    }
    check_product(p, "matmul_challenge on a stream", true);
  }
  check_fresh_runs("matmul_challenge", [&](Problem& p) { challenge(p); });
}

TEST_CASE("Task 4: matmul_challenge GFLOP/s at 4096^3", "[task_4][perf]") {
  grader::require_gpu();
  Problem p({kPerfSize, kPerfSize, kPerfSize}, "task 4 perf");
  const auto run = [&](cudaStream_t s) {
    matmul_challenge(p.A.data(), p.B.data(), p.C.data(), kPerfSize, kPerfSize, kPerfSize, s);
  };
  const std::string calls = cublas_calls_during([&] { run(nullptr); });
  if (!calls.empty()) FAIL("matmul_challenge called cuBLAS (" << calls << "): not timed.");
  check_product(p, "matmul_challenge", true);
  record_rate(p, time_launch(run));
}
