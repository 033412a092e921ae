// The grader's diagnoses: each pattern of wrong output gets the hint at its usual cause.
#include "diagnosis.hpp"
#include "output_matcher.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>
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

// The hint ids each diagnosis carries ("Hint [id]: ..."), so a test can say which fired.
std::vector<std::string> hint_ids(const std::string& text) {
  std::vector<std::string> ids;
  for (std::size_t at = text.find("Hint ["); at != std::string::npos; at = text.find("Hint [", at + 1)) {
    ids.push_back(text.substr(at + 6, text.find(']', at) - at - 6));
  }
  return ids;
}

using Ids = std::vector<std::string>;

TEST_CASE("writing element n is diagnosed as off by one", "[diagnosis]") {
  const std::vector<float> v{1, 2, 3};
  const std::string text = grader::diagnose(compare(v, v), written_after(0, 0), 3);
  CHECK_THAT(text, ContainsSubstring("index 3"));
  CHECK_THAT(text, ContainsSubstring("i < n"));
  CHECK(hint_ids(text) == Ids{"off-by-one-end"});
}

TEST_CASE("element n written while the inside is wrong names no cause", "[diagnosis]") {
  // y[i + 1] = ... for i < n: element 0 never written, 1 .. n-1 shifted, element n written. The
  // bounds check is i < n; the index is what is wrong, so off-by-one-end must not fire.
  const std::vector<float> expected{1, 2, 3};
  const std::vector<float> got{workbook::poison_value(), 1, 2};
  const std::string text = grader::diagnose(compare(got, expected), written_after(0, 0), 3, 3);
  CHECK(hint_ids(text).empty());
  CHECK_THAT(text, ContainsSubstring("index 3"));
  CHECK_THAT(text, ContainsSubstring("Inside the array: 3 of 3 elements are wrong"));
  CHECK_THAT(text, ContainsSubstring("names no cause"));
  // A value wrong inside, element n written: no cause either.
  const std::vector<float> one_wrong{1, 5, 3};
  CHECK(hint_ids(grader::diagnose(compare(one_wrong, expected), written_after(0, 0), 3)).empty());
}

TEST_CASE("writes past n by exactly the launch's extra threads prove a missing bounds check", "[diagnosis]") {
  const std::vector<float> v(1000, 1.0f);
  // 4 blocks of 256 for n = 1000: threads 1000 .. 1023 are the extra ones.
  const std::string text = grader::diagnose(compare(v, v), written_after(0, 23), 1000, 1024);
  CHECK_THAT(text, ContainsSubstring("24 extra threads"));
  CHECK(hint_ids(text) == Ids{"no-bounds-check"});
  // Without the launch, or with a launch that does not explain the writes: no cause is named.
  CHECK(hint_ids(grader::diagnose(compare(v, v), written_after(0, 23), 1000)).empty());
  CHECK(hint_ids(grader::diagnose(compare(v, v), written_after(0, 23), 1000, 2048)).empty());
  // The same writes past the end with a wrong element inside: no cause is named.
  std::vector<float> got = v;
  got[10] = 2.0f;
  CHECK(hint_ids(grader::diagnose(compare(got, v), written_after(0, 23), 1000, 1024)).empty());
}

TEST_CASE("writes that end exactly at 4n - 1 point at a bound in bytes", "[diagnosis]") {
  const std::vector<float> v{1, 2, 3};
  const std::string text = grader::diagnose(compare(v, v), written_after(0, 8), 3, 64);
  CHECK_THAT(text, ContainsSubstring("4n - 1"));
  CHECK(hint_ids(text) == Ids{"counts-bytes"});
  CHECK(hint_ids(grader::diagnose(compare(v, v), written_after(0, 9), 3, 64)).empty());
  CHECK(hint_ids(grader::diagnose(compare({1, 2, 4}, v), written_after(0, 8), 3, 64)).empty());  // inside wrong
}

TEST_CASE("writing before element 0 is named", "[diagnosis]") {
  const std::vector<float> v{1, 2, 3};
  GuardReport g;
  g.written_before = 1;
  const std::string text = grader::diagnose(compare(v, v), g, 3);
  CHECK_THAT(text, ContainsSubstring("before the start"));
  CHECK(hint_ids(text) == Ids{"writes-before-start"});
}

TEST_CASE("an unwritten tail is blamed on the grid only when the threads ran out there", "[diagnosis]") {
  const std::vector<float> expected(10, 1.0f);
  std::vector<float> got = expected;
  for (int i = 6; i < 10; ++i) got[i] = workbook::poison_value();
  const auto report = compare(got, expected);
  SECTION("6 threads for 10 elements, the tail starts at 6: the grid") {
    const std::string text = grader::diagnose(report, {}, 10, 6);
    CHECK_THAT(text, ContainsSubstring("4 of 10 elements are wrong"));
    CHECK_THAT(text, ContainsSubstring("from index 6"));
    CHECK(hint_ids(text) == Ids{"grid-too-small"});
  }
  SECTION("enough threads: the index, not the grid") {
    const std::string text = grader::diagnose(report, {}, 10, 12);
    CHECK_THAT(text, ContainsSubstring("enough for every element"));
    CHECK(hint_ids(text) == Ids{"index-misses-tail"});
  }
  SECTION("the tail starts where the threads end, but a written element is wrong too: described, no cause") {
    std::vector<float> also_wrong = got;
    also_wrong[2] = 7.0f;
    const std::string text = grader::diagnose(compare(also_wrong, expected), {}, 10, 6);
    CHECK(hint_ids(text).empty());
    CHECK_THAT(text, ContainsSubstring("the launch had 6 threads for n = 10"));
    CHECK_THAT(text, ContainsSubstring("some elements that were written are wrong too"));
  }
  SECTION("the launch unknown, or too few threads that do not end at the tail: described, no cause") {
    CHECK(hint_ids(grader::diagnose(report, {}, 10)).empty());
    CHECK(hint_ids(grader::diagnose(report, {}, 10, 4)).empty());
    CHECK_THAT(grader::diagnose(report, {}, 10), ContainsSubstring("never written"));
  }
}

TEST_CASE("gaps in the middle point at the indices", "[diagnosis]") {
  const std::vector<float> expected(10, 1.0f);
  std::vector<float> got = expected;
  got[3] = workbook::poison_value();
  CHECK(hint_ids(grader::diagnose(compare(got, expected), {}, 10, 10)) == Ids{"unwritten-gaps"});
}

TEST_CASE("wrong values point at indexing and arithmetic", "[diagnosis]") {
  const std::vector<float> expected{1, 2, 3};
  const std::vector<float> got{1, 5, 3};
  const std::string text = grader::diagnose(compare(got, expected), {}, 3);
  CHECK_THAT(text, ContainsSubstring("[1] expected 2, got 5"));
  CHECK(hint_ids(text) == Ids{"wrong-values"});
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
