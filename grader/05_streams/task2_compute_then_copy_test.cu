// Lesson 05, task 2: compute_then_copy, a kernel on one stream and a copy on another, joined by an
// event.
//
// What is checked: the copy waits for the kernel, for every n (the compute stream is kept busy
// first, so a copy that does not wait reads too early); what the tracer sees (kernel and copy on
// their streams, no host wait, no event left behind); and its contract at every n.
#include "streams_grader.hpp"

#include "diagnosis.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

using grader::HintId;
using namespace streams_grader;

TEST_CASE("Task 2: compute_then_copy's copy waits for the kernel, for every n", "[task_2]") {
  grader::require_gpu();
  {
    TwoStages probe(1000);
    std::optional<grader::Trace> trace = grader::trace([&] {
      probe.run();
      grader::synchronize("compute_then_copy, the first call");
    });
    const bool untouched = workbook::compare_to_reference(probe.host_out.data(), probe.expected.data(), probe.n,
                                                          workbook::Tolerance{}).unwritten == probe.n;
    if (untouched && !(trace && did_anything(*trace))) {
      grader::wrote_nothing("compute_then_copy(n = 1000) returned and wrote nothing: " +
                                grader::untouched_output("host_out", 1000, false) + "; it ran nothing on the GPU",
                            trace);
    }
  }
  std::vector<std::size_t> sizes{1, 1000, 65537, (std::size_t(1) << 20) + 3};
  if (!grader::sanitize_mode()) sizes.push_back((std::size_t(1) << 22) + 1);
  for (const std::size_t n : sizes) {
    CAPTURE(n);
    TwoStages s(n);
    // The kernel starts late (the compute stream is busy first), so a copy that does not wait
    // for it reads device_out before the kernel wrote it.
    spin(s.compute.get(), 5);
    s.run();
    {
      grader::GpuWait wait("the copy stream after compute_then_copy on n = " + std::to_string(n));
      WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(s.copy.get()));
    }
    std::string facts = host_output_errors(s.host_out, s.expected, "compute_then_copy on n = " + std::to_string(n) +
                                                                       ", read once the copy stream was done");
    grader::synchronize("compute_then_copy on n = " + std::to_string(n));
    facts += device_guard_errors(s.out, "device_out", "compute_then_copy");
    if (facts.empty()) continue;
    // Again under the tracer, to see the order of things.
    s.host_out.poison();
    s.out.poison();
    const auto trace = without_grader_work(grader::trace([&] {
      spin(s.compute.get(), 5);
      s.run();
    }));
    if (trace) FAIL(facts << ordering_errors(s, *trace) << seen_text(*trace));
    FAIL(facts);
  }
}

TEST_CASE("Task 2: compute_then_copy runs on its two streams and returns before the GPU is done", "[task_2]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  TwoStages s((std::size_t(1) << 20) + 3);
  constexpr double kBusyMs = 20;
  std::optional<grader::Trace> trace;
  {
    grader::GpuWait wait("compute_then_copy while the compute stream is busy");
    trace = without_grader_work(grader::trace([&] {
      spin(s.compute.get(), kBusyMs);
      s.run();
    }));
  }
  if (!trace) return;
  const std::string seen = seen_text(*trace);
  const std::string intro = "compute_then_copy (its compute stream busy for " + std::to_string(int(kBusyMs)) +
                            " ms before the call) ";
  // Evidence for host-waits: the call made a stream, event or device wait.
  if (const auto waits = trace->synchronizations(); !waits.empty()) {
    FAIL(intro << "made the host wait (" << waits[0] << ").\n"
         << grader::hint(HintId::host_waits,
                         "the host stopped until the GPU was done, though nothing on the host needed the result: "
                         "the waiting belongs on the GPU. Order the streams with an event (cudaEventRecord on one, "
                         "cudaStreamWaitEvent on the other) and return at once.")
         << seen);
  }
  if (last_gpu_end(*trace) <= trace->returned_ns) {
    FAIL(intro << "returned only after the GPU had finished its work: it must return while the GPU is still busy."
         << seen);
  }
  for (const auto& k : trace->program_kernels()) {
    if (k.stream_known && k.stream != s.compute.get()) {
      FAIL(intro << "ran " << grader::launch_text(k) << " on " << grader::stream_text(k.stream)
           << ", not on `compute` (" << grader::stream_text(s.compute.get()) << ")." << seen);
    }
  }
  if (trace->program_kernels().empty()) FAIL(intro << "launched no kernel." << seen);
  bool copied = false;
  for (const auto& c : trace->copies) {
    if (c.direction != grader::CopyDirection::DeviceToHost) continue;
    copied = true;
    if (c.stream_known && c.stream != s.copy.get()) {
      FAIL(intro << "copied device_out to the host on " << grader::stream_text(c.stream) << ", not on `copy` ("
           << grader::stream_text(s.copy.get()) << ")." << seen);
    }
    if (!c.asynchronous) FAIL(intro << "copied device_out to the host with a synchronous copy." << seen);
  }
  if (!copied) FAIL(intro << "copied nothing to the host." << seen);
  if (const std::string order = ordering_errors(s, *trace); !order.empty()) FAIL(intro << "ran out of order: " << order << seen);
  if (trace->count_calls("cudaStreamWaitEvent") == 0) {
    FAIL(intro << "never called cudaStreamWaitEvent: what orders the copy after the kernel?" << seen);
  }
  // Events created and not destroyed, in a second call: an event made once and kept for every
  // call is not a leak, one more each call is.
  grader::synchronize("compute_then_copy");
  const auto again = grader::trace([&] { s.run(); });
  const grader::Trace& second = again ? *again : *trace;
  const std::size_t created = second.count_calls("cudaEventCreate") + second.count_calls("cudaEventCreateWithFlags");
  const std::size_t destroyed = second.count_calls("cudaEventDestroy");
  if (created > destroyed) {  // evidence: a second call created more events than it destroyed
    FAIL(intro << "created " << created << " event" << (created > 1 ? "s" : "") << " and destroyed " << destroyed
         << " in a second call.\n"
         << grader::hint(HintId::event_leak,
                         "every call leaves an event behind; a program that calls it in a loop runs out. Destroy the "
                         "event before returning: cudaEventDestroy right after cudaStreamWaitEvent is allowed, the "
                         "wait still happens.")
         << seen);
  }
}

// The contract (contracts.hpp) at every shape above, after one untraced call: a stream or event
// made once and kept for later calls is not left behind by each call; one made by every call is.
// It runs after the tests above, whose verdicts say more where they apply.
TEST_CASE("Task 2: compute_then_copy keeps its contract for every n", "[task_2]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = streams_grader::compute_then_copy_contract();
  for (const std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(65537), (std::size_t(1) << 20) + 3}) {
    CAPTURE(n);
    TwoStages s(n);
    const grader::ContractCall call{"compute_then_copy(n = " + std::to_string(n) + ")",
                                    {s.compute.get(), s.copy.get()},
                                    {{"host_out", s.host_out.data(), n * kFloat}},
                                    {{"n", double(n)}}};
    grader::require_contract_kept(contract, call, [&] { s.run(); });
  }
}
