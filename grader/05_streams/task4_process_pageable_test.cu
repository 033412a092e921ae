// Lesson 05, task 4 (optional): process_pageable, the pipeline of task 1 from pageable memory,
// through a pinned staging buffer.
//
// What is checked: every element for any n and staging size (a heavy kernel in the last shapes, so
// a slot reused too early shows); what the tracer sees (copies only from pinned staging, on its
// own streams, no device-wide wait); its contract at every shape; and its time against the
// sequential pageable version.
#include "streams_grader.hpp"

#include "diagnosis.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using grader::HintId;
using namespace streams_grader;

TEST_CASE("Task 4: process_pageable gives every element for any n and staging size", "[task_4]") {
  grader::require_gpu();
  {
    Staged probe(1000, 4096, kCheckWork, "task 4");
    std::optional<grader::Trace> trace;
    {
      grader::GpuWait wait("process_pageable, the first call");
      trace = grader::trace([&] { probe.run(); });
    }
    const bool untouched = workbook::compare_to_reference(probe.out.data(), probe.expected.data(), probe.n,
                                                          workbook::Tolerance{}).unwritten == probe.n;
    if (untouched && !(trace && did_anything(*trace))) {
      grader::wrote_nothing("process_pageable(n = 1000, 4096 staging floats) returned and wrote nothing: " +
                                grader::untouched_output("host_out", 1000, false) + "; it ran nothing on the GPU",
                            trace);
    }
  }
  struct StagedShape {
    std::size_t n, staging;
    int work;
  };
  // The last shapes run a heavy kernel, so the GPU falls behind the host: a slot the host refills
  // (or reads) before the GPU is done with it shows.
  std::vector<StagedShape> shapes{{1, 4096, kCheckWork}, {1000, 4096, kCheckWork}, {4099, 5000, kCheckWork},
                                  {70001, 4096, kCheckWork}, {(std::size_t(1) << 20) + 3, std::size_t(1) << 16, kCheckWork},
                                  {(std::size_t(1) << 18) + 5, 4096, 20000}};
  if (!grader::sanitize_mode()) {
    shapes.push_back({std::size_t(3) << 21, std::size_t(1) << 20, kCheckWork});
    shapes.push_back({(std::size_t(1) << 20) + 3, std::size_t(1) << 16, 20000});
  }
  for (const auto& [n, staging, work] : shapes) {
    Staged s(n, staging, work, "task 4");
    CAPTURE(s.text());
    {
      grader::GpuWait wait("process_pageable on " + s.text());
      s.run();
    }
    std::string facts = host_output_errors(s.out, s.expected, "process_pageable on " + s.text());
    const workbook::GuardReport staging_guards = s.staging.guards();
    if (!staging_guards.intact()) {
      facts += "process_pageable wrote outside `staging`: " + staging_guards.describe(s.staging.size()) + ".\n";
    }
    facts += device_guard_errors(s.device_out, "device_out", "process_pageable on " + s.text());
    if (!facts.empty()) FAIL(facts);
  }
}

TEST_CASE("Task 4: process_pageable copies through pinned staging, on streams of its own", "[task_4]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  Staged s(std::size_t(1) << 22, std::size_t(1) << 18, kCheckWork, "task 4 trace");
  // Kernels four times as long as the pageable copy in, in all: whatever the chunk size, a chunk's
  // kernel outlasts the host's memcpy of the next chunk, so a pipeline shows overlap.
  const double copy_ms = stream_ms([&](cudaStream_t st) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(s.device_in.data(), s.in.data(), s.n * kFloat, cudaMemcpyHostToDevice, st));
  }, 3);
  s.work = work_for(s.device_in.data(), s.device_out.data(), s.n, 4 * copy_ms);
  s.expected = transformed(std::vector<float>(s.in.data(), s.in.data() + s.n), s.work);
  std::optional<grader::Trace> trace;
  {
    grader::GpuWait wait("process_pageable on " + s.text());
    trace = grader::trace([&] { s.run(); });
  }
  if (const std::string facts = host_output_errors(s.out, s.expected, "process_pageable on " + s.text()); !facts.empty()) {
    FAIL(facts << (trace ? seen_text(*trace) : ""));
  }
  if (!trace) return;
  const std::string seen = seen_text(*trace);
  const std::string intro = "process_pageable on " + s.text() + " gave the right result, but ";
  // Each hint below: the right result, and the fact in its condition, seen in this trace.
  if (const std::string copy = pageable_copy(*trace); !copy.empty()) {
    FAIL(intro << "it copied " << copy << " from pageable memory.\n"
         << grader::hint(HintId::pageable_copy,
                         "a copy from pageable memory is not asynchronous, even through cudaMemcpyAsync: the "
                         "driver copies it through a pinned buffer of its own and the call returns only when the "
                         "host side is done, so the host queues nothing meanwhile. Copy each chunk into the pinned "
                         "`staging` buffer yourself (memcpy) and copy from there.")
         << seen);
  }
  if (trace->count_calls("cudaDeviceSynchronize") > 0) {
    FAIL(intro << "it called cudaDeviceSynchronize.\n"
         << grader::hint(HintId::device_synchronize,
                         "cudaDeviceSynchronize waits for everything on the GPU, other streams' work too. Wait for "
                         "the event of the slot you are about to reuse (cudaEventSynchronize), no more.")
         << seen);
  }
  if (const std::string where = default_stream_work(*trace); !where.empty()) {
    FAIL(intro << "it ran " << where << " on the default stream.\n"
         << grader::hint(HintId::default_stream,
                         "the legacy default stream waits for every blocking stream and they wait for it, so work "
                         "there runs alone: nothing overlaps it. Give every copy and kernel one of your own streams.")
         << seen);
  }
  if (const std::string copy = synchronous_copy(*trace); !copy.empty()) {
    FAIL(intro << "it copied " << copy << ", a synchronous copy: nothing overlaps it. Use cudaMemcpyAsync on your "
         "streams." << seen);
  }
}

