// Grader tests for lesson 02 (y = x1*x2 + B: launch configurations and event timing).
//
// Task 1 launches the student's kernel directly with every block size from 32 to 1024 and
// grids from one block to more than n needs; task 2 calls the launcher with valid and
// invalid configurations and checks it honours its stream; task 3 compares the student's
// event timing with the helper library's timer on the same launches. Outputs are poisoned
// and guarded as in lesson 01. The device may fuse x1*x2 + b into one FMA (one rounding)
// or not (two): the tolerance admits both and nothing else.
#include "multiply_add.hpp"

#include "diagnosis.hpp"
#include "grader.hpp"
#include "output_matcher.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <string>
#include <vector>

namespace {

// |x1*x2| <= 1 and |b| <= 4, so either rounding is within a few 1e-7 of the exact value.
constexpr workbook::Tolerance kFmaOrNot{1e-6, 1e-6};
constexpr std::size_t kLargeCorrectness = (std::size_t{1} << 26) + 7;  // 256 MiB per array, not a block multiple
constexpr std::size_t kPerformanceN = std::size_t{1} << 28;             // 1 GiB per array, far beyond L2
constexpr const char* kExercise = "exercises/02_multiply_add/multiply_add.cu";

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

void check_output(Problem& p) {
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  REQUIRE_THAT(grader::read_back(p.y), grader::MatchesReference(p.expected, kFmaOrNot));
}

// True when \p run wrote nothing at all into y: the task is still the untouched skeleton.
template <class Run>
bool writes_nothing(Run run) {
  Problem p(1000, "probe");
  run(p);
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  const auto out = grader::read_back(p.y);
  const auto comparison = workbook::compare_to_reference(out.values.data(), p.expected.data(), 1000, kFmaOrNot);
  return grader::nothing_written(comparison, out.guards);
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
  if (writes_nothing([](Problem& p) { multiply_add<<<4, 128>>>(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n()); })) {
    grader::not_implemented(std::string("multiply_add wrote no element of y (TODO(task 1) in ") + kExercise + ")");
  }
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
        check_output(p);
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
  if (writes_nothing([](Problem& p) { launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}); })) {
    grader::not_implemented(std::string("launch_multiply_add(n = 1000, block 256, grid auto) wrote no element of y "
                                        "(TODO(task 2) in ") + kExercise + ")");
  }
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
      launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), c);
      check_output(p);
    }
  }
  SECTION("n = 0 is valid and launches nothing") {
    Problem p(1, "task 2 n = 0");
    try {
      launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), 0, {256, 0});
      WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
    } catch (const std::exception& e) {
      FAIL("launch_multiply_add(n = 0) threw: " << e.what()
                                                 << "\nHint: with n = 0 there is nothing to do. A grid of 0 blocks is "
                                                    "an invalid configuration, so return before launching.");
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
    if (!threw) {
      FAIL("launch_multiply_add with " << c.what << " returned as if it had launched"
           << (pending != cudaSuccess ? std::string(", but CUDA had rejected the launch: ") + cudaGetErrorName(pending)
                                      : std::string())
           << ".\nHint: check the configuration before launching and throw std::invalid_argument with a message "
              "that says what is wrong; WORKBOOK_CHECK_LAUNCH() after the launch catches what CUDA itself rejects.");
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
    FAIL("launch_multiply_add(..., stream) did not launch exactly one kernel on that stream"
         << (error.empty() ? std::string() : " (it threw: " + error + ")")
         << (end != cudaSuccess ? std::string(" (stream capture failed: ") + cudaGetErrorName(end) + ")" : std::string())
         << ", captured launches: " << nodes
         << ".\nHint: pass the stream as the fourth launch parameter, multiply_add<<<grid, block, 0, stream>>>(...), "
            "and do not synchronize inside the launcher.");
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
    const auto stats = time_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, 1, 3);
    if (stats.samples == 0 && stats.median_ms == 0 && stats.max_ms == 0) {
      grader::not_implemented(std::string("time_multiply_add returned no samples (TODO(task 3) in ") + kExercise + ")");
    }
    WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
    const auto out = grader::read_back(p.y);
    const auto comparison = workbook::compare_to_reference(out.values.data(), p.expected.data(), 1000, kFmaOrNot);
    if (!comparison.ok() || !out.guards.intact()) {
      FAIL("time_multiply_add ran, but y is wrong afterwards. It times launch_multiply_add, so task 2 must pass "
           "first (./grade 02 shows why it does not).\n" << grader::diagnose(comparison, out.guards, 1000));
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
             << " ms.\nHint: workbook::summarize_ms(times) fills all three from the samples.");
      }
      if (grader::sanitize_mode()) continue;
      if (!agree) {
        FAIL("time_multiply_add's median is " << student.median_ms << " ms, but the helper library's event timer "
             << "measures " << helper.median_ms << " ms for the same launch (n = " << n << ").\nHint: "
             << (student.median_ms < 0.5 * helper.median_ms
                     ? "too short: is the time read on the host before the GPU finished (events synchronized?), "
                       "or converted from milliseconds by mistake?"
                     : "too long: is it the total over all samples instead of the median of per-sample times, are "
                       "warm-up launches or allocations inside the timed region, or is it in the wrong unit?"));
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
