// Lesson 05, task 3: transform_batches, a temporary per batch from the stream-ordered allocator.
//
// What is checked: every batch's result for every batch layout (batch_layouts); what the tracer
// sees (cudaMallocAsync and cudaFreeAsync on the given stream, no host wait, nothing left
// allocated); its contract at every layout; and its time against cudaMalloc and cudaFree per
// batch.
#include "streams_grader.hpp"

#include "diagnosis.hpp"

#include <catch2/catch_test_macros.hpp>

#include <string>

using grader::HintId;
using namespace streams_grader;

TEST_CASE("Task 3: transform_batches gives every batch's result", "[task_3]") {
  grader::require_gpu();
  {
    Batches probe({1000, 2000}, kCheckWork);
    const auto trace = grader::trace([&] {
      probe.run();
      grader::synchronize("transform_batches, the first call");
    });
    const auto got = probe.out.download();
    const bool untouched = workbook::compare_to_reference(got.data(), probe.expected.data(), probe.n,
                                                          workbook::Tolerance{}).unwritten == probe.n;
    if (untouched && !(trace && did_anything(*trace))) {
      grader::wrote_nothing("transform_batches(2 batches of 1000 and 2000 floats) returned and wrote nothing: " +
                                grader::untouched_output("device_out", probe.n, false) + "; it ran nothing on the GPU",
                            trace);
    }
  }
  for (const auto& sizes : batch_layouts()) {
    Batches b(sizes, kCheckWork);
    CAPTURE(b.text());
    b.run();
    grader::synchronize("transform_batches on " + b.text());
    const auto got = b.out.download();
    const auto report = workbook::compare_to_reference(got.data(), b.expected.data(), b.n, workbook::Tolerance{});
    std::string facts = device_guard_errors(b.out, "device_out", "transform_batches on " + b.text());
    if (!report.ok()) {
      facts += "transform_batches on " + b.text() + ": " + std::to_string(report.wrong) + " of " +
               std::to_string(b.n) + " elements are wrong (each batch is smoothed on its own: its first and last "
               "elements repeat themselves, never a neighbour from another batch).\n" + report.describe();
    }
    if (!facts.empty()) FAIL(facts);
  }
}

