/// \file
/// Statistical tests for results that are random by design (lesson 07's Monte Carlo tasks).
///
/// A random result cannot be compared with one right value; it can be compared with the
/// distribution a correct program draws it from. Each test here turns a result into a p-value:
/// the probability that a correct program gives a result at least this far from what is expected.
/// A test fails when its p-value is below its significance level alpha, so a correct program fails
/// it with probability alpha (exactly, for the exact tests; to the accuracy of the stated
/// approximation for the others). grader/README.md, "Statistical checks", lists every test a lesson
/// makes and adds their alphas into the false-failure rate of a whole grading.
///
/// Everything here runs on the host and is tested without a GPU (support/tests/statistics_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace grader::stats {

/// The significance level of every statistical check of the grader: a correct program fails one
/// such check once in a million gradings.
constexpr double kAlpha = 1e-6;

/// P(Z >= z) for a standard normal Z.
double normal_sf(double z);
/// P(|Z| >= |z|) for a standard normal Z.
double normal_two_sided(double z);
/// The regularized lower incomplete gamma function P(a, x) (a > 0, x >= 0).
double gamma_p(double a, double x);
/// Its complement Q(a, x) = 1 - P(a, x), accurate where it is tiny.
double gamma_q(double a, double x);
/// The regularized incomplete beta function I_x(a, b) (a, b > 0, 0 <= x <= 1).
double beta_i(double x, double a, double b);
/// P(X <= x) for X chi-square with \p k degrees of freedom.
double chi_square_cdf(double x, double k);
/// P(X >= x) for X chi-square with \p k degrees of freedom.
double chi_square_sf(double x, double k);
/// P(K <= k) for K binomial(n, p): exact (through the incomplete beta function).
double binomial_cdf(double k, double n, double p);
/// P(K >= k) for K binomial(n, p): exact.
double binomial_sf(double k, double n, double p);
/// P(sqrt(n) D >= t) in the limit of many samples (Kolmogorov's distribution): the p-value of a
/// Kolmogorov-Smirnov statistic D of n samples, accurate for n >= 1000 at the levels used here.
double kolmogorov_sf(double t);
/// The standard normal CDF.
double normal_cdf(double z);

/// One test's outcome, as a verdict shows it.
struct Test {
  std::string name;         ///< "the total count over 32 seeds (exact binomial test)"
  std::string observed;     ///< "52707 of 67108864 draws inside (pi ~ 3.14166)"
  std::string expected;     ///< "52707 +- 3369 (p = pi/4)"
  double p_value = 1.0;     ///< the probability of a result this far out, for a correct program
  double alpha = kAlpha;
  bool passed() const { return p_value >= alpha; }
  /// "name: observed; a correct program gives expected; p = 3e-9 < 1e-06"
  std::string describe() const;
};

/// Two-sided p-value of a count \p k drawn from binomial(n, p): twice the smaller tail, at most 1.
Test binomial_test(const std::string& name, double k, double n, double p);

/// The spread of \p samples (at least 2), each drawn independently from a distribution of
/// variance \p variance, against that variance: (m - 1) s^2 / variance is chi-square with m - 1
/// degrees of freedom for normal samples (and for a binomial count with n p (1 - p) >= 100, to a
/// good approximation). Two-sided: a spread too large (correlated draws) and a spread too small
/// (draws that are not random) both fail.
Test variance_test(const std::string& name, const std::vector<double>& samples, double variance);

/// The sum of \p m independent draws of a normal(0, \p variance) (or of any distribution with a
/// normal sum): z = sum / sqrt(m variance), two-sided.
Test mean_zero_test(const std::string& name, double sum, double m, double variance);

/// A sum of squares of \p m independent normal(0, \p variance) draws against its chi-square
/// distribution with m degrees of freedom, two-sided.
Test sum_of_squares_test(const std::string& name, double sum_of_squares, double m, double variance);

/// The Kolmogorov-Smirnov test of \p samples (at least 1000, any order) against a normal(0,
/// \p variance). NaN and infinite samples fail it at once.
Test normal_ks_test(const std::string& name, std::vector<float> samples, double variance);

/// The correlation of two sequences of equal length (at least 1000) of independent pairs: for
/// independent a and b, r sqrt(n) is close to a standard normal; two-sided.
Test independence_test(const std::string& name, const std::vector<float>& a, const std::vector<float>& b);

/// A few significant digits, for the facts a test shows: 3.14166, 2.1e-09.
std::string number_text(double value);

}  // namespace grader::stats
