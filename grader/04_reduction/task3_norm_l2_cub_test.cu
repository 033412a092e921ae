// Lesson 04, task 3: norm_l2_cub, the L2 norm through CUB alone.
//
// What is checked: the norm at every correctness size and input, and 0 for n = 0; that CUB's
// kernels do the whole job, none of the student's own, on the stream it is given; a workspace that
// is too small is reported; its contract at every size; and GB/s against CUB's Sum.
#include "reduction_grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

using namespace reduction_grader;

TEST_CASE("Task 3: norm_l2_cub is the L2 norm for every size and input", "[task_3]") {
  grader::require_gpu();
  require_norm_writes();
  Output o;
  for (const std::size_t n : correctness_sizes()) {
    for (const Input input : inputs_for()) {
      Data d(n, input, "task 3");
      CAPTURE(d.text());
      const double squares = d.sum_squares();
      const double want = std::sqrt(squares);
      const double tolerance = norm_tolerance(n, want);
      const auto out = norm(d.device.data(), n, o);
      const float got = out.values[0];
      if (!out.guards.intact()) FAIL("norm_l2_cub wrote outside *out: " << out.guards.describe(1) << ".");
      if (!within(got, want, tolerance)) {
        const bool squared = std::isfinite(got) &&
                             within(got, squares, (kC * ceil_log2(n) + 2) * kUnitRoundoff * squares);
        FAIL("norm_l2_cub on " << d.text() << ": expected sqrt(sum of x^2) = " << workbook::format_value(want)
             << ", got " << workbook::format_value(got, workbook::is_poison(got)) << " (tolerance " << tolerance << ")."
             << (squared ? "\nThat is the sum of squares itself: the post-map, the square root, is missing."
                         : std::string()));
      }
    }
  }
  o.out.poison();
  norm_l2_cub(nullptr, 0, o.out.data(), o.workspace.data(), kWorkspaceBytes, student_stream());
  grader::synchronize("norm_l2_cub with n = 0");
  const float empty = o.out.download()[0];
  if (empty != 0.0f) {
    FAIL("norm_l2_cub with n = 0 left *out = " << workbook::format_value(empty, workbook::is_poison(empty))
         << ": the norm of an empty vector is 0.");
  }
}

TEST_CASE("Task 3: norm_l2_cub runs CUB's kernels, none of its own, on the stream it is given", "[task_3]") {
  grader::require_gpu();
  require_norm_writes();
  if (grader::sanitize_mode()) return;  // the tracer cannot run under compute-sanitizer
  Output o;
  const cudaStream_t stream = student_stream();
  Data d(std::size_t(1) << 20, Input::Uniform, "task 3 trace");
  const auto trace = grader::trace([&] {
    norm_l2_cub(d.device.data(), d.size(), o.out.data(), o.workspace.data(), kWorkspaceBytes, stream);
  });
  if (!trace) return;
  const std::string seen = "\nWhat the grader saw on the GPU during the call:\n" + trace->describe();
  std::vector<grader::TracedKernel> own;
  for (const auto& k : trace->kernels) {
    if (!is_cub_kernel(k)) own.push_back(k);
  }
  if (!own.empty()) {
    FAIL("norm_l2_cub ran a kernel of its own (" << grader::launch_text(own[0]) << "): task 3 asks for CUB to do "
         "the whole job (the map, the sum and the square root), so it scores nothing. The square root of the result "
         "needs no kernel: CUB can write through an output iterator that applies it." << seen);
  }
  if (cub_kernels(*trace).empty()) FAIL("norm_l2_cub ran no CUB kernel: task 3 asks for CUB." << seen);
  for (const auto& k : trace->kernels) {
    if (k.stream_known && k.stream != stream) {
      FAIL("norm_l2_cub was given " << grader::stream_text(stream) << " but CUB ran " << grader::launch_text(k)
           << " on " << grader::stream_text(k.stream) << ": pass the stream to CUB (its last parameter)." << seen);
    }
  }
}

TEST_CASE("Task 3: norm_l2_cub reports a workspace that is too small", "[task_3]") {
  grader::require_gpu();
  require_norm_writes();
  Output o;
  Data d(std::size_t(1) << 20, Input::Uniform, "task 3 small workspace");
  bool threw = false;
  try {
    norm_l2_cub(d.device.data(), d.size(), o.out.data(), o.workspace.data(), 16, student_stream());
    grader::synchronize("norm_l2_cub with a workspace of 16 bytes");
  } catch (const std::exception&) {
    threw = true;
  }
  (void)cudaGetLastError();
  if (!threw) {
    FAIL("norm_l2_cub with workspace_bytes = 16 returned as if it had worked: CUB needs more temporary storage "
         "than that. Ask CUB how much (call it once with d_temp_storage = nullptr) and throw std::runtime_error "
         "when the workspace is smaller.");
  }
}

TEST_CASE("Task 3: norm_l2_cub GB/s at 2^26 and 2^28 floats against CUB's Sum", "[task_3][perf]") {
  grader::require_gpu();
  measure_against_cub("norm_l2_cub", [](const float* in, std::size_t n, float* out, void* ws, cudaStream_t st) {
    norm_l2_cub(in, n, out, ws, kWorkspaceBytes, st);
  }, exact_norm);
}

// The contract reduction.hpp states (grader::given_stream_contract) at every size, after one
// untraced call. It runs after the tests above, whose verdicts say more where they apply.
TEST_CASE("Task 3: norm_l2_cub keeps its contract for every size", "[task_3]") {
  grader::require_gpu();
  check_contract_at_every_size(grader::given_stream_contract("norm_l2_cub"), norm_l2_cub, "norm_l2_cub");
}
