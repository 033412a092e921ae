// compare_to_reference: counts, unwritten elements, tolerance and the report text.
#include "workbook/compare.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using workbook::compare_to_reference;
using workbook::Tolerance;

TEST_CASE("the float32 dot-product tolerance grows in proportion to the length", "[compare]") {
  const double u = 1.0 / 16777216.0;
  CHECK(workbook::float32_dot_tolerance(1).abs == 18 * u);
  CHECK(workbook::float32_dot_tolerance(4096).abs == 8208 * u);  // 4.9e-4: TF32's rms error there is 5.7e-3
  CHECK(workbook::float32_dot_tolerance(4096).rel == 4 * u);
}

TEST_CASE("identical arrays match", "[compare]") {
  const std::vector<float> expected{1.0f, -2.5f, 3.25f};
  const auto report = compare_to_reference(expected.data(), expected.data(), expected.size(), {});
  CHECK(report.ok());
  CHECK(report.wrong == 0);
  CHECK(report.count == 3);
  CHECK_THAT(report.describe(), ContainsSubstring("all 3 elements match"));
}

TEST_CASE("a wrong element is counted and listed with expected and got", "[compare]") {
  const std::vector<float> expected{1, 2, 3, 4};
  std::vector<float> got = expected;
  got[2] = 30;
  const auto report = compare_to_reference(got.data(), expected.data(), got.size(), {});
  REQUIRE_FALSE(report.ok());
  CHECK(report.wrong == 1);
  CHECK(report.unwritten == 0);
  REQUIRE(report.first_mismatches.size() == 1);
  CHECK(report.first_mismatches[0].index == 2);
  CHECK(report.first_mismatches[0].expected == 3);
  CHECK(report.first_mismatches[0].got == 30);
  CHECK(report.max_abs_error == 27);
  CHECK_THAT(report.describe(), ContainsSubstring("[2] expected 3, got 30"));
}

TEST_CASE("poisoned elements are reported as never written", "[compare]") {
  std::vector<float> expected(10, 1.0f), got(10, 1.0f);
  for (int i = 7; i < 10; ++i) got[i] = workbook::poison_value();
  const auto report = compare_to_reference(got.data(), expected.data(), got.size(), {});
  CHECK(report.wrong == 3);
  CHECK(report.unwritten == 3);
  CHECK(report.first_unwritten == 7);
  CHECK(report.last_unwritten == 9);
  CHECK(report.unwritten_is_tail());
  CHECK_THAT(report.describe(), ContainsSubstring("never written (indices 7 .. 9)"));
  CHECK_THAT(report.describe(), ContainsSubstring("got NaN (never written)"));
}

TEST_CASE("unwritten elements in the middle are not a tail", "[compare]") {
  std::vector<float> expected(6, 1.0f), got(6, 1.0f);
  got[2] = workbook::poison_value();
  const auto report = compare_to_reference(got.data(), expected.data(), got.size(), {});
  CHECK_FALSE(report.unwritten_is_tail());
}

TEST_CASE("the tolerance has an absolute and a relative part", "[compare]") {
  const std::vector<float> expected{100.0f, 0.0f};
  const std::vector<float> got{100.5f, 1e-7f};
  CHECK_FALSE(compare_to_reference(got.data(), expected.data(), 2, Tolerance{0, 1e-3}).ok());
  CHECK(compare_to_reference(got.data(), expected.data(), 2, Tolerance{1e-6, 1e-2}).ok());
  CHECK_FALSE(compare_to_reference(got.data(), expected.data(), 2, Tolerance{0, 1e-2}).ok());
}

TEST_CASE("NaN matches only NaN", "[compare]") {
  const float nan = std::nanf("");
  const std::vector<float> expected{nan, 1.0f};
  CHECK(compare_to_reference(std::vector<float>{nan, 1.0f}.data(), expected.data(), 2, {}).ok());
  CHECK_FALSE(compare_to_reference(std::vector<float>{0.0f, 1.0f}.data(), expected.data(), 2, {}).ok());
  CHECK_FALSE(compare_to_reference(std::vector<float>{nan, nan}.data(), expected.data(), 2, {}).ok());
}

TEST_CASE("only the first few mismatches are listed and the rest counted", "[compare]") {
  std::vector<float> expected(100, 0.0f), got(100, 1.0f);
  const auto report = compare_to_reference(got.data(), expected.data(), 100, {}, 5);
  CHECK(report.wrong == 100);
  CHECK(report.first_mismatches.size() == 5);
  CHECK_THAT(report.describe(), ContainsSubstring("... and 95 more"));
}

TEST_CASE("the poison value is a NaN nothing computes", "[compare]") {
  CHECK(std::isnan(workbook::poison_value()));
  CHECK(workbook::is_poison(workbook::poison_value()));
  CHECK_FALSE(workbook::is_poison(std::nanf("")));
  CHECK_FALSE(workbook::is_poison(0.0f / 0.0f * 1.0f + std::nanf("")));
}

TEST_CASE("a large comparison, made on every core, reports what one loop over it would", "[compare]") {
  // Wrong, unwritten and NaN elements spread over 2^21 elements, and more mismatches than are
  // listed: several of parallel_for's ranges (2^18 elements at least each) on a machine of several
  // cores; one range, the loop alone, on one core.
  const std::size_t n = (std::size_t(1) << 21) + 12345;
  std::vector<float> expected(n), got(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = got[i] = 1.0f + float(i % 1000) / 7.0f;
  const std::vector<std::size_t> unwritten{300001, 300002, 1500000, n - 1};
  const std::vector<std::size_t> wrong{5, 262144, 262145, 900000, 2000000};
  for (const std::size_t i : unwritten) got[i] = workbook::poison_value();
  for (const std::size_t i : wrong) got[i] += 0.5f * float(i % 3 + 1);
  got[1200000] = std::nanf("");  // NaN where the reference is not: wrong
  expected[1700000] = got[1700000] = std::nanf("");  // NaN in both: right
  const Tolerance tolerance{1e-6, 0};
  const auto report = compare_to_reference(got.data(), expected.data(), n, tolerance, 5);
  // One loop, as the report's definition says.
  std::size_t wrong_count = 0, unwritten_count = 0;
  double max_abs = 0;
  std::vector<std::size_t> listed;
  for (std::size_t i = 0; i < n; ++i) {
    const bool right = workbook::element_agrees(got[i], expected[i], tolerance);
    if (workbook::is_poison(got[i])) ++unwritten_count;
    else if (!std::isnan(got[i]) && !std::isnan(expected[i])) max_abs = std::max(max_abs, std::fabs(double(got[i]) - expected[i]));
    if (!right && listed.size() < 5) listed.push_back(i);
    wrong_count += right ? 0 : 1;
  }
  CHECK(report.count == n);
  CHECK(report.wrong == wrong_count);
  CHECK(report.wrong == unwritten.size() + wrong.size() + 1);
  CHECK(report.unwritten == unwritten_count);
  CHECK(report.first_unwritten == 300001);
  CHECK(report.last_unwritten == n - 1);
  CHECK_FALSE(report.unwritten_is_tail());
  CHECK(report.max_abs_error == max_abs);
  REQUIRE(report.first_mismatches.size() == 5);
  for (std::size_t k = 0; k < listed.size(); ++k) CHECK(report.first_mismatches[k].index == listed[k]);
  CHECK(report.first_mismatches[3].index == 300001);
  CHECK(report.first_mismatches[3].unwritten);
  CHECK_THAT(report.describe(), ContainsSubstring("and 5 more"));
}
