// The helper library on a real GPU. Every case skips (visibly) where there is none.
#include "gpu.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

__global__ void write_range(float* out, int first, int last, float value) {
  const int i = first + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= last) out[i] = value;
}

__global__ void spin_ns(unsigned ns) { __nanosleep(ns); }

// Busy for \p cycles of the SM's clock: the same time on every run, unlike __nanosleep.
__global__ void spin_cycles(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void empty_kernel() {}

}  // namespace

TEST_CASE("DeviceBuffer round-trips data and moves ownership", "[gpu]") {
  REQUIRE_GPU();
  std::vector<int> host{1, 2, 3, 4, 5};
  workbook::DeviceBuffer<int> a(host.size());
  a.copy_from_host(host.data());
  workbook::DeviceBuffer<int> b = std::move(a);
  CHECK(a.data() == nullptr);
  CHECK(a.size() == 0);
  CHECK(b.size() == 5);
  CHECK(b.bytes() == 5 * sizeof(int));
  std::vector<int> back(5);
  b.copy_to_host(back.data());
  CHECK(back == host);
}

TEST_CASE("PinnedBuffer is host memory the device can copy from", "[gpu]") {
  REQUIRE_GPU();
  workbook::PinnedBuffer<float> pinned(256);
  for (int i = 0; i < 256; ++i) pinned[i] = static_cast<float>(i);
  workbook::DeviceBuffer<float> device(256);
  device.copy_from_host(pinned.data());
  std::vector<float> back(256);
  device.copy_to_host(back.data());
  CHECK(back[255] == 255.0f);
}

TEST_CASE("device and host random streams are identical", "[gpu]") {
  REQUIRE_GPU();
  const std::size_t n = 100003;
  // [-3, 5): a power-of-two width, exact however it is rounded; [-1000, 1000) and [0.5, 4): widths
  // whose product with the unit value rounds, where a fused multiply-add would differ.
  for (const auto& [lo, hi] : {std::pair{-3.0f, 5.0f}, std::pair{-1000.0f, 1000.0f}, std::pair{0.5f, 4.0f}}) {
    CAPTURE(lo, hi);
    workbook::DeviceBuffer<float> device(n);
    workbook::fill_random_device(device.data(), n, 1234, lo, hi);
    std::vector<float> from_device(n);
    device.copy_to_host(from_device.data());
    CHECK(from_device == workbook::random_floats(n, 1234, lo, hi));
  }
}

TEST_CASE("a guarded array catches writes past either end", "[gpu]") {
  REQUIRE_GPU();
  workbook::GuardedDeviceArray out(1000, workbook::kOutputGuardBits, 4096);
  write_range<<<1, 1024>>>(out.data(), 0, 999, 1.0f);
  WORKBOOK_CHECK_LAUNCH();
  CHECK(out.check_guards().intact());
  const auto values = out.download();
  CHECK(values[999] == 1.0f);

  write_range<<<1, 64>>>(out.data(), 1000, 1010, 2.0f);  // 11 past the end
  write_range<<<1, 32>>>(out.data(), -2, -1, 2.0f);      // 2 before the start
  WORKBOOK_CHECK_LAUNCH();
  const auto report = out.check_guards();
  CHECK(report.written_after == 11);
  CHECK(report.farthest_after == 10);
  CHECK(report.written_before == 2);

  // The values and the guards in one copy say what the two copies say.
  workbook::GuardReport together;
  const auto both = out.download(together);
  CHECK(both == out.download());
  CHECK(together.written_after == 11);
  CHECK(together.farthest_after == 10);
  CHECK(together.written_before == 2);
  CHECK(together.farthest_before == 1);

  out.poison();
  CHECK(out.check_guards().intact());
  const auto poisoned = out.download();
  CHECK(workbook::is_poison(poisoned[0]));
  CHECK(workbook::is_poison(poisoned[999]));

  // Enqueued, the poison lands before a kernel launched after it on the default stream.
  write_range<<<1, 1024>>>(out.data(), -3, 1002, 5.0f);
  out.enqueue_poison();
  write_range<<<1, 32>>>(out.data(), 0, 9, 4.0f);
  WORKBOOK_CHECK_LAUNCH();
  const auto enqueued = out.download();
  CHECK(enqueued[9] == 4.0f);
  CHECK(workbook::is_poison(enqueued[10]));
  CHECK(workbook::is_poison(enqueued[999]));
  CHECK(out.check_guards().intact());

  // Any other fill, enqueued the same way: every element holds its bits, the guards are restored.
  write_range<<<1, 1024>>>(out.data(), -3, 1002, 5.0f);
  out.enqueue_fill(0x7fc00123u);
  write_range<<<1, 32>>>(out.data(), 0, 9, 4.0f);
  WORKBOOK_CHECK_LAUNCH();
  const auto filled = out.download();
  CHECK(filled[9] == 4.0f);
  for (const std::size_t i : {std::size_t(10), std::size_t(999)}) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &filled[i], sizeof bits);
    CHECK(bits == 0x7fc00123u);
  }
  CHECK(out.check_guards().intact());
}

