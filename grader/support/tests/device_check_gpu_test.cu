// The device's check of an output (device_check.cuh) against the host's (compare_to_reference):
// they must count the same wrong elements, for every kind of wrong, or a test's fast path would
// pass what its host path fails. Skipped without a GPU.
#include "device_check.cuh"
#include "grader.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace {

struct Stream {  // expected[i], on either side: the seeded stream itself
  std::uint64_t seed;
  WORKBOOK_HOST_DEVICE double operator()(std::size_t i) const { return workbook::random_uniform(seed, i, -1, 1); }
};

struct Identity {
  WORKBOOK_HOST_DEVICE double operator()(float x) const { return x; }
};

std::vector<float> expected_of(Stream f, std::size_t n) {
  std::vector<float> e(n);
  for (std::size_t i = 0; i < n; ++i) e[i] = static_cast<float>(f(i));
  return e;
}

}  // namespace

TEST_CASE("the device counts the wrong elements the host counts, every kind of wrong", "[device_check][gpu]") {
  grader::require_gpu();
  const Stream f{grader::seed_for("device check")};
  const workbook::Tolerance tolerance{1e-6, 1e-6};
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{1} << 22}) {
    const std::vector<float> expected = expected_of(f, n);
    for (const char* kind : {"right", "poison, NaN, one just outside the tolerance, one just inside", "all off"}) {
      CAPTURE(n, kind);
      std::vector<float> got = expected;
      if (kind[0] == 'p') {
        got[0] = workbook::poison_value();
        if (n > 1) {
          got[n / 2] = std::numeric_limits<float>::quiet_NaN();
          got[n - 1] = static_cast<float>(expected[n - 1] + 3e-6 + 2e-6 * std::fabs(expected[n - 1]));
          got[n / 3 + 1] = std::nextafter(expected[n / 3 + 1], 2.0f);  // one ulp (< 1.2e-7) off: inside
        }
      } else if (kind[0] == 'a') {
        for (float& v : got) v += 4e-6f;  // beyond 1e-6 + 1e-6 |e| for |e| <= 1
      }
      workbook::GuardedDeviceArray array(n);
      array.upload(got);
      const auto host = workbook::compare_to_reference(got.data(), expected.data(), n, tolerance);
      const unsigned long long device = grader::count_wrong_on_device(array.data(), n, tolerance, f);
      CHECK(device == host.wrong);
      CHECK(grader::agrees_on_device(array, tolerance, f) == host.ok());
      CHECK(host.ok() == (kind[0] == 'r'));  // the planted errors are errors, the right output is right
    }
  }
}

namespace {

struct NotAFloat {  // expected values a float cannot hold: the device rounds them as the host's arrays do
  WORKBOOK_HOST_DEVICE double operator()(std::size_t i) const { return workbook::random_uniform(3, i, -1, 1) + 1e-9; }
};

}  // namespace

TEST_CASE("the device rounds expected values to float before comparing, as the host's arrays hold them",
          "[device_check][gpu]") {
  grader::require_gpu();
  const std::size_t n = 4096;
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = static_cast<float>(NotAFloat{}(i));
  workbook::GuardedDeviceArray array(n);
  array.upload(expected);
  REQUIRE(workbook::compare_to_reference(expected.data(), expected.data(), n, {0, 0}).ok());
  CHECK(grader::count_wrong_on_device(array.data(), n, {0, 0}, NotAFloat{}) == 0);
}

TEST_CASE("the device's check sees a written guard and an empty array", "[device_check][gpu]") {
  grader::require_gpu();
  const Stream f{7};
  workbook::GuardedDeviceArray array(100);
  array.upload(expected_of(f, 100));
  REQUIRE(grader::agrees_on_device(array, {0, 0}, f));
  const float stray = 1.0f;
  WORKBOOK_CUDA_CHECK(cudaMemcpy(array.data() + 100, &stray, sizeof stray, cudaMemcpyHostToDevice));
  CHECK_FALSE(grader::agrees_on_device(array, {0, 0}, f));

  // Either guard, to its far end; and a right array again once the guards are restored.
  constexpr std::size_t guard = 4096;
  workbook::GuardedDeviceArray guarded(100, workbook::kOutputGuardBits, guard);
  for (const std::ptrdiff_t at : {std::ptrdiff_t(-1), -std::ptrdiff_t(guard), std::ptrdiff_t(100 + guard - 1)}) {
    CAPTURE(at);
    guarded.poison();
    guarded.upload(expected_of(f, 100));
    REQUIRE(grader::agrees_on_device(guarded, {0, 0}, f));
    WORKBOOK_CUDA_CHECK(cudaMemcpy(guarded.data() + at, &stray, sizeof stray, cudaMemcpyHostToDevice));
    CHECK_FALSE(grader::agrees_on_device(guarded, {0, 0}, f));
    CHECK(grader::count_wrong_on_device(guarded.data(), guarded.size(), {0, 0}, f) == 0);  // the elements are right
  }

  workbook::GuardedDeviceArray empty(0);
  CHECK(grader::count_wrong_on_device(empty.data(), 0, {0, 0}, f) == 0);
  CHECK(grader::agrees_on_device(empty, {0, 0}, f));
}

TEST_CASE("a timed test has no device scratch, and its checks count and sum with buffers of their own",
          "[device_check][gpu]") {
  grader::require_gpu();
  const Stream f{11};
  workbook::GuardedDeviceArray array(300);
  array.upload(expected_of(f, 300));
  double want = 0;
  for (const float x : expected_of(f, 300)) want += x;

  // As the listener of grader_main.cpp does between test cases: this test begins as a [perf] one.
  grader::release_device_scratch();
  grader::set_test_tags({"task_1", "perf"});
  grader::require_gpu();
  CHECK(grader::device_scratch() == nullptr);
  CHECK(grader::agrees_on_device(array, {0, 0}, f));
  CHECK(grader::count_wrong_on_device(array.data(), 300, {0, 0}, Stream{12}) > 0);
  CHECK(std::abs(grader::sum_on_device(array.data(), 300, Identity{}) - want) <= 1e-9 * (std::abs(want) + 1));

  // And a test that is not timed gets one, which its end frees.
  grader::set_test_tags({"task_1"});
  grader::require_gpu();
  CHECK(grader::device_scratch() != nullptr);
  CHECK(grader::agrees_on_device(array, {0, 0}, f));
  grader::release_device_scratch();
  CHECK(grader::device_scratch() == nullptr);
  grader::set_test_tags({});
}
