// Grader tests for lesson 01 (vector add).
//
// Each task has a correctness test ([task_N]) and, where speed matters, a performance test
// ([task_N][perf]) that the driver runs only after the correctness test passed. Every
// output is poisoned before the launch and guarded on both sides, so unwritten elements and
// out-of-bounds writes are caught even when nothing crashes. A float addition is exact
// IEEE arithmetic on host and device, so results must match bit for bit.
#include "vector_add.hpp"

#include "contract.hpp"
#include "device_check.cuh"
#include "diagnosis.hpp"
#include "grader.hpp"
#include "output_matcher.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using grader::HintId;

namespace {

constexpr workbook::Tolerance kExact{0.0, 0.0};
constexpr std::size_t kLargeCorrectness = (std::size_t{1} << 26) + 7;  // 256 MiB per array, not a block multiple
constexpr std::size_t kPerformanceN = std::size_t{1} << 28;             // 1 GiB per array, far beyond L2

// The expected c[i]: the sum of the seeded streams a and b were filled with, in float as the
// kernel adds them, on the host or the device (device_check.cuh).
struct SumOfStreams {
  std::uint64_t seed_a, seed_b;
  WORKBOOK_HOST_DEVICE double operator()(std::size_t i) const {
    return workbook::random_uniform(seed_a, i, -1, 1) + workbook::random_uniform(seed_b, i, -1, 1);
  }
};

// a, b and c on the device (guarded), filled from seeded streams, and the expected c.
struct Problem {
  explicit Problem(std::size_t n)
      : a(n, workbook::kInputGuardBits),
        b(n, workbook::kInputGuardBits),
        c(n),
        sum{grader::seed_for("a" + std::to_string(n)), grader::seed_for("b" + std::to_string(n))} {
    a.fill_random(sum.seed_a);
    b.fill_random(sum.seed_b);
  }
  // The expected c on the host, computed the first time it is asked for (a right c never needs it).
  const std::vector<float>& expected() {
    if (expected_.size() != c.size()) {
      expected_.resize(c.size());
      for (std::size_t i = 0; i < c.size(); ++i) expected_[i] = static_cast<float>(sum(i));
    }
    return expected_;
  }
  workbook::GuardedDeviceArray a, b, c;
  SumOfStreams sum;

private:
  std::vector<float> expected_;
};

// Requires c to be a + b, bit for bit, with its guards intact: checked on the device; when
// anything is off, copied back and compared on the host for the report. \p threads: the
// launch's grid x block, the diagnosis's evidence.
void require_sum(Problem& p, long long threads = -1) {
  if (grader::agrees_on_device(p.c, kExact, p.sum)) return;
  REQUIRE_THAT(grader::read_back(p.c), grader::MatchesReference(p.expected(), kExact, threads));
}

int blocks_for(std::size_t n, int block) { return static_cast<int>((n + block - 1) / block); }

// Launches \p launch once on a mid-sized problem (\p what names that launch): an output nobody
// wrote ends the test as "wrote nothing", which the driver calls "not implemented yet" only when
// the task's code is still the skeleton.
template <class Launch>
void require_writes(const std::string& what, Launch launch) {
  Problem p(1000);
  const auto trace = grader::trace([&] {
    launch(p);
    grader::synchronize(what);  // inside: a launch that never ends is reported as such
  });
  const auto out = grader::read_back(p.c);
  const auto comparison = workbook::compare_to_reference(out.values.data(), p.expected().data(), 1000, kExact);
  if (grader::nothing_written(comparison, out.guards)) {
    grader::wrote_nothing(what + " ran and wrote nothing: " + grader::untouched_output("c", 1000), trace);
  }
}

// Times \p launch on n elements (3 arrays moved) and records bandwidth and its ratio to the
// measured copy bandwidth. The output is verified first: a wrong kernel is never timed.
template <class Launch>
void measure_bandwidth(Launch launch) {
  const std::size_t n = workbook::fit_in_free_memory(kPerformanceN, 3);
  CAPTURE(n);
  Problem p(n);
  launch(p, cudaStream_t{nullptr});
  grader::synchronize("the first launch at n = " + std::to_string(n));
  require_sum(p);

  const double bytes = 3.0 * n * sizeof(float);
  const double copy_gbps = workbook::copy_bandwidth_gbps_for_run();
  // One probe launch first: a pathologically slow kernel is measured once, not 20 times.
  workbook::MeasureOptions options;
  options.slow_ms = 200.0;
  options.profiled = true;  // the call a profiling run profiles (grader/driver/counters.py)
  const workbook::TimingStats stats = workbook::measure([&](cudaStream_t s) { launch(p, s); }, options);
  const double gbps = workbook::gigabytes_per_second(bytes, stats.median_ms);
  grader::record_metric("profiled_bytes", bytes);  // what the profiled call must move
  grader::record_metric("n", static_cast<double>(n));
  grader::record_metric("median_ms", stats.median_ms);
  grader::record_metric("gbps", gbps);
  grader::record_metric("copy_bandwidth_gbps", copy_gbps);
  grader::record_metric("fraction_of_copy_bandwidth", gbps / copy_gbps);
}

}  // namespace

