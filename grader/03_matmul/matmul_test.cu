// Grader tests for lesson 03 (matrix multiply: naive, shared-memory tiling, cuBLAS, challenge).
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
#include "matmul.hpp"

#include "contract.hpp"
#include "cublas_spy.hpp"
#include "diagnosis.hpp"
#include "grader.hpp"
#include "output_matcher.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using grader::HintId;

// The yardstick for the thresholds of tasks 1 and 2: C = A^T * B with A^T given (K x M, row
// major), one thread per element of C, x along the columns. Per multiply-add it issues what the
// lesson's naive kernel issues, a load every thread of a warp shares and a coalesced one, and it
// moves as many bytes from L2 per block, so it runs about as fast; yet it is not the answer to
// any task (a release ships the grader's sources: tools/make_release.py). A kernel in a named namespace: nvcc's stubs for kernels
// in an anonymous namespace clash with Catch2's.
namespace matmul_grader {

__global__ void naive_at_b(const float* At, const float* B, float* C, int M, int N, int K) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < M && c < N) {
    float dot = 0.0f;
    for (int k = 0; k < K; ++k) dot += At[k * M + r] * B[k * N + c];
    C[r * N + c] = dot;
  }
}

}  // namespace matmul_grader

namespace {

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

// Computes C = A * B for a Problem with the function under test, on the default stream.
using Run = std::function<void(Problem&)>;

// What the grader knows about how C was computed, for the diagnosis.
struct Evidence {
  Run run;              // recomputes C on any problem (empty: judge the shape in hand only)
  bool tiled = false;   // works in kTile x kTile tiles of C, so edge tiles are a suspect of their own
  dim3 block{0, 0, 0};  // the grader's own launch with a grid rounded up to whole blocks; x == 0: unknown
};

// The wrong elements of C, as a matrix.
struct MatrixErrors {
  std::size_t wrong = 0, unwritten = 0, nonfinite = 0;
  double worst_relative = 0;             // of the written, finite wrong elements, against |C| + 1
  int r0 = 0, r1 = -1, c0 = 0, c1 = -1;  // the rows and columns they span
  bool all_in_edge_tiles = true;         // every one lies in the last, partial tile row or column
  std::string first;                     // the first few, as "C[r][c]: expected E, got G" lines
};

bool close_enough(double got, double want, const workbook::Tolerance& tol) {
  return std::isfinite(got) && std::abs(got - want) <= tol.abs + tol.rel * std::abs(want);
}

MatrixErrors compare_matrix(const Shape& s, const std::vector<float>& got, const std::vector<float>& want,
                            const workbook::Tolerance& tol) {
  MatrixErrors e;
  e.r0 = s.M, e.c0 = s.N;
  const int full_rows = s.M / kTile * kTile, full_cols = s.N / kTile * kTile;
  std::ostringstream first;
  for (int r = 0; r < s.M; ++r) {
    for (int c = 0; c < s.N; ++c) {
      const std::size_t i = std::size_t(r) * s.N + c;
      const bool unset = workbook::is_poison(got[i]);
      if (!unset && close_enough(got[i], want[i], tol)) continue;
      if (e.wrong < 4) {
        first << "\n  C[" << r << "][" << c << "]: expected " << workbook::format_value(want[i]) << ", got "
              << workbook::format_value(got[i], unset);
      }
      ++e.wrong;
      e.unwritten += unset;
      if (!unset && !std::isfinite(got[i])) ++e.nonfinite;  // NaN is never "close", whatever its size
      if (!unset && std::isfinite(got[i])) {
        e.worst_relative = std::max(e.worst_relative, std::abs(double(got[i]) - want[i]) / (std::abs(want[i]) + 1.0));
      }
      if (r < full_rows && c < full_cols) e.all_in_edge_tiles = false;
      e.r0 = std::min(e.r0, r), e.r1 = std::max(e.r1, r), e.c0 = std::min(e.c0, c), e.c1 = std::max(e.c1, c);
    }
  }
  e.first = first.str();
  return e;
}

// True when \p got is C stored column-major (C[r][c] at got[c * M + r]): cuBLAS's layout.
bool holds_transpose(const Shape& s, const std::vector<float>& got, const std::vector<float>& want,
                     const workbook::Tolerance& tol) {
  if (s.M == 1 || s.N == 1) return false;  // a vector reads the same either way
  for (int r = 0; r < s.M; ++r) {
    for (int c = 0; c < s.N; ++c) {
      if (!close_enough(got[std::size_t(c) * s.M + r], want[std::size_t(r) * s.N + c], tol)) return false;
    }
  }
  return true;
}

// A shape with two full tiles and a partial one in each direction of C, and a partial K tile.
const Shape kEdgeProbe{2 * kTile + 16, 2 * kTile + 8, kTile + 8};

// Call only when only_edge_tiles_wrong() said so, with the words it gave.
std::string edge_tile_hint(const std::string& where) {
  return grader::hint(HintId::edge_tiles, where + " the wrong elements all lie in the partial tiles at the bottom "
                                                  "or right edge of C, and the full tiles are right. Every thread "
                                                  "loads its element of the A and B tiles, 0 past the edge of the "
                                                  "matrix, even when its own element of C is outside C: no early "
                                                  "return, and every thread reaches every __syncthreads().");
}

// True when \p evidence.run's output on \p s with \p got shows wrong elements only in the
// partial tiles at the bottom and right edge of C; shapes without a full tile are judged on a
// probe shape that has both. \p where receives the words that introduce the claim.
bool only_edge_tiles_wrong(const Shape& s, const MatrixErrors& e, const Evidence& evidence, std::string& where) {
  if (!evidence.tiled) return false;
  if (s.M >= kTile && s.N >= kTile) {
    where = "At this shape";
    return e.all_in_edge_tiles;
  }
  if (!evidence.run) return false;
  Problem probe(kEdgeProbe, "edge probe");
  evidence.run(probe);
  grader::synchronize("the edge-tile probe " + kEdgeProbe.str());
  const MatrixErrors pe =
      compare_matrix(kEdgeProbe, probe.C.download(), probe.expected(), workbook::float32_dot_tolerance(kEdgeProbe.K));
  where = "This shape has no full tile, so the grader also ran " + kEdgeProbe.str() + ", where";
  return pe.wrong > 0 && pe.all_in_edge_tiles;
}

// How many elements differ when \p evidence.run computes the same product again (up to three
// times, stopping at the first difference), with every SM's shared memory filled with a new value
// before each run. Results that change from run to run are a fact, not a cause: threads that race
// do that, and so does a read of memory nobody wrote. Either can also repeat itself exactly; then
// this proves nothing. Differences within \p tol are rounding (atomics add in any order) and do
// not count.
std::size_t differences_between_runs(Problem& p, const std::vector<float>& got, const Evidence& evidence,
                                     const workbook::Tolerance& tol) {
  std::size_t differ = 0;
  for (int again = 0; again < 3 && differ == 0 && evidence.run; ++again) {
    p.C.poison();
    grader::fill_shared_memory(0.5f * float(again + 1));
    evidence.run(p);
    grader::synchronize("the same product again, to compare two runs");
    const std::vector<float> other = p.C.download();
    for (std::size_t i = 0; i < got.size(); ++i) {
      differ += std::memcmp(&got[i], &other[i], sizeof(float)) != 0 && !close_enough(got[i], other[i], tol);
    }
  }
  return differ;
}

// True when \p evidence.run, given C set to 0 instead of the grader's NaN, leaves no element
// NaN or infinite: the NaN came from C itself, which the kernel read before writing.
bool reads_c_before_writing(Problem& p, const Evidence& evidence) {
  if (!evidence.run) return false;
  workbook::fill_words_device(p.C.data(), p.C.size(), 0u);
  evidence.run(p);
  grader::synchronize("the same product with C set to 0 first");
  const std::vector<float> zeroed = p.C.download();
  return std::all_of(zeroed.begin(), zeroed.end(), [](float x) { return std::isfinite(x); });
}

// Wrong elements of C described as a matrix: how many, where, and a hint only where the
// evidence shows the cause, the most specific evidence first. May run \p evidence.run again
// (the same inputs, or a probe shape).
std::string matrix_errors(Problem& p, const std::vector<float>& got, const workbook::Tolerance& tol,
                          const Evidence& evidence) {
  const Shape& s = p.shape;
  const std::vector<float>& want = p.expected();
  const MatrixErrors e = compare_matrix(s, got, want, tol);
  if (e.wrong == 0) return {};
  std::ostringstream out;
  out << e.wrong << " of " << std::size_t(s.M) * s.N << " elements of C are wrong (" << e.unwritten
      << " never written";
  if (e.nonfinite > 0) out << ", " << e.nonfinite << " NaN or infinite";
  out << "), in rows " << e.r0 << ".." << e.r1 << " and columns " << e.c0 << ".." << e.c1 << " (tolerance "
      << tol.abs << " for K = " << s.K << ")." << e.first << "\n";

  // Each hint below is printed only when its evidence holds, checked in this order; the checks
  // before it did not fire.
  std::string where;
  // Evidence: matmul_tiled only; every wrong element in a partial edge tile, the full tiles right
  // (at this shape, or on a probe shape when this one has no full tile).
  if (only_edge_tiles_wrong(s, e, evidence, where)) {
    out << edge_tile_hint(where);
    return out.str();
  }
  // The same call, rerun on the same inputs from C poisoned again, gave elements that differ from
  // the first run by more than the tolerance. A fact, labelled for the driver, not a cause: a race
  // does that, and so does a read of memory nobody wrote. The driver runs racecheck on the task
  // and names a race only when racecheck reports one (grader/driver/races.py).
  if (const std::size_t differ = differences_between_runs(p, got, evidence, tol); differ > 0) {
    out << grader::results_differ("the same inputs gave different results in two runs (" + std::to_string(differ) +
                                  " elements differ between them).");
    return out.str();
  }
  // Evidence: NaN or infinity in C, and none when the same call starts from C = 0.
  if (e.nonfinite > 0 && reads_c_before_writing(p, evidence)) {
    out << grader::hint(HintId::reads_output, "with C set to 0 before the call instead of the grader's NaN, no "
                                              "element comes out NaN: the kernel reads C before writing it (C[i] += "
                                              "..., or C as the running sum). Sum in a register and store once: "
                                              "C[row * N + col] = sum.");
    return out.str();
  }
  // Without a call to repeat, neither rerun above was made (the NaN may follow C's own NaN, or
  // change from run to run): the facts only.
  if (e.nonfinite > 0 && !evidence.run) {
    out << e.nonfinite << " elements are NaN or infinite, though A and B hold only numbers between -1 and 1. The "
        << "grader cannot repeat this call, so it cannot tell whether they come from C's own NaN (read before it "
        << "is written) or from memory outside A and B.";
    return out.str();
  }
  // Evidence: NaN or infinity in C from inputs in [-1, 1]; reruns on the same inputs gave the same
  // C, and the same call started from C = 0 still gives some (reads_c_before_writing() said no).
  if (e.nonfinite > 0) {
    out << grader::hint(HintId::nan_outside_inputs,
                        std::to_string(e.nonfinite) + " elements are NaN or infinite, yet A and B hold only numbers "
                        "between -1 and 1: each came from reading memory that is not an element of A or B, past the "
                        "end of A or B (the grader surrounds them with NaN) or shared memory that was never loaded. "
                        "Check the bounds of every load: rows 0 .. M-1, columns 0 .. N-1, k 0 .. K-1.");
    return out.str();
  }
  if (e.unwritten == e.wrong) {
    // Evidence: every wrong element unwritten, and the grader's own launch had a thread for each.
    if (evidence.block.x > 0) {
      out << grader::hint(HintId::matrix_unwritten,
                          "the launch had a thread for every element of C, yet these were never written: the row "
                          "and column the threads compute do not reach them. Is x the column (0 .. N-1) and y the "
                          "row (0 .. M-1), and does the check row < M && col < N guard only the store?");
    } else {
      out << "The wrong elements were never written.";
    }
    return out.str();
  }
  if (holds_transpose(s, got, want, tol)) {  // evidence: C[r][c] at C[c * M + r], every element
    out << grader::hint(HintId::transposed_result,
                        "C holds the right values in transposed places: C[r][c] is at C[c * M + r], column-major, "
                        "as cuBLAS writes a matrix. Row-major C = A * B is, to cuBLAS, column-major C^T = B^T * A^T: "
                        "pass B first, then A, with m = N, n = M and leading dimensions N, K and N.");
    return out.str();
  }
  // Evidence: every wrong element written, finite and within 4e-3 of the exact value (relative to
  // |C| + 1), yet outside float32's tolerance; reruns on the same inputs gave the same C (so a call
  // the grader cannot repeat gets the facts only).
  if (e.unwritten == 0 && e.worst_relative < 4e-3 && !evidence.run) {
    out << "Every wrong element is close to the exact value (within 4e-3 of |C| + 1), yet further off than "
           "float32 rounding allows for this K. The grader cannot repeat this call to see whether C changes from "
           "run to run.";
    return out.str();
  }
  if (e.unwritten == 0 && e.worst_relative < 4e-3) {
    out << grader::hint(HintId::low_precision,
                        "every wrong element is close, but further off than float32 rounding allows for this K: is "
                        "the arithmetic in lower precision, such as TF32 tensor-core math "
                        "(CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_TF32_TENSOR_OP_MATH) or half-precision sums?");
    return out.str();
  }
  out << "A[r][k] is A[r * K + k], B[k][c] is B[k * N + c] and C[r][c] is C[r * N + c]; the sum runs over all K "
         "products.";
  return out.str();
}

// The stores of a naive kernel without its bounds check, C[row * N + col] by every thread of the
// grid rounded up to whole blocks of \p block, that threads with row >= M or col >= N make. Returns
// the indices they reach past the end of C, as offsets from its end, up to \p guard of them (the
// ones the guard region shows), in increasing order; \p inside receives, per element of C,
// whether such a thread also stores to it (with the wrong value, racing the right one).
std::vector<std::size_t> extra_threads_stores(const Shape& s, dim3 block, std::size_t guard,
                                              std::vector<char>& inside) {
  const long long M = s.M, N = s.N, size = M * N;
  const long long rows = (M + block.y - 1) / block.y * block.y, cols = (N + block.x - 1) / block.x * block.x;
  std::vector<char> past(guard, 0);
  inside.assign(static_cast<std::size_t>(size), 0);
  for (long long row = 0; row < rows; ++row) {
    // In rows inside C only the columns past N store out of bounds; below C every column does.
    for (long long col = row < M ? N : 0; col < cols; ++col) {
      const long long i = row * N + col;
      if (i < size) {
        inside[static_cast<std::size_t>(i)] = 1;
      } else if (i - size < static_cast<long long>(guard)) {
        past[static_cast<std::size_t>(i - size)] = 1;
      } else if (row >= M) {
        break;  // the rest of this row lies further out still
      }
    }
  }
  std::vector<std::size_t> offsets;
  for (std::size_t k = 0; k < guard; ++k) {
    if (past[k]) offsets.push_back(k);
  }
  return offsets;
}

// Elements written past the end of C: were they written by the launch's extra threads (row >= M
// or col >= N, there because the grid is rounded up to whole blocks) storing without a bounds
// check? \p got and \p tol tell which elements inside C are wrong.
std::string guard_errors(const Shape& s, const workbook::GuardReport& guards, const std::vector<float>& got,
                         const std::vector<float>& want, const workbook::Tolerance& tol, const Evidence& evidence) {
  const std::string facts = guards.describe(got.size()) + ".\n";
  if (evidence.block.x == 0) return facts + "Something wrote outside C.";
  const bool extra_threads_exist = (s.M + evidence.block.y - 1) / evidence.block.y * evidence.block.y > s.M ||
                                   (s.N + evidence.block.x - 1) / evidence.block.x * evidence.block.x > s.N;
  std::vector<char> reached_inside;
  const std::vector<std::size_t> predicted =
      extra_threads_stores(s, evidence.block, guards.guard_elements, reached_inside);
  // Every wrong element inside C is one an extra thread also stores to: the right value raced with
  // a wrong one. A wrong element no extra thread reaches has another cause.
  bool wrong_only_where_reached = true;
  for (std::size_t i = 0; i < got.size() && wrong_only_where_reached; ++i) {
    const bool right = !workbook::is_poison(got[i]) && close_enough(got[i], want[i], tol);
    if (!right && !reached_inside[i]) wrong_only_where_reached = false;
  }
  // Evidence: the grid has extra threads, nothing was written before C, the elements written past
  // its end are exactly those the extra threads store to with C[row * N + col] (as far as the
  // guard shows), and every wrong element inside C is one they store to as well.
  if (extra_threads_exist && guards.written_before == 0 && guards.offsets_after == predicted &&
      wrong_only_where_reached) {
    return facts + grader::hint(HintId::matrix_writes_outside,
                                "the elements written past the end of C are exactly those the grid's threads with "
                                "row >= M or col >= N (there because the grid is rounded up to whole blocks of " +
                                    std::to_string(evidence.block.x) + " x " + std::to_string(evidence.block.y) +
                                    ") store to with C[row * N + col]: nothing stops them. Check row < M && col < "
                                    "N before the store.");
  }
  return facts + "These are not exactly the elements that the grid's threads with row >= M or col >= N would "
                 "store to with C[row * N + col]" +
         (wrong_only_where_reached ? std::string() : ", and elements inside C that no such thread reaches are wrong") +
         ", so the grader names no cause.";
}

// Waits for the GPU and checks C; \p what names the call that computed it, \p evidence says
// how it was computed (for the diagnosis).
void check_product(Problem& p, const std::string& what, const Evidence& evidence = {}) {
  grader::synchronize(what + " on " + p.shape.str());
  const grader::DeviceOutput out = grader::read_back(p.C);
  const workbook::Tolerance tol = workbook::float32_dot_tolerance(p.shape.K);
  const MatrixErrors e = compare_matrix(p.shape, out.values, p.expected(), tol);
  if (e.wrong == 0 && out.guards.intact()) return;
  std::string errors = e.wrong > 0 ? matrix_errors(p, out.values, tol, evidence) : std::string();
  if (!out.guards.intact()) {
    errors += (errors.empty() ? "" : "\n") + guard_errors(p.shape, out.guards, out.values, p.expected(), tol, evidence);
  }
  FAIL(what << " computed a wrong C = A * B with M x N x K = " << p.shape.str() << ".\n" << errors);
}

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
void check_fresh_runs(const std::string& what, const Evidence& evidence) {
  if (grader::sanitize_mode()) return;  // racecheck does this job there, on the small shapes
  for (const Shape s : {Shape{1024, 1024, 1024}, Shape{2048, 1536, 1056}}) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      Problem p(s, what + " fresh run " + std::to_string(attempt));
      CAPTURE(s.str(), attempt);
      evidence.run(p);
      check_product(p, what + " (run " + std::to_string(attempt + 1) + " of 4 on fresh data)", evidence);
    }
  }
}

