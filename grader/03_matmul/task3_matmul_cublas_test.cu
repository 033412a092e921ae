// Lesson 03, task 3: matmul_cublas, the product through cuBLAS on a handle the caller gives.
//
// What is checked: C = A * B in FP32 on every correctness shape (matmul_grader.hpp), through a
// cuBLAS GEMM (the link-time spy, cublas_spy.hpp) whose kernels ran (the tracer), without
// changing the handle's math mode; on the handle's stream, without a handle of its own; an
// impossible call throws. Its contract (contract.hpp) at every shape: on the handle's stream, no
// wait, no host copy, nothing left behind. Performance: GFLOP/s at 4096^3 against cuBLAS FP32.
#include "matmul_grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include "contract.hpp"
#include "cublas_spy.hpp"
#include "diagnosis.hpp"

#include <exception>
#include <stdexcept>
#include <string>

using grader::HintId;
using namespace matmul_grader;

namespace {

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

// ============================ The contract, at every shape ============================
// What matmul.hpp promises of matmul_cublas, as grader::Contract (grader/support/contract.hpp),
// held against a traced call at every correctness shape, after one untraced call (cuBLAS keeps a
// workspace in its handle from the first call on). This runs after the tests above, whose
// verdicts say more where they apply.

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
