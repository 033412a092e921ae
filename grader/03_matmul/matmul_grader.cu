// Lesson 03's grader: the checks its tests share (matmul_grader.hpp), with their diagnoses: a
// diagnosis names a cause only where the evidence (reruns, probe shapes, C set to 0, the guards)
// proves it. Helpers only this file uses are in the anonymous namespace.
#include "matmul_grader.hpp"

#include "diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using grader::HintId;

namespace matmul_grader {

// The yardstick for the thresholds of tasks 1 and 2: C = A^T * B with A^T given (K x M, row
// major), one thread per element of C, x along the columns. Per multiply-add it issues what the
// lesson's naive kernel issues, a load every thread of a warp shares and a coalesced one, and it
// moves as many bytes from L2 per block, so it runs about as fast; yet it is not the answer to
// any task (a release ships the grader's sources: tools/make_release.py). A kernel in a named namespace: nvcc's stubs for kernels
// in an anonymous namespace clash with Catch2's.
__global__ void naive_at_b(const float* At, const float* B, float* C, int M, int N, int K) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < M && c < N) {
    float dot = 0.0f;
    for (int k = 0; k < K; ++k) dot += At[k * M + r] * B[k * N + c];
    C[r * N + c] = dot;
  }
}

namespace {

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

// An element of C that is wrong: unwritten (still the poison), not finite, or off by more than \p tol.
bool is_wrong(float got, float want, const workbook::Tolerance& tol) {
  return workbook::is_poison(got) || !close_enough(got, want, tol);
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
      if (!is_wrong(got[i], want[i], tol)) continue;
      const bool unset = workbook::is_poison(got[i]);
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
                                                  "or right edge of C, the same ones every run, and the full tiles "
                                                  "are right. Every thread "
                                                  "loads its element of the A and B tiles, 0 past the edge of the "
                                                  "matrix, even when its own element of C is outside C: no early "
                                                  "return, and every thread reaches every __syncthreads().");
}

// The indices of the elements of C that are wrong (is_wrong).
std::vector<std::size_t> wrong_elements(const std::vector<float>& got, const std::vector<float>& want,
                                        const workbook::Tolerance& tol) {
  std::vector<std::size_t> wrong;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (is_wrong(got[i], want[i], tol)) wrong.push_back(i);
  }
  return wrong;
}

// True when \p q's C, \p got, is wrong only in the partial tiles at the bottom and right edge,
// and two more runs of the same product (C poisoned again, every SM's shared memory filled with a
// new value before each) are wrong at exactly the same elements. An early return, a skipped
// barrier or a load that is not 0 past the edge are wrong there every time. A race can leave its
// wrong elements in edge tiles by chance: the same elements three times over is unlikely, not
// impossible (on the H100, tiled_no_second_barrier's once all fell in one edge tile, and the next
// runs differed). Where they do repeat, the claim stands on this evidence alone.
bool wrong_only_in_edge_tiles_every_run(Problem& q, const std::vector<float>& got, const Evidence& evidence,
                                        const workbook::Tolerance& tol) {
  const MatrixErrors e = compare_matrix(q.shape, got, q.expected(), tol);
  if (e.wrong == 0 || !e.all_in_edge_tiles || !evidence.run) return false;
  const std::vector<std::size_t> first = wrong_elements(got, q.expected(), tol);
  for (int again = 0; again < 2; ++again) {
    q.C.poison();
    grader::fill_shared_memory(0.75f + 0.5f * float(again));
    evidence.run(q);
    grader::synchronize("the same product again, " + q.shape.str() + ", to see which elements are wrong every run");
    if (wrong_elements(q.C.download(), q.expected(), tol) != first) return false;
  }
  return true;
}