// The evidence for the grader's launches of the lesson's kernels.
Evidence naive_evidence(dim3 block) {
  return {[block](Problem& q) { launch_naive(q, block); }, false, block};
}

Evidence tiled_evidence() {
  return {[](Problem& q) { launch_tiled(q); }, true, dim3(kTile, kTile)};
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

// The block shapes task 1 times the naive kernel with; the best median counts.
const dim3 kNaiveBlocks[] = {dim3(32, 8), dim3(16, 16), dim3(32, 32)};

// The best median of \p launch(block, stream) over kNaiveBlocks.
template <class Launch>
workbook::TimingStats time_naive_blocks(Launch launch) {
  workbook::TimingStats best;
  for (const dim3 block : kNaiveBlocks) {
    const auto stats = time_launch([&](cudaStream_t s) { launch(block, s); });
    if (best.samples == 0 || stats.median_ms < best.median_ms) best = stats;
  }
  return best;
}

// Whether record_rate also times the yardstick of tasks 1 and 2.
enum class Yardstick { none, naive };

// Records GFLOP/s of \p stats on \p p's shape and its ratio to cuBLAS FP32 on the same inputs.
// With Yardstick::naive, also the ratio matmul_grader::naive_at_b reaches on the same shape
// (grader_naive_fraction_of_cublas), which the manifest scales the threshold by: how far a
// kernel bound by load issue rather than arithmetic gets against cuBLAS on this GPU.
void record_rate(Problem& p, const workbook::TimingStats& stats, Yardstick yardstick = Yardstick::none) {
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
  if (yardstick == Yardstick::naive) {
    const Shape shape = p.shape;
    const auto naive = time_naive_blocks([&](dim3 block, cudaStream_t s) {
      // A's M x K floats read as A^T (K x M): the same storage, and only the time counts here.
      matmul_grader::naive_at_b<<<grid_for(block, shape), block, 0, s>>>(p.A.data(), p.B.data(), scratch.data(),
                                                                        shape.M, shape.N, shape.K);
      WORKBOOK_CHECK_LAUNCH();
    });
    const double naive_gflops = p.shape.flops() / (naive.median_ms * 1e6);
    grader::record_metric("grader_naive_gflops", naive_gflops);
    grader::record_metric("grader_naive_fraction_of_cublas", naive_gflops / cublas_gflops);
  }
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
  require_writes("matmul_naive<<<(3, 2), (16, 16)>>> on M x N x K = 17 x 33 x 127",
                 [](Problem& p) { launch_naive(p, dim3(16, 16)); });
  std::vector<dim3> blocks{dim3(32, 8), dim3(16, 16)};
  if (!grader::sanitize_mode()) blocks.insert(blocks.end(), {dim3(32, 32), dim3(64, 2), dim3(8, 4)});
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 1");
    for (const dim3 block : blocks) {
      CAPTURE(s.str(), block.x, block.y);
      p.C.poison();
      launch_naive(p, block);
      check_product(p, "matmul_naive with blocks of " + std::to_string(block.x) + " x " + std::to_string(block.y),
                    naive_evidence(block));
    }
  }
}

