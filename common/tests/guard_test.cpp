// inspect_guards and GuardReport::describe, on guard contents as the device would return them.
#include "workbook/guarded_array.hpp"
#include "workbook/startup_environment.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdlib>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using workbook::inspect_guards;

namespace {
constexpr std::uint32_t kPattern = workbook::kOutputGuardBits;
}

TEST_CASE("untouched guards are intact", "[guard]") {
  const std::vector<std::uint32_t> before(16, kPattern), after(16, kPattern);
  const auto report = inspect_guards(before, after, kPattern);
  CHECK(report.intact());
  CHECK(report.guard_elements == 16);
}

TEST_CASE("a write at index n is the first element after the array", "[guard]") {
  const std::vector<std::uint32_t> before(16, kPattern);
  std::vector<std::uint32_t> after(16, kPattern);
  after[0] = 0x3F800000u;  // 1.0f
  const auto report = inspect_guards(before, after, kPattern);
  CHECK_FALSE(report.intact());
  CHECK(report.written_after == 1);
  CHECK(report.nearest_after == 0);
  CHECK(report.farthest_after == 0);
  CHECK(report.offsets_after == std::vector<std::size_t>{0});
  CHECK_THAT(report.describe(100), ContainsSubstring("1 element past the end of the output was written (index 100)"));
}

TEST_CASE("writes spread past the end report their extent", "[guard]") {
  const std::vector<std::uint32_t> before(64, kPattern);
  std::vector<std::uint32_t> after(64, kPattern);
  for (int k = 0; k < 31; ++k) after[k] = 0u;
  const auto report = inspect_guards(before, after, kPattern);
  CHECK(report.written_after == 31);
  CHECK(report.farthest_after == 30);
  CHECK(report.offsets_after.size() == 31);
  CHECK(report.offsets_after.back() == 30);
  CHECK_THAT(report.describe(1), ContainsSubstring("31 elements past the end of the output were written (indices 1 .. 31"));
}

TEST_CASE("writes before the start count backwards from element -1", "[guard]") {
  std::vector<std::uint32_t> before(8, kPattern);
  const std::vector<std::uint32_t> after(8, kPattern);
  before[7] = 0u;  // element -1
  before[5] = 0u;  // element -3
  const auto report = inspect_guards(before, after, kPattern);
  CHECK(report.written_before == 2);
  CHECK(report.nearest_before == 0);
  CHECK(report.farthest_before == 2);
  CHECK_THAT(report.describe(10), ContainsSubstring("before the start of the output were written (index -1 .. -3)"));
}

TEST_CASE("the guards follow the environment the program started with, not a later setenv", "[guard]") {
  // Under ./grade --sanitize (WORKBOOK_SANITIZE at start-up) there are none, so the sanitizer
  // sees an overrun against the allocation itself; grader/tests/test_runner.py checks that case.
  const std::size_t at_start = workbook::default_guard_elements();
  CHECK(at_start == (workbook::sanitizer_run() ? 0u : 4096u));  // 4096: longer than any block can overrun
  ::setenv("WORKBOOK_SANITIZE", workbook::sanitizer_run() ? "0" : "1", 1);  // as code being graded could
  CHECK(workbook::default_guard_elements() == at_start);
  ::unsetenv("WORKBOOK_SANITIZE");
  CHECK(workbook::default_guard_elements() == at_start);
}