TEST_CASE("Task 1: vector_add is correct for every size and block size", "[task_1]") {
  grader::require_gpu();
  require_writes("vector_add<<<4, 256>>> on n = 1000", [](Problem& p) {
    vector_add<<<blocks_for(1000, 256), 256>>>(p.a.data(), p.b.data(), p.c.data(), 1000);
    WORKBOOK_CHECK_LAUNCH();
  });
  const std::size_t large = workbook::fit_in_free_memory(kLargeCorrectness, 3);
  for (const int block : {256, 32, 1024, 96}) {
    for (const std::size_t n : grader::test_sizes(block, block == 256 ? large : 0)) {
      const int grid = blocks_for(n, block);
      CAPTURE(n, block, grid);
      Problem p(n);
      vector_add<<<grid, block>>>(p.a.data(), p.b.data(), p.c.data(), static_cast<int>(n));
      WORKBOOK_CHECK_LAUNCH();
      grader::synchronize("vector_add, n = " + std::to_string(n) + ", block " + std::to_string(block));
      require_sum(p, 1LL * grid * block);
    }
  }
}

TEST_CASE("Task 1: vector_add bandwidth", "[task_1][perf]") {
  grader::require_gpu();
  measure_bandwidth([](Problem& p, cudaStream_t s) {
    const int n = static_cast<int>(p.c.size());
    vector_add<<<blocks_for(n, 256), 256, 0, s>>>(p.a.data(), p.b.data(), p.c.data(), n);
  });
}

TEST_CASE("Task 2: vector_add_grid_stride is correct for grids smaller and larger than n", "[task_2]") {
  grader::require_gpu();
  require_writes("vector_add_grid_stride<<<2, 128>>> on n = 1000", [](Problem& p) {
    vector_add_grid_stride<<<2, 128>>>(p.a.data(), p.b.data(), p.c.data(), 1000);
    WORKBOOK_CHECK_LAUNCH();
  });
  const auto info = workbook::query_device(0);
  const std::size_t large = workbook::fit_in_free_memory(kLargeCorrectness, 3);
  for (const std::size_t n : grader::test_sizes(256, large)) {
    struct Launch { int grid, block; };
    std::vector<Launch> launches{{2 * info.sm_count, 256}, {blocks_for(n, 256), 256}, {blocks_for(n, 1024) + 3, 1024}};
    if (n <= (std::size_t{1} << 22)) launches.push_back({7, 96});   // few threads: long loops
    if (n <= (std::size_t{1} << 20)) launches.push_back({1, 32});   // a single warp does it all
    Problem p(n);  // one problem per size; c is poisoned again before each launch
    for (const Launch& l : launches) {
      CAPTURE(n, l.grid, l.block);
      p.c.enqueue_poison();  // the launch below is on the same (default) stream
      vector_add_grid_stride<<<l.grid, l.block>>>(p.a.data(), p.b.data(), p.c.data(), static_cast<int>(n));
      WORKBOOK_CHECK_LAUNCH();
      grader::synchronize("vector_add_grid_stride, n = " + std::to_string(n) + ", grid " + std::to_string(l.grid) +
                          ", block " + std::to_string(l.block));
      require_sum(p, 1LL * l.grid * l.block);
    }
  }
}