TEST_CASE("Task 1: matmul_naive GFLOP/s at 4096^3", "[task_1][perf]") {
  grader::require_gpu();
  Problem p({kPerfSize, kPerfSize, kPerfSize}, "task 1 perf");
  launch_naive(p, dim3(32, 8));
  check_product(p, "matmul_naive", naive_evidence(dim3(32, 8)));
  record_rate(p, time_naive_blocks([&](dim3 block, cudaStream_t s) { launch_naive(p, block, s); }), Yardstick::naive);
}

TEST_CASE("Task 2: matmul_tiled is correct for every shape, tile multiple or not", "[task_2]") {
  grader::require_gpu();
  require_writes("matmul_tiled on M x N x K = 17 x 33 x 127 (blocks of kTile x kTile)",
                 [](Problem& p) { launch_tiled(p); });
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 2");
    CAPTURE(s.str());
    launch_tiled(p);
    check_product(p, "matmul_tiled", tiled_evidence());
  }
  SECTION("blocks entirely outside C write nothing") {
    Problem p({33, 65, 40}, "task 2 extra blocks");
    launch_tiled(p, nullptr, 2);
    check_product(p, "matmul_tiled with 2 more blocks than needed in x and y",
                  Evidence{[](Problem& q) { launch_tiled(q, nullptr, 2); }, true, dim3(0, 0, 0)});
  }
}