// True when matmul_tiled's C on \p p, \p got, is wrong only in the partial edge tiles, the same
// elements on every run (wrong_only_in_edge_tiles_every_run); shapes without a full tile are
// judged on a probe shape that has both. \p where receives the words that introduce the claim.
// May run the product again; p.C then holds another run's result.
bool only_edge_tiles_wrong(Problem& p, const std::vector<float>& got, const workbook::Tolerance& tol,
                           const Evidence& evidence, std::string& where) {
  if (!evidence.tiled || !evidence.run) return false;
  if (p.shape.M >= kTile && p.shape.N >= kTile) {
    where = "At this shape, and on two more runs of it,";
    return wrong_only_in_edge_tiles_every_run(p, got, evidence, tol);
  }
  Problem probe(kEdgeProbe, "edge probe");
  evidence.run(probe);
  grader::synchronize("the edge-tile probe " + kEdgeProbe.str());
  where = "This shape has no full tile, so the grader also ran " + kEdgeProbe.str() + " three times, where";
  return wrong_only_in_edge_tiles_every_run(probe, probe.C.download(), evidence,
                                            workbook::float32_dot_tolerance(kEdgeProbe.K));
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
  // Evidence: matmul_tiled only; every wrong element in a partial edge tile, the full tiles right,
  // the same elements wrong in three runs (at this shape, or on a probe shape when this one has no
  // full tile).
  if (only_edge_tiles_wrong(p, got, tol, evidence, where)) {
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

}  // namespace

void reference_gemm(const float* A, const float* B, float* C, const Shape& s, cudaStream_t stream) {
  const cublasStatus_t status = matmul_benchmark::row_major_sgemm(reference_handle(), A, B, C, s.M, s.N, s.K, stream);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("the grader's cublasSgemm failed: ") + cublasGetStatusString(status));
  }
}

std::vector<Shape> correctness_shapes() {
  if (grader::pass_check_mode()) {
    // The check of a pass: a subset of the sanitizer mode's shapes below (./grade --sanitize runs
    // every shape): ragged in every dimension, with two or more tiles of K at any tile up to 64 (a
    // barrier missing between two tiles shows there); every dimension a multiple of 32 (a kernel's
    // own path for whole tiles); one row and one column of C. Not the random shape of up to 100^3,
    // which alone costs racecheck more than the rest together.
    return {{33, 33, 33}, {17, 33, 127}, {32, 32, 32}, {127, 1, 33}, {1, 127, 33}};
  }
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

void check_product(Problem& p, const std::string& what, const Evidence& evidence) {
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

dim3 grid_for(dim3 block, const Shape& s) { return matmul_benchmark::grid_for(block, s.M, s.N); }

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

void record_rate(Problem& p, const workbook::TimingStats& stats, Yardstick yardstick) {
  // The yardsticks are the reference's figures on the same shape when ./grade gives them
  // (grader::yardstick), else timed here on scratch output, never profiled.
  const double flops = p.shape.flops();
  workbook::DeviceBuffer<float> scratch;  // allocated by the first yardstick timed here
  const auto scratch_c = [&] {
    if (scratch.size() == 0) scratch = workbook::DeviceBuffer<float>(p.C.size());
    return scratch.data();
  };
  const double cublas_gflops = grader::yardstick("cublas_gflops", [&] {
    float* C = scratch_c();
    const auto cublas = time_launch([&](cudaStream_t s) { reference_gemm(p.A.data(), p.B.data(), C, p.shape, s); },
                                    false);
    return flops / (cublas.median_ms * 1e6);
  });
  const double gflops = flops / (stats.median_ms * 1e6);
  grader::record_metric("profiled_bytes", matmul_benchmark::least_bytes(p.shape.M, p.shape.N, p.shape.K));
  grader::record_metric("n", p.shape.M);
  grader::record_metric("median_ms", stats.median_ms);
  grader::record_metric("gflops", gflops);
  grader::record_metric("fraction_of_cublas", gflops / cublas_gflops);
  if (yardstick == Yardstick::naive) {
    const double naive_gflops = grader::yardstick("grader_naive_gflops", [&] {
      float* C = scratch_c();
      const Shape shape = p.shape;
      const auto naive = time_naive_blocks([&](dim3 block, cudaStream_t s) {
        // A's M x K floats read as A^T (K x M): the same storage, and only the time counts here.
        matmul_grader::naive_at_b<<<grid_for(block, shape), block, 0, s>>>(p.A.data(), p.B.data(), C, shape.M,
                                                                          shape.N, shape.K);
        WORKBOOK_CHECK_LAUNCH();
      }, false);
      return flops / (naive.median_ms * 1e6);
    });
    grader::record_metric("grader_naive_fraction_of_cublas", naive_gflops / cublas_gflops);
  }
}

}  // namespace matmul_grader
