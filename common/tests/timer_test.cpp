// summarize_ms and gigabytes_per_second: the host-side arithmetic of timing.
#include "workbook/timer.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>

using Catch::Matchers::WithinRel;

TEST_CASE("median of an odd count is the middle sample", "[timer]") {
  const auto stats = workbook::summarize_ms({5.0, 1.0, 3.0});
  CHECK(stats.median_ms == 3.0);
  CHECK(stats.min_ms == 1.0);
  CHECK(stats.max_ms == 5.0);
  CHECK(stats.samples == 3);
}

TEST_CASE("median of an even count averages the middle two", "[timer]") {
  CHECK(workbook::summarize_ms({4.0, 1.0, 2.0, 100.0}).median_ms == 3.0);
}

TEST_CASE("one slow sample moves the maximum but not the median", "[timer]") {
  const auto stats = workbook::summarize_ms({1.0, 1.0, 1.0, 1.0, 50.0});
  CHECK(stats.median_ms == 1.0);
  CHECK(stats.max_ms == 50.0);
}

TEST_CASE("no samples give zeros", "[timer]") {
  const auto stats = workbook::summarize_ms({});
  CHECK(stats.samples == 0);
  CHECK(stats.median_ms == 0.0);
}

TEST_CASE("bandwidth is bytes over seconds in units of 1e9", "[timer]") {
  CHECK_THAT(workbook::gigabytes_per_second(3e9, 1000.0), WithinRel(3.0, 1e-12));
  CHECK_THAT(workbook::gigabytes_per_second(1e9, 0.5), WithinRel(2000.0, 1e-12));
  CHECK(workbook::gigabytes_per_second(1e9, 0.0) == 0.0);
}