TEST_CASE("Task 4: process_pageable time against the sequential pageable version", "[task_4][perf]") {
  grader::require_gpu();
  const std::size_t n = workbook::fit_in_free_memory(std::size_t(1) << 25, 3);
  const std::size_t staging_floats = std::size_t(1) << 21;  // 8 MiB
  Staged s(n, staging_floats, 1, "task 4 perf", false);
  // The kernel made as long as a pageable copy in: then the sequential version spends a third
  // of its time in each stage, and overlapping them can save up to two thirds.
  const double h2d_ms = stream_ms([&](cudaStream_t st) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(s.device_in.data(), s.in.data(), n * kFloat, cudaMemcpyHostToDevice, st));
  }, 3);
  s.work = work_for(s.device_in.data(), s.device_out.data(), n, h2d_ms);
  s.expected = transformed(std::vector<float>(s.in.data(), s.in.data() + n), s.work);
  const auto run = [&] {
    grader::GpuWait wait("process_pageable on " + s.text());
    s.run();
  };
  run();
  if (const std::string facts = host_output_errors(s.out, s.expected, "process_pageable on " + s.text()); !facts.empty()) {
    FAIL(facts << "A wrong result is not timed.");
  }
  const auto student = host_time(run, 5);
  // The sequential version: copy in, kernel, copy out, from and to the same pageable memory.
  workbook::Stream stream(cudaStreamNonBlocking);
  const auto sequential = host_time([&] {
    WORKBOOK_CUDA_CHECK(cudaMemcpy(s.device_in.data(), s.in.data(), n * kFloat, cudaMemcpyHostToDevice));
    streams::transform(s.device_in.data(), s.device_out.data(), n, s.work, stream.get());
    WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    WORKBOOK_CUDA_CHECK(cudaMemcpy(s.out.data(), s.device_out.data(), n * kFloat, cudaMemcpyDeviceToHost));
  }, 5);
  grader::record_metric("n", double(n));
  grader::record_metric("staging_floats", double(staging_floats));
  grader::record_metric("work", s.work);
  grader::record_metric("h2d_pageable_ms", h2d_ms);
  grader::record_metric("median_ms", student.median_ms);
  grader::record_metric("sequential_ms", sequential.median_ms);
  grader::record_metric("speedup_over_pageable_sequential", sequential.median_ms / student.median_ms);
}

// The contract (contracts.hpp) at every shape above, after one untraced call: a stream or event
// made once and kept for later calls is not left behind by each call; one made by every call is.
// It runs after the tests above, whose verdicts say more where they apply.
TEST_CASE("Task 4: process_pageable keeps its contract for any n and staging size", "[task_4]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = streams_grader::process_pageable_contract();
  for (const auto& [n, staging] : {std::pair{std::size_t(1), std::size_t(4096)}, std::pair{std::size_t(4099), std::size_t(5000)},
                                   std::pair{std::size_t(70001), std::size_t(4096)},
                                   std::pair{(std::size_t(1) << 20) + 3, std::size_t(1) << 16}}) {
    Staged s(n, staging, kCheckWork, "task 4 contract");
    CAPTURE(s.text());
    const grader::ContractCall call{"process_pageable(" + s.text() + ")",
                                    {},
                                    {{"host_in", s.in.data(), n * kFloat},
                                     {"host_out", s.out.data(), n * kFloat},
                                     {"staging", s.staging.data(), s.staging.size() * kFloat}},
                                    {{"n", double(n)}}};
    grader::require_contract_kept(contract, call, [&] { s.run(); });
  }
}