TEST_CASE("Task 2: vector_add_grid_stride bandwidth", "[task_2][perf]") {
  grader::require_gpu();
  const auto info = workbook::query_device(0);
  // One full wave: as many 256-thread blocks as the SMs can hold at once.
  const int grid = info.sm_count * (info.max_threads_per_sm / 256);
  measure_bandwidth([grid](Problem& p, cudaStream_t s) {
    vector_add_grid_stride<<<grid, 256, 0, s>>>(p.a.data(), p.b.data(), p.c.data(), static_cast<int>(p.c.size()));
  });
}

namespace {

// A host array with guard regions, like GuardedDeviceArray but in host memory: catches a
// cudaMemcpy of the wrong size into c.
struct HostArray {
  HostArray(std::size_t n, std::uint32_t guard_bits) : n(n), storage(n + 2 * kGuard), bits(guard_bits) {
    std::fill(storage.begin(), storage.end(), bits);
    std::fill(storage.begin() + kGuard, storage.begin() + kGuard + n, workbook::kPoisonBits);
  }
  float* data() { return reinterpret_cast<float*>(storage.data() + kGuard); }
  grader::DeviceOutput output() const {
    grader::DeviceOutput out;
    out.values.assign(reinterpret_cast<const float*>(storage.data() + kGuard),
                      reinterpret_cast<const float*>(storage.data() + kGuard + n));
    out.guards = workbook::inspect_guards({storage.begin(), storage.begin() + kGuard},
                                          {storage.begin() + kGuard + n, storage.end()}, bits);
    return out;
  }
  static constexpr std::size_t kGuard = 1024;
  std::size_t n;
  std::vector<std::uint32_t> storage;
  std::uint32_t bits;
};

// What vector_add_host did on the GPU, judged against what a round trip of n elements needs:
// a kernel, both inputs copied in, the result copied back after the kernel, and no device
// memory left behind. Returns "" when all of it happened, else what is missing, with the
// trace as evidence.
std::string round_trip_problems(const grader::Trace& t, std::size_t n) {
  const std::size_t array_bytes = n * sizeof(float);
  std::ostringstream problems;
  if (t.kernels.empty()) {
    problems << "\n- it launched no kernel: c was not computed on the GPU.";
  }
  const std::size_t in = t.bytes_copied(grader::CopyDirection::HostToDevice);
  if (in < 2 * array_bytes) {
    problems << "\n- it copied " << in << " bytes to the device; the inputs a and b are 2 x " << n << " x 4 = "
             << 2 * array_bytes << " bytes.";
  }
  const std::size_t out = t.bytes_copied(grader::CopyDirection::DeviceToHost);
  if (out > array_bytes) {
    problems << "\n- it copied " << out << " bytes back to the host, but c holds " << n << " x 4 = " << array_bytes
             << " bytes: the copy writes past the end of c.";
  }
  if (out < array_bytes) {
    problems << "\n- it copied " << out << " bytes back to the host; the result c is " << n << " x 4 = " << array_bytes
             << " bytes" << (out == 0 ? " (no device -> host copy at all)" : "") << ".";
  }
  if (!t.kernels.empty() && out >= array_bytes) {
    std::uint64_t last_kernel_end = 0, last_copy_start = 0;
    for (const auto& k : t.kernels) last_kernel_end = std::max(last_kernel_end, k.end_ns);
    for (const auto& c : t.copies) {
      if (c.direction == grader::CopyDirection::DeviceToHost) last_copy_start = std::max(last_copy_start, c.start_ns);
    }
    if (last_copy_start < last_kernel_end) {
      problems << "\n- the copy back to the host started before the kernel had finished, so it copied c before "
                  "the kernel wrote it: copy on the same stream as the launch (or wait for the kernel first).";
    }
  }
  const std::string text = problems.str();
  return text.empty() ? text : text + "\nWhat the grader saw on the GPU during the call:\n" + t.describe();
}

}  // namespace

