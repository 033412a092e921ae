// Grader tests for lesson 02 (y = x1*x2 + B: launch configurations and event timing).
//
// Task 1 launches the student's kernel directly with every block size from 32 to 1024 and
// grids from one block to more than n needs; task 2 calls the launcher with valid and
// invalid configurations and checks it honours its stream; task 3 compares the student's
// event timing with the helper library's timer on the same launches. Outputs are poisoned
// and guarded as in lesson 01. The device may fuse x1*x2 + b into one FMA (one rounding)
// or not (two): the tolerance admits both and nothing else.
#include "multiply_add.hpp"

#include "contract.hpp"
#include "diagnosis.hpp"
#include "grader.hpp"
#include "output_matcher.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <cmath>
#include <exception>
#include <string>
#include <vector>

using grader::HintId;

namespace {

// |x1*x2| <= 1 and |b| <= 4, so either rounding is within a few 1e-7 of the exact value.
constexpr workbook::Tolerance kFmaOrNot{1e-6, 1e-6};
constexpr std::size_t kLargeCorrectness = (std::size_t{1} << 26) + 7;  // 256 MiB per array, not a block multiple
constexpr std::size_t kPerformanceN = std::size_t{1} << 28;             // 1 GiB per array, far beyond L2

// x1, x2 and y on the device (guarded), a random b, and the expected y computed on the host
// in double precision from the same seeded streams the device filled x1 and x2 with.
struct Problem {
  Problem(std::size_t n, const std::string& name)
      : x1(n, workbook::kInputGuardBits), x2(n, workbook::kInputGuardBits), y(n), expected(n) {
    const std::uint64_t seed1 = grader::seed_for("x1 " + name + std::to_string(n));
    const std::uint64_t seed2 = grader::seed_for("x2 " + name + std::to_string(n));
    // Never 0, so a kernel that forgets b is caught.
    b = workbook::random_uniform(grader::seed_for("b " + name + std::to_string(n)), 0, 0.5f, 4.0f);
    if (workbook::mix64(seed1) % 2 == 0) b = -b;
    x1.fill_random(seed1);
    x2.fill_random(seed2);
    for (std::size_t i = 0; i < n; ++i) {
      const double v1 = workbook::random_uniform(seed1, i, -1, 1);
      const double v2 = workbook::random_uniform(seed2, i, -1, 1);
      expected[i] = static_cast<float>(v1 * v2 + b);
    }
  }
  int n() const { return static_cast<int>(y.size()); }
  workbook::GuardedDeviceArray x1, x2, y;
  float b = 0;
  std::vector<float> expected;
};

int blocks_for(std::size_t n, int block) { return static_cast<int>((n + block - 1) / block); }

// One full wave: every SM holding as many blocks of \p block threads as it can at once.
int full_wave(int block) {
  static const workbook::DeviceInfo info = workbook::query_device(0);
  int per_sm = 0;
  WORKBOOK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, multiply_add, block, 0));
  return std::max(per_sm, 1) * info.sm_count;
}

// Waits for the GPU and checks y; \p threads is the launch's grid x block when known.
void check_output(Problem& p, long long threads = -1) {
  grader::synchronize("multiply_add on n = " + std::to_string(p.n()));
  REQUIRE_THAT(grader::read_back(p.y), grader::MatchesReference(p.expected, kFmaOrNot, threads));
}

int sm_count() {
  static const int count = workbook::query_device(0).sm_count;
  return count;
}

// What the launcher launched, against what it was asked for: exactly one multiply_add, the
// block given, and the grid given or, for auto, the documented range: at most (n + block - 1)
// / block blocks (none idle) and at least min(SM count, that) (every SM busy when n allows).
// Returns "" when right, else what is wrong with the trace as evidence; \p threads receives
// the kernel's grid x block.
std::string launch_problems(const grader::Trace& t, int n, const LaunchConfig& c, long long& threads) {
  const auto kernels = t.kernels_named("multiply_add");
  std::ostringstream out;
  if (kernels.size() != 1 || t.kernels.size() != 1) {
    out << "it launched " << t.kernels.size() << " kernel(s), " << kernels.size()
        << " of them multiply_add: one call launches multiply_add once.";
  } else {
    const grader::TracedKernel& k = kernels[0];
    threads = 1LL * k.grid.x * k.block.x;
    const long long needed = (static_cast<long long>(n) + c.block - 1) / c.block;
    const long long least = std::min<long long>(needed, sm_count());
    if (k.block.x != static_cast<unsigned>(c.block) || k.block.y != 1 || k.block.z != 1) {
      out << "it was asked for blocks of " << c.block << " threads and launched " << grader::launch_text(k) << ".";
    } else if (c.grid > 0 && k.grid.x != static_cast<unsigned>(c.grid)) {
      out << "it was asked for a grid of " << c.grid << " blocks and launched " << grader::launch_text(k) << ".";
    } else if (c.grid == 0 && (k.grid.x > needed || k.grid.x < least)) {
      out << "with grid = 0 (auto) it launched " << grader::launch_text(k) << " for n = " << n
          << ". An auto grid has at most (n + block - 1) / block = " << needed << " blocks (no block without work) "
          << "and at least " << least << " (one per SM, " << sm_count() << " here, when n allows).";
    } else if (k.stream_known && !grader::is_default_stream(k.stream)) {
      out << "it was called without a stream (the default stream) and launched on " << grader::stream_text(k.stream)
          << ".";
    }
  }
  const std::string text = out.str();
  return text.empty() ? text : text + "\nWhat the grader saw on the GPU during the call:\n" + t.describe();
}