TEST_CASE("Task 2: matmul_tiled gives the right C run after run on fresh data", "[task_2]") {
  grader::require_gpu();
  check_fresh_runs("matmul_tiled", tiled_evidence());
}

TEST_CASE("Task 2: matmul_tiled GFLOP/s at 4096^3", "[task_2][perf]") {
  grader::require_gpu();
  Problem p({kPerfSize, kPerfSize, kPerfSize}, "task 2 perf");
  launch_tiled(p);
  check_product(p, "matmul_tiled", tiled_evidence());
  record_rate(p, time_launch([&](cudaStream_t s) { launch_tiled(p, s); }), Yardstick::naive);
}

TEST_CASE("Task 3: matmul_cublas is correct in FP32 for every shape", "[task_3]") {
  grader::require_gpu();
  StudentHandle h;
  // The handle's math mode as the caller set it, before any call can change it.
  cublasMath_t mode_before = CUBLAS_DEFAULT_MATH, mode_after = CUBLAS_DEFAULT_MATH;
  cublasGetMathMode(h.handle, &mode_before);
  require_writes("matmul_cublas(handle, A, B, C, 17, 33, 127)",
                 [&](Problem& p) { matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), 17, 33, 127); });
  const Evidence library{[&](Problem& q) {
    matmul_cublas(h.handle, q.A.data(), q.B.data(), q.C.data(), q.shape.M, q.shape.N, q.shape.K);
  }};
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 3");
    CAPTURE(s.str());
    grader::reset_cublas_calls();
    const auto trace = grader::trace([&] { library.run(p); });
    if (grader::cublas_gemm_calls() == 0) {
      FAIL("matmul_cublas computed C without calling a cuBLAS GEMM function: task 3 asks for the library "
           "(cublasSgemm). Your own kernels are tasks 1, 2 and 4."
           << (trace ? "\nWhat the grader saw on the GPU during the call:\n" + trace->describe() : std::string()));
    }
    if (trace && trace->library_kernels().empty()) {
      FAIL("matmul_cublas called a cuBLAS GEMM function, but no cuBLAS kernel ran: C came from elsewhere."
           << "\nWhat the grader saw on the GPU during the call:\n" << trace->describe());
    }
    check_product(p, "matmul_cublas", library);
  }
  cublasGetMathMode(h.handle, &mode_after);
  if (mode_after != mode_before) {  // evidence: only matmul_cublas ran on the handle since mode_before
    const bool tf32 = (mode_after & CUBLAS_TF32_TENSOR_OP_MATH) != 0;
    FAIL("matmul_cublas changed the handle's math mode from " << int(mode_before) << " to " << int(mode_after)
         << ".\n" << grader::hint(HintId::cublas_math_mode, std::string("task 3 uses the handle as it is given: "
                                   "the caller chose its math mode, so matmul_cublas sets none (no "
                                   "cublasSetMathMode).") +
                                   (tf32 ? " TF32 tensor-core math is faster and less accurate, which the lesson "
                                           "measures separately." : "")));
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
    int nodes = 0;
    const std::string calls = cublas_calls_during([&] {
      nodes = launches_captured_on(stream.get(), [&] {
        matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), 96, 80, 72);
      }, error);
    });
    const bool created_handle = calls.find("cublasCreate") != std::string::npos;
    WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
    cudaStream_t after = nullptr;
    cublasGetStream(h.handle, &after);
    if (nodes < 1 || after != stream.get() || !error.empty()) {
      // The cause, where the evidence shows it: the handle's stream changed during the call, or
      // (stream unchanged) the spy saw cublasCreate during it.
      std::string why;
      if (after != stream.get()) {
        why = grader::hint(HintId::cublas_stream_changed, "the handle's stream was changed from the caller's to " +
                                                              grader::stream_text(after) + ": matmul_cublas must not "
                                                              "call cublasSetStream; cuBLAS runs on the handle's "
                                                              "stream.");
      } else if (created_handle) {
        why = grader::hint(HintId::cublas_own_handle, "matmul_cublas called cublasCreate: a handle of its own runs "
                                                      "on the default stream, not on the stream the caller set on "
                                                      "the handle it was given. Use the handle passed in.");
      }
      FAIL("matmul_cublas did not run on the stream set on its handle: captured launches " << nodes << error << ".\n"
           << why);
    }
    check_product(p, "matmul_cublas on a stream");
  }
  SECTION("an impossible call throws") {
    bool threw = false;
    grader::reset_cublas_calls();
    try {
      matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), -1, 80, 72);
    } catch (const std::exception&) {
      threw = true;
    }
    (void)cudaGetLastError();
    if (!threw) {
      // The cause only when the spy saw it: a GEMM returned an error status and the call went on.
      const bool ignored = grader::cublas_failed_gemm_calls() > 0;
      FAIL("matmul_cublas(M = -1) returned as if it had worked: an impossible product must be reported (throw)."
           << (ignored ? "\nIts cuBLAS GEMM call returned an error status.\n" +
                             grader::hint(HintId::cublas_status_unchecked, "cuBLAS reports errors by its return "
                                          "value, not by exceptions: compare the status cublasSgemm returns with "
                                          "CUBLAS_STATUS_SUCCESS and throw (std::runtime_error, with "
                                          "cublasGetStatusString(status) in the message) when it differs.")
                       : std::string()));
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
  // Two witnesses: the link-time spy names the cuBLAS functions called, the tracer sees the
  // kernels that ran, whichever entry point launched them.
  std::string calls;
  bool empty = false;
  std::optional<grader::Trace> trace;
  calls = cublas_calls_during([&] {
    trace = grader::trace([&] { empty = writes_nothing([&](Problem& p) { challenge(p); }); });
  });
  const bool library_ran = trace && !trace->library_kernels().empty();
  if (empty && calls.empty() && !library_ran) {
    grader::wrote_nothing("matmul_challenge(A, B, C, 17, 33, 127, stream) ran and wrote nothing (task 4 is "
                          "optional): " + grader::untouched_output("C", 17 * 33),
                          trace);
  }
  if (!calls.empty() || library_ran) {
    FAIL("matmul_challenge " << (calls.empty() ? std::string("ran a library's kernels") : "called cuBLAS (" + calls + ")")
         << ": task 4 asks for a hand-written kernel, so it scores nothing. cuBLAS belongs in task 3."
         << (trace ? "\nWhat the grader saw on the GPU during the call:\n" + trace->describe() : std::string()));
  }
  // Not "tiled" for the diagnosis: a challenge kernel's tiles are its own, not kTile.
  const Evidence own{[&](Problem& q) { challenge(q); }};
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 4");
    CAPTURE(s.str());
    const auto trace = grader::trace([&] { own.run(p); });
    // Kernel by kernel: whatever entry point it came through, a library's kernel is not yours.
    if (trace && !trace->library_kernels().empty()) {
      FAIL("matmul_challenge ran kernels of a library (" << grader::launch_text(trace->library_kernels()[0])
           << ", launched by " << trace->library_kernels()[0].launched_by << "): task 4 asks for a hand-written "
           "kernel, so it scores nothing.\nWhat the grader saw on the GPU during the call:\n" << trace->describe());
    }
    check_product(p, "matmul_challenge", own);
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
    check_product(p, "matmul_challenge on pointers offset by one float");
  }
  SECTION("it launches on the stream it is given") {
    Problem p({130, 260, 100}, "task 4 stream");
    workbook::Stream stream(cudaStreamNonBlocking);
    std::string error;
    const int nodes = launches_captured_on(stream.get(), [&] { challenge(p, stream.get()); }, error);
    WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
    if (nodes < 1 || !error.empty()) {
      // Where did the kernel go? The same call, traced outside the capture, shows its stream.
      std::string elsewhere;
      if (error.empty()) {
        const auto t = grader::trace([&] { challenge(p, stream.get()); });
        for (const auto& k : t ? t->program_kernels() : std::vector<grader::TracedKernel>{}) {
          if (k.stream_known && k.stream != stream.get()) elsewhere = grader::stream_text(k.stream);
        }
      }
      FAIL("matmul_challenge(..., stream) launched nothing on that stream (captured launches: " << nodes << ")"
           << error << ".\n"
           // Nothing captured, nothing thrown: the same call outside the capture launched elsewhere.
           << (!elsewhere.empty() ? grader::hint(HintId::challenge_stream, "it launched on " + elsewhere + " instead "
                                                                           "of the stream it was given, the fourth "
                                                                           "launch parameter: kernel<<<grid, block, "
                                                                           "0, stream>>>(...).")
                                  : std::string()));
    }
    check_product(p, "matmul_challenge on a stream", own);
  }
  check_fresh_runs("matmul_challenge", own);
}

