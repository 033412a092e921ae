// Lesson 02, task 3: time_multiply_add, event timing of launch_multiply_add.
//
// What is checked: y afterwards; what the timer did (the tracer: warm-up plus samples launches,
// a recorded event between each timed launch and its neighbours, every record on the launches'
// stream); invalid sample counts throw; at 2^16 (launch-bound) and 2^26 (bandwidth-bound)
// elements, the median agrees with the helper library's event timer, the summary is of positive
// times and the call took at least as long as its launches. Its contract (contract.hpp): any
// stream, waits allowed (it reads its events), every event it creates given back.
#include "multiply_add_grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include "contract.hpp"
#include "diagnosis.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <vector>

using grader::HintId;
using namespace multiply_add_grader;

TEST_CASE("Task 3: time_multiply_add agrees with the helper library's event timer", "[task_3]") {
  grader::require_gpu();
  {
    Problem p(1000, "task 3 probe");
    workbook::TimingStats stats;
    std::optional<grader::Trace> trace;
    {
      const grader::GpuWait wait("time_multiply_add on n = 1000, the first call");
      trace = grader::trace(
          [&] { stats = time_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, 1, 3); });
    }
    if (stats.samples == 0 && stats.median_ms == 0 && stats.max_ms == 0) {
      grader::wrote_nothing("time_multiply_add(n = 1000, block 256, warm-up 1, 3 samples) returned an empty "
                            "result: 0 samples, median 0 ms, max 0 ms",
                            trace);
    }
    grader::synchronize("time_multiply_add on n = 1000");
    const auto out = grader::read_back(p.y);
    const auto comparison = workbook::compare_to_reference(out.values.data(), p.expected().data(), 1000, kFmaOrNot);
    if (!comparison.ok() || !out.guards.intact()) {
      FAIL("time_multiply_add ran, but y is wrong afterwards. It times launch_multiply_add, so task 2 must pass "
           "first (./grade 02 shows why it does not).\n" << grader::diagnose(comparison, out.guards, 1000));
    }
  }
  {
    // What the timer did: every launch it claims, and a start and a stop for each sample, on
    // the stream the kernels ran on. A single pair of events around all the samples gives a
    // plausible median (the total over the count) but no per-sample times.
    Problem p(1 << 16, "task 3 trace");
    constexpr int kWarmup = 2, kSamples = 7;
    const auto trace = grader::trace([&] {
      (void)time_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, kWarmup, kSamples);
    });
    if (trace) {
      const auto kernels = trace->kernels_named("multiply_add");
      std::vector<const grader::TracedCall*> records;
      for (const auto& c : trace->calls) {
        if ((c.name == "cudaEventRecord" || c.name == "cudaEventRecordWithFlags") && c.result == cudaSuccess) {
          records.push_back(&c);
        }
      }
      const std::string seen = "\nWhat the grader saw on the GPU during the call:\n" + trace->describe() +
                               "\n  event records: " + std::to_string(records.size());
      if (kernels.size() != static_cast<std::size_t>(kWarmup + kSamples)) {
        FAIL("time_multiply_add(warmup = " << kWarmup << ", samples = " << kSamples << ") launched multiply_add "
             << kernels.size() << " times; it should launch it " << kWarmup + kSamples << " times." << seen);
      }
      if (records.size() < static_cast<std::size_t>(kSamples + 1)) {
        FAIL("time_multiply_add(samples = " << kSamples << ") recorded " << records.size() << " CUDA events, but "
             << kSamples << " samples timed one by one need a start and a stop each (at least " << kSamples + 1
             << " records, " << 2 * kSamples << " with a pair per sample). With fewer, the samples cannot have "
             "been timed separately, so the median, minimum and maximum are not those of the samples." << seen);
      }
      // Each timed launch lies between two records: one since the launch before it (its start)
      // and one before the launch after it (its stop), in call order.
      std::vector<std::size_t> launch_at, record_at;
      for (std::size_t i = 0; i < trace->calls.size(); ++i) {
        const grader::TracedCall& c = trace->calls[i];
        if (grader::is_kernel_launch(c.name)) launch_at.push_back(i);
        if ((c.name == "cudaEventRecord" || c.name == "cudaEventRecordWithFlags") && c.result == cudaSuccess) {
          record_at.push_back(i);
        }
      }
      const auto recorded_between = [&](long long from, long long to) {  // both ends excluded
        return std::any_of(record_at.begin(), record_at.end(), [&](std::size_t r) {
          return from < static_cast<long long>(r) && static_cast<long long>(r) < to;
        });
      };
      const std::size_t first_timed = launch_at.size() > kSamples ? launch_at.size() - kSamples : 0;
      for (std::size_t j = first_timed; j < launch_at.size(); ++j) {
        const long long at = static_cast<long long>(launch_at[j]);
        const long long previous = j == 0 ? -1 : static_cast<long long>(launch_at[j - 1]);
        const long long next = j + 1 < launch_at.size() ? static_cast<long long>(launch_at[j + 1])
                                                         : static_cast<long long>(trace->calls.size());
        const bool started = recorded_between(previous, at);
        const bool stopped = recorded_between(at, next);
        if (!started || !stopped) {  // no successful record between this launch and its neighbour
          FAIL("time_multiply_add's timed launch " << j - first_timed + 1 << " of " << kSamples << " has no event "
               "recorded " << (!started ? "between the launch before it and itself" : "between itself and the next "
               "launch") << ", so no pair of events encloses it.\n"
               << grader::hint(HintId::timer_events_misplaced, "an event pair times what is enqueued between its "
                               "two records: each sample is record(start), launch, record(stop), in that order, on "
                               "the launch's stream.") << seen);
        }
      }
      const cudaStream_t launched_on = kernels.empty() ? nullptr : kernels[0].stream;
      const auto same_stream = [](cudaStream_t a, cudaStream_t b) {
        return a == b || (grader::is_default_stream(a) && grader::is_default_stream(b) &&
                          (a == cudaStreamPerThread) == (b == cudaStreamPerThread));
      };
      for (const grader::TracedCall* r : records) {
        if (!same_stream(r->stream, launched_on)) {
          FAIL("time_multiply_add recorded an event on " << grader::stream_text(r->stream) << " while the kernels "
               "ran on " << grader::stream_text(launched_on) << ": an event times the work of its own stream." << seen);
        }
      }
    }
  }
  SECTION("invalid sample counts are errors") {
    Problem p(1000, "task 3 invalid");
    CHECK_THROWS_AS(time_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, 1, 0),
                    std::exception);
    CHECK_THROWS_AS(time_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, -1, 5),
                    std::exception);
    (void)cudaGetLastError();
  }
  SECTION("the median matches the helper's, at a launch-bound and a bandwidth-bound size") {
    // 2^16 elements: a few microseconds, mostly launch overhead. 2^26: about 0.2 ms on an
    // H200, long enough that a host clock read without waiting for the GPU is far off.
    const std::size_t big = workbook::fit_in_free_memory(std::size_t{1} << 26, 3);
    const std::size_t sizes[] = {std::size_t{1} << 16, big};
    for (const std::size_t n : sizes) {
      if (grader::sanitize_mode() && n > (std::size_t{1} << 16)) continue;  // timings mean nothing there
      Problem p(n, "task 3 timing");
      const LaunchConfig config{256, 0};
      constexpr int kWarmup = 3, kSamples = 25;
      workbook::TimingStats student, helper;
      double wall_ms = 0;
      bool agree = false;
      for (int attempt = 0; attempt < 2 && !agree; ++attempt) {  // one retry absorbs a noisy moment
        p.y.poison();
        WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
        const auto t0 = std::chrono::steady_clock::now();
        student = time_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), config, kWarmup, kSamples);
        WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
        wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        workbook::TimingOptions options;
        options.warmup = kWarmup;
        options.samples = kSamples;
        helper = workbook::time_on_device([&](cudaStream_t s) {
          launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), config, s);
        }, options);
        agree = std::abs(student.median_ms - helper.median_ms) <= 0.15 * helper.median_ms + 0.003;
      }
      CAPTURE(n, student.median_ms, student.min_ms, student.max_ms, student.samples, helper.median_ms, wall_ms);
      check_output(p);
      if (student.samples != kSamples) {
        FAIL("time_multiply_add(samples = " << kSamples << ") reported " << student.samples << " samples.");
      }
      if (!(student.min_ms > 0 && student.min_ms <= student.median_ms && student.median_ms <= student.max_ms)) {
        FAIL("the result is not a summary of positive times: expected 0 < min <= median <= max, got min "
             << student.min_ms << ", median " << student.median_ms << ", max " << student.max_ms
             << " ms. workbook::summarize_ms(times) computes all three from the samples.");
      }
      if (grader::sanitize_mode()) continue;
      if (!agree) {
        // The events were checked above (count, stream, order); what is left is a fact, not a cause.
        FAIL("time_multiply_add's median is " << student.median_ms << " ms, but the helper library's event timer "
             << "measures " << helper.median_ms << " ms for the same launch (n = " << n << "): "
             << (student.median_ms < helper.median_ms ? "too short" : "too long") << ".");
      }
      // kWarmup + kSamples launches really ran: the call cannot take less wall time than them.
      const double floor_ms = 0.8 * (kWarmup + kSamples) * helper.median_ms;
      if (n == big && wall_ms < floor_ms) {
        FAIL("time_multiply_add returned after " << wall_ms << " ms, but " << kWarmup + kSamples << " launches of "
             << helper.median_ms << " ms each take at least " << floor_ms << " ms: not every sample was launched.");
      }
    }
  }
}

// ============================ The contract, at every size ============================
// What multiply_add.hpp promises of time_multiply_add, as grader::Contract
// (grader/support/contract.hpp), held against a traced call at two sizes, after one untraced
// call. This runs after the test above, whose verdicts say more where they apply.

TEST_CASE("Task 3: time_multiply_add keeps its contract for every size", "[task_3]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  // It must wait for its events to read them, on whichever stream it times; it gives back every
  // event it creates.
  grader::Contract contract;
  contract.function = "time_multiply_add";
  contract.streams = grader::Streams::Any;
  contract.waits = grader::Waits::Any;
  for (const std::size_t n : {std::size_t(1000), (std::size_t(1) << 20) + 3}) {
    Problem p(n, "task 3 contract");
    const std::string text = "time_multiply_add(n = " + std::to_string(n) + ", block 256, grid auto, 1 warm-up, 3 samples)";
    CAPTURE(text);
    grader::require_contract_kept(contract, {text, {}, {}, {{"n", double(n)}}}, [&] {
      (void)time_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, 1, 3);
    });
  }
}