TEST_CASE("a guarded array's guards are checked to their far ends, in both ways of copying them", "[gpu]") {
  REQUIRE_GPU();
  // The last size is past what download(GuardReport&) copies in one go: it copies twice there.
  for (const std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000),
                              workbook::GuardedDeviceArray::kOneCopyMostElements + 1}) {
    CAPTURE(n);
    workbook::GuardedDeviceArray out(n, workbook::kOutputGuardBits, 4096);
    write_range<<<1, 1>>>(out.data(), -4096, -4096, 3.0f);                    // the front guard's first word
    write_range<<<1, 1>>>(out.data(), int(n) + 4095, int(n) + 4095, 3.0f);  // the back guard's last word
    WORKBOOK_CHECK_LAUNCH();
    workbook::GuardReport together;
    const auto values = out.download(together);
    CHECK(values.size() == n);
    CHECK((n == 0 || (workbook::is_poison(values.front()) && workbook::is_poison(values.back()))));
    for (const workbook::GuardReport& report : {out.check_guards(), together}) {
      CHECK(report.written_before == 1);
      CHECK(report.nearest_before == 4095);
      CHECK(report.written_after == 1);
      CHECK(report.nearest_after == 4095);
    }
    out.poison();
    CHECK(out.check_guards().intact());
  }
}

TEST_CASE("a launch with 2048 threads per block throws a CudaError naming the problem", "[gpu]") {
  REQUIRE_GPU();
  empty_kernel<<<1, 2048>>>();
  try {
    WORKBOOK_CHECK_LAUNCH();
    FAIL("the launch did not report an error");
  } catch (const workbook::CudaError& e) {
    // CUDA 13 says cudaErrorInvalidValue; older runtimes cudaErrorInvalidConfiguration.
    CHECK((e.code() == cudaErrorInvalidValue || e.code() == cudaErrorInvalidConfiguration));
    CHECK_THAT(std::string(e.what()), ContainsSubstring("kernel launch failed: cudaErrorInvalid"));
  }
  CHECK(cudaGetLastError() == cudaSuccess);  // launch errors are not sticky
}

TEST_CASE("the event timer measures device time and not launch time", "[gpu]") {
  REQUIRE_GPU();
  workbook::TimingOptions options;
  options.samples = 5;
  const auto stats = workbook::time_on_device([](cudaStream_t s) { spin_ns<<<1, 1, 0, s>>>(1000000u); }, options);
  CHECK(stats.samples == 5);
  // __nanosleep(1 ms) sleeps between 0 and about 2 ms; a host-side timer around an async
  // launch would read microseconds.
  CHECK(stats.median_ms > 0.2);
  CHECK(stats.median_ms < 5.0);
  CHECK(stats.min_ms <= stats.median_ms);
  CHECK(stats.median_ms <= stats.max_ms);
}

TEST_CASE("measure() with a precision stops at the first batch whose median is known well enough", "[gpu]") {
  REQUIRE_GPU();
  int runs = 0;
  // About 2 ms at any clock from 1 to 2 GHz: a probe over a millisecond, so one warm-up run.
  const auto spin = [&](cudaStream_t s) {
    ++runs;
    spin_cycles<<<1, 1, 0, s>>>(3000000);
  };
  workbook::MeasureOptions options;
  options.warmup = 3;
  options.samples = 20;
  // Five samples of a busy loop within ten times their median either side, even where other tests
  // share the GPU (the suite runs them side by side: a 2 ms loop then took up to twice as long).
  options.precision = 10.0;
  auto stats = workbook::measure(spin, options);
  CHECK(stats.samples == 5);
  CHECK(runs == 1 + 1 + 5);  // the probe, one warm-up run, one batch
  CHECK(stats.median_ms > 0.5);
  // 1%: in batches of five, as many as the clocks' steadiness needs.
  runs = 0;
  options.precision = 0.01;
  stats = workbook::measure(spin, options);
  CHECK(stats.samples % 5 == 0);
  CHECK(runs == 1 + 1 + stats.samples);
  // Runs of 2 and 3 ms by turns: a median never known to 1%, so every sample.
  runs = 0;
  const auto uneven = [&](cudaStream_t s) {
    spin_cycles<<<1, 1, 0, s>>>(runs++ % 2 == 0 ? 3000000 : 4500000);
  };
  CHECK(workbook::measure(uneven, options).samples == 20);
  CHECK(runs == 1 + 1 + 20);
  // Without a precision: the warm-up and samples asked for.
  runs = 0;
  options.precision = 0;
  CHECK(workbook::measure(spin, options).samples == 20);
  CHECK(runs == 1 + 3 + 20);
  // Short work (a probe under a millisecond: about 0.1 ms) takes them all, precision or not.
  runs = 0;
  options.precision = 0.01;
  const auto short_stats = workbook::measure(
      [&](cudaStream_t s) {
        ++runs;
        spin_cycles<<<1, 1, 0, s>>>(150000);
      },
      options);
  CHECK(short_stats.samples == 20);
  CHECK(runs == 1 + 3 + 20);
  // Short work whose probe was long (a first call's costs): timed as short work, after one batch.
  runs = 0;
  const auto slow_first = [&](cudaStream_t s) {
    spin_cycles<<<1, 1, 0, s>>>(runs++ == 0 ? 6000000 : 150000);
  };
  CHECK(workbook::measure(slow_first, options).samples == 20);
  CHECK(runs == 1 + 1 + 5 + 3 + 20);
}

TEST_CASE("device facts are plausible and the measured copy bandwidth is below the theoretical peak", "[gpu]") {
  REQUIRE_GPU();
  const auto info = workbook::query_device(0);
  CHECK_FALSE(info.name.empty());
  CHECK(info.cc_major >= 7);
  CHECK(info.sm_count > 0);
  CHECK(info.max_threads_per_block == 1024);
  CHECK(info.warp_size == 32);
  CHECK(info.l2_cache_bytes > 0);
  CHECK(info.free_memory_bytes <= info.total_memory_bytes);
  const double copy = workbook::measure_copy_bandwidth_gbps(std::size_t{512} << 20, 5);
  CAPTURE(copy, info.theoretical_bandwidth_gbps);
  CHECK(copy > 50.0);
  CHECK(copy < 1.05 * info.theoretical_bandwidth_gbps);
}