TEST_CASE("Task 4: matmul_challenge GFLOP/s at 4096^3", "[task_4][perf]") {
  grader::require_gpu();
  Problem p({kPerfSize, kPerfSize, kPerfSize}, "task 4 perf");
  const auto run = [&](cudaStream_t s) {
    matmul_challenge(p.A.data(), p.B.data(), p.C.data(), kPerfSize, kPerfSize, kPerfSize, s);
  };
  const std::string calls = cublas_calls_during([&] { run(nullptr); });
  if (!calls.empty()) FAIL("matmul_challenge called cuBLAS (" << calls << "): not timed.");
  check_product(p, "matmul_challenge");
  record_rate(p, time_launch(run));
}

// ============================ Contracts, at every shape ============================
// What matmul.hpp promises of the host functions, as grader::Contract
// (grader/support/contract.hpp), held against a traced call at every correctness shape, after one
// untraced call (cuBLAS keeps a workspace in its handle from the first call on). These run after
// the tests above, whose verdicts say more where they apply.

TEST_CASE("Task 3: matmul_cublas keeps its contract for every shape", "[task_3]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  StudentHandle h;
  workbook::Stream stream(cudaStreamNonBlocking);
  if (cublasSetStream(h.handle, stream.get()) != CUBLAS_STATUS_SUCCESS) FAIL("the grader could not set the stream");
  // On the stream it is given (the handle's), without waiting, with no copy to or from the host
  // and nothing left behind.
  const grader::Contract contract = grader::given_stream_contract("matmul_cublas");
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 3 contract");
    const grader::ContractCall call{"matmul_cublas(handle on a stream, A, B, C, " + s.str() + ")", {stream.get()}, {}, {}};
    CAPTURE(call.text);
    grader::require_contract_kept(contract, call, [&] {
      matmul_cublas(h.handle, p.A.data(), p.B.data(), p.C.data(), s.M, s.N, s.K);
    });
  }
}

TEST_CASE("Task 4: matmul_challenge keeps its contract for every shape", "[task_4]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  workbook::Stream stream(cudaStreamNonBlocking);
  const grader::Contract contract = grader::given_stream_contract("matmul_challenge");
  for (const Shape& s : correctness_shapes()) {
    Problem p(s, "task 4 contract");
    const grader::ContractCall call{"matmul_challenge(A, B, C, " + s.str() + ", stream)", {stream.get()}, {}, {}};
    CAPTURE(call.text);
    grader::require_contract_kept(contract, call, [&] {
      matmul_challenge(p.A.data(), p.B.data(), p.C.data(), s.M, s.N, s.K, stream.get());
    });
  }
}