// Runs \p run once on n = 1000 (\p what names the call): an output nobody wrote ends the test as
// "wrote nothing", which the driver calls "not implemented yet" only when the task's code is
// still the skeleton.
template <class Run>
void require_writes(const std::string& what, Run run) {
  Problem p(1000, "probe");
  const auto trace = grader::trace([&] {
    run(p);
    grader::synchronize(what);  // inside: a launch that never ends is reported as such
  });
  const auto out = grader::read_back(p.y);
  const auto comparison = workbook::compare_to_reference(out.values.data(), p.expected.data(), 1000, kFmaOrNot);
  if (grader::nothing_written(comparison, out.guards)) {
    grader::wrote_nothing(what + " ran and wrote nothing: " + grader::untouched_output("y", 1000), trace);
  }
}

// Times \p launch on \p p (12 bytes per element moved) with the helper library's timer: one
// probe launch first, so a pathologically slow kernel is measured once, not 20 times.
template <class Launch>
workbook::TimingStats time_launch(Launch launch) {
  workbook::TimingOptions options;
  options.warmup = 0;
  options.samples = 1;
  workbook::TimingStats stats = workbook::time_on_device(launch, options);
  if (stats.median_ms < 200.0) {
    options.warmup = 3;
    options.samples = 15;
    stats = workbook::time_on_device(launch, options);
  }
  return stats;
}

void record_bandwidth(std::size_t n, const workbook::TimingStats& stats) {
  const double gbps = workbook::gigabytes_per_second(12.0 * n, stats.median_ms);
  const double copy_gbps = workbook::copy_bandwidth_gbps_for_run();
  grader::record_metric("n", static_cast<double>(n));
  grader::record_metric("median_ms", stats.median_ms);
  grader::record_metric("gbps", gbps);
  grader::record_metric("copy_bandwidth_gbps", copy_gbps);
  grader::record_metric("fraction_of_copy_bandwidth", gbps / copy_gbps);
}

}  // namespace

TEST_CASE("Task 1: multiply_add is correct for every block size and grid", "[task_1]") {
  grader::require_gpu();
  require_writes("multiply_add<<<4, 128>>> on n = 1000",
                 [](Problem& p) { multiply_add<<<4, 128>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n()); });
  const auto info = workbook::query_device(0);
  const std::size_t large = workbook::fit_in_free_memory(kLargeCorrectness, 3);
  for (const int block : {256, 32, 64, 128, 512, 1024, 96, 1000}) {
    for (const std::size_t n : grader::test_sizes(block, block == 256 ? large : 0)) {
      // Exactly enough blocks, more than enough, one wave, and grids far smaller than n.
      std::vector<int> grids{blocks_for(n, block), blocks_for(n, block) + 3, info.sm_count};
      if (n <= (std::size_t{1} << 22)) grids.push_back(7);
      if (n <= (std::size_t{1} << 20)) grids.push_back(1);
      Problem p(n, "task 1 block " + std::to_string(block));
      for (const int grid : grids) {
        CAPTURE(n, block, grid, p.b);
        p.y.poison();
        multiply_add<<<grid, block>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n());
        WORKBOOK_CHECK_LAUNCH();
        check_output(p, 1LL * grid * block);
      }
    }
  }
}

