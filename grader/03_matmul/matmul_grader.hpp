// Lesson 03's grader: what its tests (task1_*_test.cu .. task4_*_test.cu) share: the shapes, the
// problem and its expected C, the check of a product with its diagnoses (defined in
// matmul_grader.cu), the "wrote nothing" probe, the timing against cuBLAS, and what the cuBLAS spy
// and a stream capture saw of a call.
//
// Every task is checked on shapes that are not multiples of the tile (1, 17, 33, 127, 1000,
// ...) with fresh seeded inputs, against a float64 product on the host for small shapes and
// the grader's own cuBLAS FP32 product for large ones, with a tolerance that grows with K.
// C is poisoned and guarded as in lesson 01. The tiled and challenge kernels are also run
// again and again on fresh data, because a missing __syncthreads() is a race that shows up
// only now and then (./grade --sanitize 03 runs racecheck, which sees it every time).
// Performance is GFLOP/s at 4096^3 as a fraction of cuBLAS FP32 timed in the same process.
// Tasks 1 and 2 also time a naive product of the grader's own: their thresholds are multiples
// of its fraction of cuBLAS on the GPU at hand (grader/README.md, "Thresholds on the students'
// GPUs"), because that fraction differs several-fold between GPUs.
#pragma once

#include "benchmark.hpp"
#include "matmul.hpp"

#include "cublas_spy.hpp"
#include "diagnosis.hpp"
#include "grader.hpp"
#include "output_matcher.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace matmul_grader {

// ---- shapes, the problem and its expected C ------------------------------------------------

constexpr int kPerfSize = matmul_benchmark::kGradedN;  // lesson 03's benchmark (benchmark.hpp)

struct Shape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + " x " + std::to_string(N) + " x " + std::to_string(K); }
  double flops() const { return matmul_benchmark::flops(M, N, K); }
};

// The grader's own cuBLAS FP32 product C = A * B (row major) of shape \p s, on \p stream.
void reference_gemm(const float* A, const float* B, float* C, const Shape& s, cudaStream_t stream = nullptr);

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
std::vector<Shape> correctness_shapes();

// ---- checking a product --------------------------------------------------------------------

// Computes C = A * B for a Problem with the function under test, on the default stream.
using Run = std::function<void(Problem&)>;

// What the grader knows about how C was computed, for the diagnosis.
struct Evidence {
  Run run;              // recomputes C on any problem (empty: judge the shape in hand only)
  bool tiled = false;   // works in kTile x kTile tiles of C, so edge tiles are a suspect of their own
  dim3 block{0, 0, 0};  // the grader's own launch with a grid rounded up to whole blocks; x == 0: unknown
};

// Waits for the GPU and checks C; \p what names the call that computed it, \p evidence says
// how it was computed (for the diagnosis).
void check_product(Problem& p, const std::string& what, const Evidence& evidence = {});

// True when \p run wrote no element of C on a small awkward shape: the untouched skeleton.
template <class Run>
bool writes_nothing(Run run) {
  Problem p({17, 33, 127}, "probe");
  run(p);
  grader::synchronize("the first call, 17 x 33 x 127");
  const auto out = grader::read_back(p.C);
  return out.guards.intact() &&
         std::all_of(out.values.begin(), out.values.end(), [](float x) { return workbook::is_poison(x); });
}

// Runs \p run once on 17 x 33 x 127 (\p what names the call), traced: a C nobody wrote ends the
// test as "wrote nothing", which the driver calls "not implemented yet" only when the task's code
// is still the skeleton.
template <class Run>
void require_writes(const std::string& what, Run run) {
  bool empty = false;
  const auto trace = grader::trace([&] { empty = writes_nothing(run); });
  if (empty) grader::wrote_nothing(what + " ran and wrote nothing: " + grader::untouched_output("C", 17 * 33), trace);
}

// The grid of whole blocks of \p block that covers C for shape \p s (x along the columns).
dim3 grid_for(dim3 block, const Shape& s);

// The same product again and again, on fresh inputs each time: a race on shared memory (a
// missing __syncthreads()) corrupts a few elements in some runs and not in others.
void check_fresh_runs(const std::string& what, const Evidence& evidence);

// ---- timing --------------------------------------------------------------------------------

// Times \p launch as lesson 03's benchmark declares (benchmark.hpp). \p profiled: the student's
// call, the one a profiling run profiles (grader/driver/counters.py); never a yardstick.
template <class Launch>
workbook::TimingStats time_launch(Launch launch, bool profiled = true) {
  workbook::MeasureOptions options = matmul_benchmark::graded_timing();
  options.profiled = profiled;
  return workbook::measure(launch, options);
}

// The best median of \p launch(block, stream) over the block shapes task 1 is timed with; with
// \p profiled (the student's kernel), the best block is the call a profiling run profiles.
template <class Launch>
workbook::TimingStats time_naive_blocks(Launch launch, bool profiled = true) {
  workbook::TimingStats best;
  dim3 best_block;
  for (const dim3 block : matmul_benchmark::kGradedNaiveBlocks) {
    const auto stats = time_launch([&](cudaStream_t s) { launch(block, s); }, false);
    if (best.samples == 0 || stats.median_ms < best.median_ms) best = stats, best_block = block;
  }
  if (profiled) workbook::run_profiled([&](cudaStream_t s) { launch(best_block, s); });
  return best;
}

// Whether record_rate also takes the yardstick of tasks 1 and 2.
enum class Yardstick { none, naive };

// Records GFLOP/s of \p stats on \p p's shape and its ratio to cuBLAS FP32 on the same inputs.
// With Yardstick::naive, also the ratio matmul_grader::naive_at_b reaches on the same shape
// (grader_naive_fraction_of_cublas), which the manifest scales the threshold by: how far a
// kernel bound by load issue rather than arithmetic gets against cuBLAS on this GPU. Both
// yardsticks are the reference's figures when ./grade gives them (grader::yardstick), else timed
// here.
void record_rate(Problem& p, const workbook::TimingStats& stats, Yardstick yardstick = Yardstick::none);

// ---- the cuBLAS spy and the stream ---------------------------------------------------------

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

}  // namespace matmul_grader