TEST_CASE("Task 3: transform_batches allocates in stream order, waits for nothing and frees everything", "[task_3]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  Batches b(random_sizes(64, 50000, "task 3 trace"), kCheckWork);
  const auto trace = grader::trace([&] { b.run(); });
  grader::synchronize("transform_batches on " + b.text());
  if (!trace) return;
  const std::string seen = seen_text(*trace);
  const std::string intro = "transform_batches on " + b.text() + " ";
  const std::size_t async_allocations =
      trace->count_calls("cudaMallocAsync") + trace->count_calls("cudaMallocFromPoolAsync");
  const std::size_t frees = trace->count_calls("cudaFree");
  // Evidence for synchronous-free: stream-ordered allocations and cudaFree, and no cudaMalloc: only
  // then can the cudaFree calls have freed stream-ordered memory; with both, the next check's hint
  // (synchronous-malloc: any cudaMalloc or cudaFree) covers them.
  if (async_allocations > 0 && frees > 0 && trace->count_calls("cudaMalloc") == 0) {
    FAIL(intro << "allocated in stream order but freed with cudaFree (" << frees << " calls).\n"
         << grader::hint(HintId::synchronous_free,
                         "cudaFree does not wait for the kernels queued before it when the memory came from "
                         "cudaMallocAsync: the buffer goes back to the pool while they may still use it, and the "
                         "next allocation can hand it out again (a use after free that shows only now and then). "
                         "cudaFreeAsync(p, stream) queues the free behind the kernels that use the buffer.")
         << seen);
  }
  if (trace->count_calls("cudaMalloc") > 0 || frees > 0) {
    FAIL(intro << "called cudaMalloc " << trace->count_calls("cudaMalloc") << " times and cudaFree " << frees
         << " times.\n"
         << grader::hint(HintId::synchronous_malloc,
                         "cudaMalloc and cudaFree are not stream-ordered: cudaFree waits for the whole device, so "
                         "the host and the GPU take turns, batch after batch. cudaMallocAsync and cudaFreeAsync on "
                         "the stream give the temporary from a pool, with no wait.")
         << seen);
  }
  if (const auto waits = trace->synchronizations(); !waits.empty()) {  // a stream, event or device wait
    FAIL(intro << "made the host wait (" << waits[0] << ").\n"
         << grader::hint(HintId::host_waits,
                         "the host stopped until the GPU was done, though nothing on the host needed the result: in "
                         "stream order a buffer is freed after the kernels queued before the free, with no wait.")
         << seen);
  }
  if (async_allocations == 0) {
    FAIL(intro << "allocated no temporary in stream order (cudaMallocAsync or cudaMallocFromPoolAsync): the "
         "task is to give each batch its temporary from a pool, as CuPy does." << seen);
  }
  if (trace->device_bytes_not_freed() > 0) {  // evidence: allocations of the call's own left unfreed
    FAIL(intro << "left " << trace->allocations_not_freed() << " allocation(s), " << trace->device_bytes_not_freed()
         << " bytes, never freed.\n"
         << grader::hint(HintId::batch_leak,
                         "memory from cudaMallocAsync stays taken until cudaFreeAsync (or cudaFree) gives it back; "
                         "each call loses its temporaries, and a program that calls it in a loop runs out of "
                         "memory. Free each temporary on the stream once its last kernel is queued.")
         << seen);
  }
  for (const auto& k : trace->program_kernels()) {
    if (k.stream_known && k.stream != b.stream.get()) {
      FAIL(intro << "ran " << grader::launch_text(k) << " on " << grader::stream_text(k.stream)
           << ", not on the stream it was given." << seen);
    }
  }
  for (const auto& c : trace->calls) {
    if ((c.name == "cudaMallocAsync" || c.name == "cudaMallocFromPoolAsync" || c.name == "cudaFreeAsync") &&
        c.stream != b.stream.get()) {
      FAIL(intro << "called " << c.name << " on " << grader::stream_text(c.stream) << ", not on the stream it was "
           "given: the temporary must come and go in the order of that stream's kernels." << seen);
    }
  }
}

TEST_CASE("Task 3: transform_batches time against cudaMalloc and cudaFree per batch", "[task_3][perf]") {
  grader::require_gpu();
  Batches b(random_sizes(200, 1 << 18, "task 3 perf"), 1);
  b.run();
  grader::synchronize("transform_batches on " + b.text());
  const auto got = b.out.download();
  if (!workbook::compare_to_reference(got.data(), b.expected.data(), b.n, workbook::Tolerance{}).ok()) {
    FAIL("transform_batches on " << b.text() << " gave a wrong result: a wrong result is not timed.");
  }
  // Both waited for at the end of each sample: the whole loop, GPU work included.
  const auto student = host_time([&] {
    grader::GpuWait wait("transform_batches on " + b.text());
    b.run();
    WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(b.stream.get()));
  });
  const auto baseline = host_time([&] {
    batches_with_cudamalloc(b.in.data(), b.out.data(), b.offsets.data(), b.batches(), b.work, b.stream.get());
    WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(b.stream.get()));
  });
  grader::record_metric("batches", b.batches());
  grader::record_metric("n", double(b.n));
  grader::record_metric("median_ms", student.median_ms);
  grader::record_metric("cudamalloc_ms", baseline.median_ms);
  grader::record_metric("speedup_over_cudamalloc", baseline.median_ms / student.median_ms);
}

// The contract (contracts.hpp) at every shape above, after one untraced call: a stream or event
// made once and kept for later calls is not left behind by each call; one made by every call is.
// It runs after the tests above, whose verdicts say more where they apply.
TEST_CASE("Task 3: transform_batches keeps its contract for every batch layout", "[task_3]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = streams_grader::transform_batches_contract();
  for (const auto& sizes : batch_layouts()) {
    Batches b(sizes, kCheckWork);
    CAPTURE(b.text());
    const grader::ContractCall call{"transform_batches(" + b.text() + ")", {b.stream.get()}, {}, {{"n", double(b.n)}}};
    grader::require_contract_kept(contract, call, [&] { b.run(); });
  }
}
