// Lesson 03, task 4 (optional): matmul_challenge, the student's fastest hand-written kernel.
//
// What is checked: no cuBLAS call (the link-time spy) and no library kernel (the tracer), at the
// probe and at every correctness shape (matmul_grader.hpp); C = A * B on every shape, on pointers
// that are not 16-byte aligned, on the stream it is given; the same C run after run on fresh
// data. A wrong C is diagnosed by check_product (matmul_grader.cu). Its contract (contract.hpp)
// at every shape: on the given stream, no wait, no host copy, nothing left behind. Performance:
// GFLOP/s at 4096^3 against cuBLAS FP32, never timed when it calls cuBLAS.
#include "matmul_grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include "contract.hpp"
#include "diagnosis.hpp"

#include <optional>
#include <string>
#include <vector>

using grader::HintId;
using namespace matmul_grader;

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

// ============================ The contract, at every shape ============================
// What matmul.hpp promises of matmul_challenge, as grader::Contract
// (grader/support/contract.hpp), held against a traced call at every correctness shape, after one
// untraced call. This runs after the tests above, whose verdicts say more where they apply.

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
