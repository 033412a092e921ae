// compare_to_reference: counts, unwritten elements, tolerance and the report text.
#include "workbook/compare.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

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
