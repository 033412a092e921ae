// The grader's statistical tests (statistics.hpp): the special functions against values from
// SciPy 1.10 (scipy.special and scipy.stats, printed with repr), the p-values calibrated (a
// correct program's results fail at the rate alpha says, measured on draws from the C++ library's
// generators), and each test failing the mistakes it is there for.
#include "statistics.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <random>
#include <vector>

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
namespace stats = grader::stats;

namespace {
constexpr double kQuarterPi = 0.78539816339744830962;
}

TEST_CASE("statistics: special functions agree with SciPy", "[statistics]") {
  CHECK(stats::gamma_p(3.5, 2.0) == Approx(0.22022259152428406).epsilon(1e-12));
  CHECK(stats::gamma_q(3.5, 2.0) == Approx(0.779777408475716).epsilon(1e-12));
  CHECK(stats::gamma_q(5e5, 5.05e5) == Approx(9.068528823262108e-13).epsilon(1e-6));  // a tail far out, many terms
  CHECK(stats::chi_square_sf(80, 31) == Approx(3.3125285528482517e-06).epsilon(1e-9));
  CHECK(stats::chi_square_cdf(8, 31) == Approx(9.949556036703654e-06).epsilon(1e-9));
  CHECK(stats::beta_i(0.4, 2.5, 3.5) == Approx(0.4869041915261175).epsilon(1e-12));
  CHECK(stats::binomial_cdf(7, 24, kQuarterPi) == Approx(3.0924515016973887e-07).epsilon(1e-9));
  CHECK(stats::binomial_sf(23, 24, kQuarterPi) == Approx(0.02293768696321656).epsilon(1e-9));
  CHECK(stats::binomial_sf(1, 1, kQuarterPi) == Approx(kQuarterPi).epsilon(1e-14));
  CHECK(stats::binomial_cdf(0, 1, kQuarterPi) == Approx(1 - kQuarterPi).epsilon(1e-14));
  // 32 seeds of 2^26 points: the sizes lesson 07's grader tests, five standard deviations out.
  const double n = 32.0 * 67108864.0;
  CHECK(stats::binomial_sf(1686724839, n, kQuarterPi) == Approx(2.86472156765203e-07).epsilon(1e-5));
  CHECK(stats::binomial_cdf(1686400000, n, kQuarterPi) == Approx(7.292545426251147e-34).epsilon(1e-4));
  CHECK(stats::kolmogorov_sf(1.0) == Approx(0.26999967167735456).epsilon(1e-12));
  CHECK(stats::kolmogorov_sf(2.5) == Approx(7.453306344157342e-06).epsilon(1e-9));
  CHECK(stats::normal_two_sided(4.891638475698591) == Approx(1e-6).epsilon(1e-9));
}

TEST_CASE("statistics: a correct program fails each test at the rate alpha says", "[statistics]") {
  // At alpha = 0.01 a correct program fails 1% of the time: over 20000 tries, between 0.7% and
  // 1.3% (the binomial spread of the failures is 0.07%, so these limits are 4 standard deviations).
  constexpr int kTries = 20000;
  constexpr double kLevel = 0.01;
  std::mt19937_64 rng(20261125);
  const auto rate_ok = [](int failures) {
    const double rate = double(failures) / kTries;
    CAPTURE(rate);
    CHECK(rate > 0.007);
    CHECK(rate < 0.013);
  };
  SECTION("binomial counts") {
    std::binomial_distribution<long long> draw(100000, kQuarterPi);
    int failures = 0;
    for (int i = 0; i < kTries; ++i) failures += stats::binomial_test("count", double(draw(rng)), 100000, kQuarterPi).p_value < kLevel;
    rate_ok(failures);
  }
  SECTION("the spread of 32 normal samples") {
    std::normal_distribution<double> draw(5.0, 3.0);
    int failures = 0;
    for (int i = 0; i < kTries; ++i) {
      std::vector<double> samples(32);
      for (double& s : samples) s = draw(rng);
      failures += stats::variance_test("spread", samples, 9.0).p_value < kLevel;
    }
    rate_ok(failures);
  }
  SECTION("sums and sums of squares of normal draws") {
    std::normal_distribution<double> draw(0.0, 2.0);
    int mean_failures = 0, square_failures = 0;
    for (int i = 0; i < kTries; ++i) {
      double sum = 0, squares = 0;
      for (int j = 0; j < 10; ++j) {
        const double x = draw(rng);
        sum += x, squares += x * x;
      }
      mean_failures += stats::mean_zero_test("mean", sum, 10, 4.0).p_value < kLevel;
      square_failures += stats::sum_of_squares_test("squares", squares, 10, 4.0).p_value < kLevel;
    }
    rate_ok(mean_failures);
    rate_ok(square_failures);
  }
}

TEST_CASE("statistics: the Kolmogorov-Smirnov and correlation tests pass normal draws and fail others", "[statistics]") {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::uniform_real_distribution<float> uniform(-2.6f, 2.6f);  // the normal's variance, the wrong shape
  std::vector<float> a(100000), b(100000), u(100000);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = normal(rng), b[i] = normal(rng), u[i] = uniform(rng);
  CHECK(stats::normal_ks_test("v", a, 2.25).passed());
  CHECK_FALSE(stats::normal_ks_test("v", u, 2.25).passed());
  CHECK_FALSE(stats::normal_ks_test("v", a, 2.0).passed());  // the right shape, the wrong variance
  std::vector<float> with_nan = a;
  with_nan[17] = std::nanf("");
  CHECK_THAT(stats::normal_ks_test("v", with_nan, 2.25).describe(), ContainsSubstring("not a finite number"));
  CHECK(stats::independence_test("vx and vy", a, b).passed());
  CHECK_FALSE(stats::independence_test("vx and vx", a, a).passed());
  std::vector<float> mixed(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) mixed[i] = 0.05f * a[i] + b[i];  // a correlation of 0.05
  CHECK_FALSE(stats::independence_test("vx and a little of vx", a, mixed).passed());
}

TEST_CASE("statistics: correlated or non-random counts fail the spread, biased ones the total", "[statistics]") {
  std::mt19937_64 rng(11);
  const double n = 1 << 20, variance = n * kQuarterPi * (1 - kQuarterPi);
  // 32 seeds whose counts all come from 1024 threads repeating one thread's 1024 points: the
  // spread is 32 times too large.
  std::binomial_distribution<long long> one_thread(1024, kQuarterPi);
  std::vector<double> correlated(32), fixed(32, std::round(n * kQuarterPi));
  for (double& c : correlated) c = 1024.0 * double(one_thread(rng));
  const stats::Test spread = stats::variance_test("counts", correlated, variance);
  CHECK_FALSE(spread.passed());
  CHECK_THAT(spread.describe(), ContainsSubstring("below the 1e-06 the grader allows"));
  CHECK_FALSE(stats::variance_test("counts", fixed, variance).passed());  // the same count for every seed
  // A total of 32 * 1000 points that left out the last partial block of 256 (232 points a seed).
  std::binomial_distribution<long long> short_run(768, kQuarterPi);
  double total = 0;
  for (int seed = 0; seed < 32; ++seed) total += double(short_run(rng));
  CHECK_FALSE(stats::binomial_test("total", total, 32 * 1000, kQuarterPi).passed());
  CHECK_FALSE(stats::binomial_test("total", 3, 2, kQuarterPi).passed());    // more than n
  CHECK_FALSE(stats::binomial_test("total", 1.5, 2, kQuarterPi).passed());  // not a whole number
}
