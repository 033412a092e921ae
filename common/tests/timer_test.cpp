// summarize_ms, gigabytes_per_second and measure()'s policy: the host-side logic of timing.
#include "workbook/timer.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>

#include <stdexcept>

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

TEST_CASE("a probe that was not slow is followed by the warm-up and all the samples", "[timer]") {
  workbook::MeasureOptions options;
  options.warmup = 4;
  options.samples = 25;
  options.slow_ms = 100;
  options.slow_samples = 3;
  options.flush_l2 = true;
  const auto timing = workbook::timing_after_probe(99.0, options);
  CHECK(timing.warmup == 4);
  CHECK(timing.samples == 25);
  CHECK(timing.flush_l2);
}

TEST_CASE("a slow probe is followed by the slow samples alone, or stands as the measurement", "[timer]") {
  workbook::MeasureOptions options;
  options.warmup = 4;
  options.samples = 25;
  options.slow_ms = 100;
  options.slow_samples = 3;
  const auto few = workbook::timing_after_probe(101.0, options);
  CHECK(few.warmup == 0);
  CHECK(few.samples == 3);
  CHECK_FALSE(few.flush_l2);
  options.slow_warmup = 2;
  CHECK(workbook::timing_after_probe(100.0, options).warmup == 2);  // the threshold itself is slow
  CHECK(workbook::timing_after_probe(100.0, options).samples == 3);
  options.slow_samples = 0;
  CHECK(workbook::timing_after_probe(5000.0, options).samples == 0);
  options.slow_samples = 50;  // never more than the samples asked for
  options.samples = 2;
  CHECK(workbook::timing_after_probe(101.0, options).samples == 2);
}

TEST_CASE("host timing takes the warm-up untimed and the samples timed", "[timer]") {
  int runs = 0;
  const auto stats = workbook::time_on_host([&] { ++runs; }, 2, 5);
  CHECK(runs == 7);
  CHECK(stats.samples == 5);
  CHECK(stats.min_ms >= 0.0);
  CHECK_THROWS_AS(workbook::time_on_host([] {}, 0, 0), std::invalid_argument);
}

TEST_CASE("the median is known once the order statistics around it are close enough", "[timer]") {
  // Five samples: the interval is [min, max] (it covers the median with probability 0.94).
  CHECK(workbook::median_known_within({1.0, 1.0, 1.0, 1.0, 1.0}, 0.001));
  CHECK(workbook::median_known_within({0.875, 1.125, 1.0, 0.9375, 1.0625}, 0.125));
  CHECK_FALSE(workbook::median_known_within({0.875, 1.125, 1.0, 0.9375, 1.0625}, 0.12));
  // Fewer than five samples never do, nor a precision of zero.
  CHECK_FALSE(workbook::median_known_within({1.0, 1.0, 1.0, 1.0}, 0.5));
  CHECK_FALSE(workbook::median_known_within({1.0, 1.0, 1.0, 1.0, 1.0}, 0.0));
  CHECK_FALSE(workbook::median_known_within({}, 0.01));
  // One slow sample among five widens the interval; among ten, the interval is [x(2), x(9)] and
  // one at each end does not count, two do.
  CHECK_FALSE(workbook::median_known_within({1.0, 1.0, 1.0, 1.0, 3.0}, 0.01));
  CHECK(workbook::median_known_within({0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0}, 0.01));
  CHECK_FALSE(workbook::median_known_within({1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 3.0}, 0.01));
}

TEST_CASE("with a precision, a probe of a millisecond or more is followed by one warm-up run", "[timer]") {
  workbook::MeasureOptions options;
  options.warmup = 4;
  options.samples = 25;
  CHECK(workbook::timing_after_probe(2.0, options).warmup == 4);  // without a precision, the warm-up asked for
  options.precision = 0.01;
  CHECK(workbook::timing_after_probe(2.0, options).warmup == 1);
  CHECK(workbook::timing_after_probe(1.0, options).warmup == 1);
  CHECK(workbook::timing_after_probe(0.5, options).warmup == 4);  // short work: clocks and caches need more
  CHECK(workbook::timing_after_probe(2.0, options).samples == 25);  // the most it may take
  options.warmup = 0;
  CHECK(workbook::timing_after_probe(2.0, options).warmup == 0);
}
