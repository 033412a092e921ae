// The grader's diagnoses: each pattern of wrong output gets the hint at its usual cause.
#include "diagnosis.hpp"
#include "output_matcher.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <vector>

using Catch::Matchers::ContainsSubstring;
using workbook::GuardReport;

namespace {

workbook::ComparisonReport compare(const std::vector<float>& got, const std::vector<float>& expected) {
  return workbook::compare_to_reference(got.data(), expected.data(), got.size(), {});
}

GuardReport written_after(std::size_t nearest, std::size_t farthest) {
  GuardReport g;
  g.guard_elements = 4096;
  g.written_after = farthest - nearest + 1;
  g.nearest_after = nearest;
  g.farthest_after = farthest;
  return g;
}

}  // namespace

TEST_CASE("a clean output has no diagnosis", "[diagnosis]") {
  const std::vector<float> v{1, 2, 3};
  CHECK(grader::diagnose(compare(v, v), {}, 3).empty());
}

TEST_CASE("writing element n is diagnosed as off by one", "[diagnosis]") {
  const std::vector<float> v{1, 2, 3};
  const std::string text = grader::diagnose(compare(v, v), written_after(0, 0), 3);
  CHECK_THAT(text, ContainsSubstring("index 3"));
  CHECK_THAT(text, ContainsSubstring("off by one"));
  CHECK_THAT(text, ContainsSubstring("i < n"));
}

TEST_CASE("writing several elements past n asks for a bounds check", "[diagnosis]") {
  const std::vector<float> v{1, 2, 3};
  const std::string text = grader::diagnose(compare(v, v), written_after(0, 252), 3);
  CHECK_THAT(text, ContainsSubstring("253 elements past the end"));
  CHECK_THAT(text, ContainsSubstring("bounds check"));
}

TEST_CASE("writing before element 0 is named", "[diagnosis]") {
  const std::vector<float> v{1, 2, 3};
  GuardReport g;
  g.written_before = 1;
  const std::string text = grader::diagnose(compare(v, v), g, 3);
  CHECK_THAT(text, ContainsSubstring("before the start"));
  CHECK_THAT(text, ContainsSubstring("negative"));
}

TEST_CASE("an unwritten tail points at the grid size", "[diagnosis]") {
  const std::vector<float> expected(10, 1.0f);
  std::vector<float> got = expected;
  for (int i = 6; i < 10; ++i) got[i] = workbook::poison_value();
  const std::string text = grader::diagnose(compare(got, expected), {}, 10);
  CHECK_THAT(text, ContainsSubstring("4 of 10 elements are wrong"));
  CHECK_THAT(text, ContainsSubstring("never written"));
  CHECK_THAT(text, ContainsSubstring("from index 6"));
  CHECK_THAT(text, ContainsSubstring("grid"));
}

TEST_CASE("wrong values point at indexing and arithmetic", "[diagnosis]") {
  const std::vector<float> expected{1, 2, 3};
  const std::vector<float> got{1, 5, 3};
  const std::string text = grader::diagnose(compare(got, expected), {}, 3);
  CHECK_THAT(text, ContainsSubstring("[1] expected 2, got 5"));
  CHECK_THAT(text, ContainsSubstring("indexed with the same i"));
}

TEST_CASE("nothing written is recognised as not implemented", "[diagnosis]") {
  const std::vector<float> expected(4, 1.0f);
  const std::vector<float> got(4, workbook::poison_value());
  CHECK(grader::nothing_written(compare(got, expected), {}));
  CHECK_FALSE(grader::nothing_written(compare(got, expected), written_after(0, 0)));
  CHECK_FALSE(grader::nothing_written(compare(expected, expected), {}));
}

TEST_CASE("the matcher explains a failed match", "[diagnosis]") {
  const std::vector<float> expected{1, 2};
  grader::MatchesReference matcher(expected, {});
  CHECK(matcher.match(grader::DeviceOutput{{1, 2}, {}}));
  CHECK(matcher.describe() == "matches the reference");
  CHECK_FALSE(matcher.match(grader::DeviceOutput{{1, 9}, {}}));
  CHECK_THAT(matcher.describe(), ContainsSubstring("[1] expected 2, got 9"));
  CHECK_FALSE(matcher.match(grader::DeviceOutput{{1}, {}}));
  CHECK_THAT(matcher.describe(), ContainsSubstring("has 1 elements, the reference 2"));
}
