// Lesson 07's histogram input and host counts (baselines.hpp), on the host: every verdict of task 2
// compares the student's counts with these, and the header promises what the input holds.
#include "baselines.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace baselines = monte_carlo_baselines;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
}

TEST_CASE("lesson 07: energies keep a thousandth of a bin's width from every inner edge", "[host]") {
  for (const int bins : {1, 7, 100, 256, 4096}) {
    for (const float lo : {0.0f, 0.125f, 0.5f}) {
      const float hi = 8.0f;
      const std::vector<float> values = baselines::energies(200000, 1234 + bins, lo, hi, bins, false);
      const double width = (double(hi) - lo) / bins;
      std::size_t in_range = 0;
      for (const float v : values) {
        REQUIRE(std::isfinite(v));
        REQUIRE(v >= 0.0f);
        if (!(v >= lo && v < hi)) continue;
        ++in_range;
        const double t = (double(v) - lo) / width, f = t - std::floor(t);
        if (t >= 1.0) {  // above the first bin: its lower edge is an inner one
          CAPTURE(bins, lo, v, t);
          REQUIRE(f >= 1e-3);
        }
        if (t < bins - 1) {
          CAPTURE(bins, lo, v, t);
          REQUIRE(f <= 1 - 1e-3);
        }
      }
      CHECK(in_range > 100000);  // exponential energies: most lie below 8 kT
    }
  }
}

TEST_CASE("lesson 07: energies with edges hold every edge value once and at different places", "[host]") {
  const float lo = 0.5f, hi = 6.0f;
  for (const std::size_t n : {std::size_t{9}, std::size_t{17}, std::size_t{100}, std::size_t{100003}}) {
    const std::vector<float> values = baselines::energies(n, 99, lo, hi, 11, true);
    std::size_t nan = 0, at_lo = 0, at_hi = 0, plus_inf = 0, minus_inf = 0, just_below_hi = 0;
    for (const float v : values) {
      nan += std::isnan(v);
      at_lo += v == lo;
      at_hi += v == hi;
      plus_inf += v == kInf;
      minus_inf += v == -kInf;
      just_below_hi += v == std::nextafter(hi, -kInf);
    }
    CAPTURE(n);
    CHECK(nan == 1);
    CHECK(at_lo >= 1);
    CHECK(at_hi == 1);
    CHECK(plus_inf == 1);
    CHECK(minus_inf == 1);
    CHECK(just_below_hi == 1);
    const baselines::EdgeFacts facts = baselines::edge_facts(values, lo, hi, 11);
    CHECK(facts.nan == 1);
    CHECK(facts.not_finite == 3);
    CHECK(facts.just_below_lo >= 2);  // a float's step and 0.3 of a bin below lo
  }
}

TEST_CASE("lesson 07: the host histogram counts from lo up to but not including hi", "[host]") {
  const float lo = -1.0f, hi = 3.0f;  // 4 bins of width 1
  const std::vector<float> values{-1.0f, std::nextafter(-1.0f, -kInf), -1.3f, -0.5f, 0.0f, 0.99f, 2.5f,
                                  std::nextafter(3.0f, -kInf), 3.0f, std::nextafter(3.0f, kInf),
                                  std::numeric_limits<float>::quiet_NaN(), kInf, -kInf};
  const std::vector<unsigned int> counts = baselines::histogram_on_host(values, lo, hi, 4);
  CHECK(counts == std::vector<unsigned int>{2, 2, 0, 2});
  const baselines::EdgeFacts facts = baselines::edge_facts(values, lo, hi, 4);
  CHECK(facts.below_lo == 3);  // a step below, 0.3 below, -inf
  CHECK(facts.just_below_lo == 2);
  CHECK(facts.at_or_above_hi == 3);  // hi, a step above, +inf
  CHECK(facts.not_finite == 3);
  CHECK(facts.nan == 1);
  CHECK(facts.just_below_hi == 1);
}