TEST_CASE("Task 1: multiply_add bandwidth, best launch configuration", "[task_1][perf]") {
  grader::require_gpu();
  const std::size_t n = workbook::fit_in_free_memory(kPerformanceN, 3);
  Problem p(n, "task 1 perf");
  struct Config { int block, grid; const char* mode; };
  std::vector<Config> configs;
  for (const int block : {128, 256, 512, 1024}) {
    configs.push_back({block, blocks_for(n, block), "cover"});
    configs.push_back({block, full_wave(block), "wave"});
  }
  // A wrong kernel is never timed: the output of the first configuration is checked before
  // any timing, that of the last one after it (the correctness test covered every shape).
  multiply_add<<<configs.front().grid, configs.front().block>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n());
  WORKBOOK_CHECK_LAUNCH();
  check_output(p);
  workbook::TimingStats best;
  Config best_config{};
  for (const Config& c : configs) {
    const auto stats = time_launch([&](cudaStream_t s) {
      multiply_add<<<c.grid, c.block, 0, s>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n());
    });
    if (best.samples == 0 || stats.median_ms < best.median_ms) {
      best = stats;
      best_config = c;
    }
  }
  p.y.poison();
  const Config& last = configs.back();
  multiply_add<<<last.grid, last.block>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n());
  WORKBOOK_CHECK_LAUNCH();
  check_output(p);
  grader::record_metric("best_block", best_config.block);
  grader::record_metric("best_grid", best_config.grid);
  record_bandwidth(n, best);
}

TEST_CASE("Task 2: launch_multiply_add launches valid configurations correctly", "[task_2]") {
  grader::require_gpu();
  require_writes("launch_multiply_add(n = 1000, block 256, grid auto)", [](Problem& p) {
    launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0});
  });
  const std::size_t large = workbook::fit_in_free_memory(kLargeCorrectness, 3);
  for (const std::size_t n : grader::test_sizes(256, large)) {
    Problem p(n, "task 2");
    std::vector<LaunchConfig> configs;
    for (const int block : {32, 64, 128, 256, 512, 1024, 96}) configs.push_back({block, 0});  // auto grids
    configs.push_back({256, blocks_for(n, 256)});
    if (n <= (std::size_t{1} << 22)) configs.push_back({128, 5});  // a grid far smaller than n needs
    for (const LaunchConfig& c : configs) {
      CAPTURE(n, c.block, c.grid, p.b);
      p.y.poison();
      const auto trace = grader::trace([&] { launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), c); });
      long long threads = -1;
      if (trace) {
        const std::string problems = launch_problems(*trace, p.n(), c, threads);
        if (!problems.empty()) {
          FAIL("launch_multiply_add(n = " << n << ", block " << c.block << ", grid " << c.grid << ") launched the "
               << "wrong thing: " << problems);
        }
      }
      check_output(p, threads);
    }
  }
  SECTION("n = 0 is valid and launches nothing") {
    Problem p(1, "task 2 n = 0");
    std::exception_ptr thrown;
    const auto trace = grader::trace(
        [&] { launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), 0, {256, 0}); }, thrown);
    if (thrown) {
      std::string what = "an exception that is not a std::exception";
      try {
        std::rethrow_exception(thrown);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      // The tracer saw the launch it made: a grid of 0 blocks is what CUDA rejected.
      const grader::TracedCall* empty = trace ? trace->empty_grid_launch() : nullptr;
      FAIL("launch_multiply_add(n = 0) threw: " << what << "\nWith n = 0 there is nothing to do.\n"
           << (empty ? grader::hint(HintId::launcher_empty_grid, "it launched a grid of 0 blocks, which CUDA "
                                                                 "rejects: return before launching when n == 0.")
                     : std::string()));
    }
    if (trace && !trace->kernels.empty()) {
      FAIL("launch_multiply_add(n = 0) launched " << trace->kernels.size() << " kernel(s); with nothing to do it "
           "launches nothing.\n" << trace->describe());
    }
  }
}

