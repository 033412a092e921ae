// Lesson 02's grader: what its tests (task1_*_test.cu .. task3_*_test.cu) share: the problem and
// its expected y, the tolerance, the sizes, the check of y, the "wrote nothing" probe and the
// timing (defined in multiply_add_grader.cu).
//
// Task 1 launches the student's kernel directly with every block size from 32 to 1024 and
// grids from one block to more than n needs; task 2 calls the launcher with valid and
// invalid configurations and checks it honours its stream; task 3 compares the student's
// event timing with the helper library's timer on the same launches. Outputs are poisoned
// and guarded as in lesson 01. The device may fuse x1*x2 + b into one FMA (one rounding)
// or not (two): the tolerance admits both and nothing else.
#pragma once

#include "benchmark.hpp"
#include "multiply_add.hpp"

#include "device_check.cuh"
#include "diagnosis.hpp"
#include "grader.hpp"
#include "output_matcher.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace multiply_add_grader {

// |x1*x2| <= 1 and |b| <= 4, so either rounding is within a few 1e-7 of the exact value.
constexpr workbook::Tolerance kFmaOrNot{1e-6, 1e-6};
constexpr std::size_t kLargeCorrectness = (std::size_t{1} << 26) + 7;  // 256 MiB per array, not a block multiple

// The expected y[i]: x1*x2 + b in double precision from the seeded streams x1 and x2 were filled
// with, rounded to float; on the host or the device (device_check.cuh). The product of two floats
// is exact in double, so a fused multiply-add gives the same value.
struct MultiplyAdd {
  std::uint64_t seed1, seed2;
  float b;
  WORKBOOK_HOST_DEVICE double operator()(std::size_t i) const {
    const double v1 = workbook::random_uniform(seed1, i, -1, 1);
    const double v2 = workbook::random_uniform(seed2, i, -1, 1);
    return static_cast<float>(v1 * v2 + b);
  }
};

// x1, x2 and y on the device (guarded), filled from seeded streams, a random b, and the expected y.
struct Problem {
  Problem(std::size_t n, const std::string& name)
      : x1(n, workbook::kInputGuardBits), x2(n, workbook::kInputGuardBits), y(n) {
    const std::uint64_t seed1 = grader::seed_for("x1 " + name + std::to_string(n));
    const std::uint64_t seed2 = grader::seed_for("x2 " + name + std::to_string(n));
    // Never 0, so a kernel that forgets b is caught.
    b = workbook::random_uniform(grader::seed_for("b " + name + std::to_string(n)), 0, 0.5f, 4.0f);
    if (workbook::mix64(seed1) % 2 == 0) b = -b;
    x1.fill_random(seed1);
    x2.fill_random(seed2);
    formula = {seed1, seed2, b};
  }
  int n() const { return static_cast<int>(y.size()); }
  // The expected y on the host, computed the first time it is asked for (a right y never needs it).
  const std::vector<float>& expected() {
    if (expected_.size() != y.size()) {
      expected_.resize(y.size());
      for (std::size_t i = 0; i < y.size(); ++i) expected_[i] = static_cast<float>(formula(i));
    }
    return expected_;
  }
  workbook::GuardedDeviceArray x1, x2, y;
  float b = 0;
  MultiplyAdd formula{};

private:
  std::vector<float> expected_;
};

// The number of blocks of \p block threads that covers \p n elements.
int blocks_for(std::size_t n, int block);

// Waits for the GPU and checks y: on the device; when anything is off, copied back and compared
// on the host for the report. \p threads is the launch's grid x block when known.
void check_output(Problem& p, long long threads = -1);

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
  const auto comparison = workbook::compare_to_reference(out.values.data(), p.expected().data(), 1000, kFmaOrNot);
  if (grader::nothing_written(comparison, out.guards)) {
    grader::wrote_nothing(what + " ran and wrote nothing: " + grader::untouched_output("y", 1000), trace);
  }
}

// Times \p launch, the student's code, as lesson 02's benchmark declares (benchmark.hpp); when
// \p profiled, it is the call a profiling run profiles (grader/driver/counters.py).
template <class Launch>
workbook::TimingStats time_launch(Launch launch, bool profiled = true) {
  workbook::MeasureOptions options = multiply_add_benchmark::graded_timing();
  options.profiled = profiled;
  return workbook::measure(launch, options);
}

// Records the bandwidth of \p stats on n elements and its fraction of the copy bandwidth
// measured in this run: lesson 02's figure of merit (benchmark.hpp); and what the profiled call
// moves.
void record_bandwidth(std::size_t n, const workbook::TimingStats& stats);

}  // namespace multiply_add_grader