TEST_CASE("Task 3: vector_add_host does the whole round trip", "[task_3]") {
  grader::require_gpu();
  // Runs vector_add_host on fresh inputs of n elements, under the tracer.
  struct Run {
    grader::DeviceOutput out;
    std::vector<float> expected;
    std::optional<grader::Trace> trace;
    grader::ContractCall call;
  };
  // Its contract (vector_add.hpp): any stream and any wait (a synchronous round trip is the
  // lesson), any data path (staging through pinned memory of its own is fine), and nothing left
  // behind.
  grader::Contract contract;
  contract.function = "vector_add_host";
  contract.streams = grader::Streams::Any;
  contract.waits = grader::Waits::Any;
  const auto run = [&](std::size_t n) {
    const std::vector<float> a = workbook::random_floats(n, grader::seed_for("host a" + std::to_string(n)));
    const std::vector<float> b = workbook::random_floats(n, grader::seed_for("host b" + std::to_string(n)));
    Run r;
    r.expected.resize(n);
    for (std::size_t i = 0; i < n; ++i) r.expected[i] = a[i] + b[i];
    HostArray c(n, workbook::kOutputGuardBits);
    {
      const grader::GpuWait wait("vector_add_host(n = " + std::to_string(n) + ")");
      r.trace = grader::trace([&] { vector_add_host(a.data(), b.data(), c.data(), static_cast<int>(n)); });
    }
    r.out = c.output();
    r.call = {"vector_add_host(a, b, c, " + std::to_string(n) + ")",
              {},
              {{"a", a.data(), n * sizeof(float)}, {"b", b.data(), n * sizeof(float)}, {"c", c.data(), n * sizeof(float)}},
              {{"n", double(n)}}};
    return r;
  };
  {
    const Run r = run(1000);
    const auto comparison = workbook::compare_to_reference(r.out.values.data(), r.expected.data(), 1000, kExact);
    const bool gpu_work = r.trace && (!r.trace->kernels.empty() || !r.trace->copies.empty());
    if (grader::nothing_written(comparison, r.out.guards) && !gpu_work) {
      grader::wrote_nothing("vector_add_host(a, b, c, 1000) returned and wrote nothing: " +
                                grader::untouched_output("c", 1000) + "; it ran nothing on the GPU", r.trace);
    }
  }
  const std::size_t large = workbook::fit_in_free_memory(kLargeCorrectness, 3);
  for (const std::size_t n : grader::test_sizes(256, large)) {
    CAPTURE(n);
    const Run r = run(n);
    if (r.trace) {
      const std::string problems = round_trip_problems(*r.trace, n);
      if (!problems.empty()) FAIL("vector_add_host(n = " << n << ") did not do the whole round trip:" << problems);
    }
    // c is host memory: only the copy back (or host code) writes it, never the kernel, so the
    // kernel's launch is no evidence about c's guards and is not given to the diagnosis.
    REQUIRE_THAT(r.out, grader::MatchesReference(r.expected, kExact));
    if (r.trace && r.trace->device_bytes_not_freed() > 0) {
      FAIL("vector_add_host(n = " << n << ") returned with " << r.trace->device_bytes_not_freed()
           << " bytes of device memory still allocated (" << r.trace->allocations_not_freed()
           << " allocation(s) never freed): called again and again, it would run the GPU out of memory. Free what "
              "you allocate (cudaFree), or use workbook::DeviceBuffer, which frees itself.");
    }
    grader::require_contract(contract, r.call, r.trace);  // every size: the checks above say more where they apply
  }
  SECTION("n = 0 is valid and does nothing") {
    float nothing = 0;
    std::exception_ptr thrown;
    const auto trace = grader::trace([&] { vector_add_host(&nothing, &nothing, &nothing, 0); }, thrown);
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
      FAIL("vector_add_host(n = 0) threw: " << what << "\nWith n = 0 there is nothing to add.\n"
           << (empty ? grader::hint(HintId::empty_grid, "it launched a grid of 0 blocks, which CUDA rejects: "
                                                        "return before launching when n == 0.")
                     : std::string()));
    }
  }
}