TEST_CASE("Task 2: launch_multiply_add rejects invalid configurations with an error", "[task_2]") {
  grader::require_gpu();
  Problem p(1000, "task 2 invalid");
  struct Invalid { int n; LaunchConfig config; const char* what; };
  const Invalid cases[] = {
      {1000, {2048, 0}, "block = 2048 threads (the maximum is 1024)"},
      {1000, {0, 0}, "block = 0 threads"},
      {1000, {-32, 0}, "block = -32 threads"},
      {1000, {256, -1}, "grid = -1 blocks"},
      {-5, {256, 0}, "n = -5"},
  };
  for (const Invalid& c : cases) {
    CAPTURE(c.what);
    bool threw = false;
    try {
      launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), c.n, c.config);
    } catch (const std::exception&) {
      threw = true;
    }
    const cudaError_t pending = cudaGetLastError();  // clears an error a launch left behind
    if (!threw) {  // an impossible configuration returned without an exception
      FAIL("launch_multiply_add with " << c.what << " returned as if it had launched"
           << (pending != cudaSuccess ? std::string(", but CUDA had rejected the launch: ") + cudaGetErrorName(pending)
                                      : std::string())
           << ".\n" << grader::hint(HintId::launcher_no_validation, "it returned normally for a configuration that "
           "cannot run: check the configuration before launching and throw std::invalid_argument with a message "
              "that says what is wrong; WORKBOOK_CHECK_LAUNCH() after the launch catches what CUDA itself rejects."));
    }
  }
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST_CASE("Task 2: launch_multiply_add launches on the stream it is given", "[task_2]") {
  grader::require_gpu();
  Problem p(1 << 16, "task 2 stream");
  workbook::Stream stream(cudaStreamNonBlocking);
  // Capture the stream into a CUDA graph: a launch on this stream becomes a node of the
  // graph; a launch anywhere else does not.
  WORKBOOK_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeRelaxed));
  std::string error;
  try {
    launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, stream.get());
  } catch (const std::exception& e) {
    error = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream.get(), &graph);
  (void)cudaGetLastError();
  std::size_t nodes = 0;
  if (graph != nullptr) {
    WORKBOOK_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    if (nodes == 1) {  // run what was captured and check it did the work
      cudaGraphExec_t exec = nullptr;
      p.y.poison();
      WORKBOOK_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      WORKBOOK_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
      stream.synchronize();
      WORKBOOK_CUDA_CHECK(cudaGraphExecDestroy(exec));
    }
    WORKBOOK_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  if (!error.empty() || end != cudaSuccess || nodes != 1) {
    // Where did the kernel go? The same call, traced outside the capture, shows its stream.
    std::string elsewhere;
    if (error.empty() && end == cudaSuccess && nodes == 0) {
      const auto t = grader::trace(
          [&] { launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, stream.get()); });
      for (const auto& k : t ? t->program_kernels() : std::vector<grader::TracedKernel>{}) {
        if (k.stream_known && k.stream != stream.get()) elsewhere = grader::stream_text(k.stream);
      }
    }
    FAIL("launch_multiply_add(..., stream) did not launch exactly one kernel on that stream"
         << (error.empty() ? std::string() : " (it threw: " + error + ")")
         << (end != cudaSuccess ? std::string(" (stream capture failed: ") + cudaGetErrorName(end) + ")" : std::string())
         << ", captured launches: " << nodes << ".\n"
         // Nothing captured, nothing thrown, the capture intact: the kernel went to another stream.
         << (!elsewhere.empty()
                 ? grader::hint(HintId::launcher_stream, "it launched on " + elsewhere + " instead of the stream it "
                                                         "was given: pass the stream as the fourth launch parameter, "
                                                         "multiply_add<<<grid, block, 0, stream>>>(...).")
                 : std::string()));
  }
  check_output(p);
}

TEST_CASE("Task 2: launch_multiply_add bandwidth with an auto grid", "[task_2][perf]") {
  grader::require_gpu();
  const std::size_t n = workbook::fit_in_free_memory(kPerformanceN, 3);
  Problem p(n, "task 2 perf");
  launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0});
  check_output(p);
  const auto stats = time_launch([&](cudaStream_t s) {
    launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, s);
  });
  record_bandwidth(n, stats);
}

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
    const auto comparison = workbook::compare_to_reference(out.values.data(), p.expected.data(), 1000, kFmaOrNot);
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

// ============================ Contracts, at every shape ============================
// What multiply_add.hpp promises of the two host functions, as grader::Contract
// (grader/support/contract.hpp), held against a traced call at several sizes and configurations,
// after one untraced call. These run after the tests above, whose verdicts say more where they
// apply.

TEST_CASE("Task 2: launch_multiply_add keeps its contract for every size and configuration", "[task_2]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  // Everything on the stream it is given; it returns without waiting; nothing left behind.
  const grader::Contract contract = grader::given_stream_contract("launch_multiply_add");
  workbook::Stream stream(cudaStreamNonBlocking);
  // The correctness tests' sizes, the large one included: a launcher that honours its stream only
  // below some size is caught at that size.
  const std::size_t large = workbook::fit_in_free_memory(kLargeCorrectness, 3);
  for (const std::size_t n : grader::test_sizes(256, large)) {
    Problem p(n, "task 2 contract");
    for (const LaunchConfig config : {LaunchConfig{256, 0}, LaunchConfig{128, 7}, LaunchConfig{1024, 0}}) {
      const std::string text = "launch_multiply_add(n = " + std::to_string(n) + ", block " +
                               std::to_string(config.block) + ", grid " +
                               (config.grid ? std::to_string(config.grid) : std::string("auto")) + ", stream)";
      CAPTURE(text);
      grader::require_contract_kept(contract, {text, {stream.get()}, {}, {{"n", double(n)}}}, [&] {
        launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), config, stream.get());
      });
    }
  }
}

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
