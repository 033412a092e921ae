// Statistical tests for random results (statistics.hpp). The special functions are the textbook
// ones: the incomplete gamma function by its series below a + 1 and its continued fraction above,
// the incomplete beta function by its continued fraction (modified Lentz), on the side of the
// mean where it converges, with as many terms as large parameters need.
#include "statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace grader::stats {

namespace {

constexpr double kEpsilon = 1e-15;
constexpr double kTiny = 1e-300;

// Enough terms for parameters up to about 1e11 (a million draws over a hundred thousand seeds):
// the continued fractions need a few times sqrt(max(a, b)) near the mean.
int max_terms(double a, double b = 0) { return 1000 + int(20.0 * std::sqrt(std::max(a, b))); }

// P(a, x) by its series, for x < a + 1.
double gamma_p_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1, last = max_terms(a, x); n < last; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * kEpsilon) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Q(a, x) by its continued fraction, for x >= a + 1.
double gamma_q_fraction(double a, double x) {
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int i = 1, last = max_terms(a, x); i < last; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < kEpsilon) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

// The continued fraction of I_x(a, b), for x < (a + 1) / (a + b + 2).
double beta_fraction(double x, double a, double b) {
  const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
  double c = 1.0, d = 1.0 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1, last = max_terms(a, b); m < last; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < kEpsilon) break;
  }
  return h;
}

double clamp01(double p) { return std::min(1.0, std::max(0.0, p)); }

}  // namespace

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }
double normal_two_sided(double z) { return std::min(1.0, std::erfc(std::fabs(z) / std::sqrt(2.0))); }

double gamma_p(double a, double x) {
  if (!(a > 0) || !(x >= 0)) throw std::invalid_argument("gamma_p: needs a > 0 and x >= 0");
  if (x == 0) return 0.0;
  return x < a + 1.0 ? clamp01(gamma_p_series(a, x)) : clamp01(1.0 - gamma_q_fraction(a, x));
}

double gamma_q(double a, double x) {
  if (!(a > 0) || !(x >= 0)) throw std::invalid_argument("gamma_q: needs a > 0 and x >= 0");
  if (x == 0) return 1.0;
  return x < a + 1.0 ? clamp01(1.0 - gamma_p_series(a, x)) : clamp01(gamma_q_fraction(a, x));
}

double beta_i(double x, double a, double b) {
  if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1)) throw std::invalid_argument("beta_i: needs a, b > 0 and 0 <= x <= 1");
  if (x == 0 || x == 1) return x;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return clamp01(front * beta_fraction(x, a, b) / a);
  return clamp01(1.0 - front * beta_fraction(1.0 - x, b, a) / b);
}

double chi_square_cdf(double x, double k) { return x <= 0 ? 0.0 : gamma_p(k / 2.0, x / 2.0); }
double chi_square_sf(double x, double k) { return x <= 0 ? 1.0 : gamma_q(k / 2.0, x / 2.0); }

double binomial_cdf(double k, double n, double p) {
  k = std::floor(k);
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  if (p <= 0) return 1.0;
  if (p >= 1) return 0.0;
  return beta_i(1.0 - p, n - k, k + 1.0);
}

double binomial_sf(double k, double n, double p) {
  k = std::ceil(k);
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  if (p <= 0) return 0.0;
  if (p >= 1) return 1.0;
  return beta_i(p, k, n - k + 1.0);
}

double kolmogorov_sf(double t) {
  if (t < 0.2) return 1.0;  // the series converges slowly there, and the answer is 1 to 1e-15
  double sum = 0.0;
  for (int k = 1; k < 100; ++k) {
    const double term = std::exp(-2.0 * k * k * t * t);
    sum += (k % 2 ? term : -term);
    if (term < 1e-18) break;
  }
  return clamp01(2.0 * sum);
}

std::string number_text(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[32];
  const double magnitude = std::fabs(value);
  if (value == std::floor(value) && magnitude < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else if (magnitude != 0 && (magnitude < 1e-3 || magnitude >= 1e7)) {
    std::snprintf(text, sizeof text, "%.2g", value);
  } else {
    std::snprintf(text, sizeof text, "%.6g", value);
  }
  return text;
}

std::string Test::describe() const {
  std::ostringstream text;
  text << name << ": " << observed << "; a correct program gives " << expected << ". ";
  if (passed()) {
    text << "p = " << number_text(p_value);
  } else {
    text << "A correct program lands this far out with probability p = " << number_text(p_value)
         << ", below the " << number_text(alpha) << " the grader allows";
  }
  return text.str();
}

Test binomial_test(const std::string& name, double k, double n, double p) {
  Test t;
  t.name = name + " (exact binomial test)";
  const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
  t.observed = number_text(k) + " of " + number_text(n);
  t.expected = number_text(mean) + " +- " + number_text(sd) + " (one standard deviation)";
  if (!(k >= 0) || !(k <= n) || k != std::floor(k)) {
    t.p_value = 0.0;
    t.expected += ", a whole number from 0 to " + number_text(n);
    return t;
  }
  t.p_value = std::min(1.0, 2.0 * std::min(binomial_cdf(k, n, p), binomial_sf(k, n, p)));
  return t;
}

Test variance_test(const std::string& name, const std::vector<double>& samples, double variance) {
  if (samples.size() < 2 || !(variance > 0)) throw std::invalid_argument("variance_test: needs 2 samples and a variance > 0");
  double mean = 0;
  for (double s : samples) mean += s;
  mean /= double(samples.size());
  double squares = 0;
  for (double s : samples) squares += (s - mean) * (s - mean);
  const double m = double(samples.size()), s2 = squares / (m - 1), chi2 = squares / variance;
  Test t;
  t.name = name + " (chi-square test of the variance, " + number_text(m - 1) + " degrees of freedom)";
  t.observed = "standard deviation " + number_text(std::sqrt(s2));
  t.expected = number_text(std::sqrt(variance));
  t.p_value = std::isfinite(chi2) ? std::min(1.0, 2.0 * std::min(chi_square_cdf(chi2, m - 1), chi_square_sf(chi2, m - 1))) : 0.0;
  return t;
}

Test mean_zero_test(const std::string& name, double sum, double m, double variance) {
  Test t;
  t.name = name + " (z-test of the mean)";
  const double sd = std::sqrt(m * variance);
  t.observed = "mean " + number_text(sum / m);
  t.expected = "0 +- " + number_text(sd / m) + " (one standard deviation)";
  t.p_value = std::isfinite(sum) ? normal_two_sided(sum / sd) : 0.0;
  return t;
}

Test sum_of_squares_test(const std::string& name, double sum_of_squares, double m, double variance) {
  Test t;
  t.name = name + " (chi-square test, " + number_text(m) + " degrees of freedom)";
  const double chi2 = sum_of_squares / variance;
  t.observed = "mean square " + number_text(sum_of_squares / m);
  t.expected = number_text(variance) + " +- " + number_text(variance * std::sqrt(2.0 / m)) + " (one standard deviation)";
  t.p_value = std::isfinite(chi2) ? std::min(1.0, 2.0 * std::min(chi_square_cdf(chi2, m), chi_square_sf(chi2, m))) : 0.0;
  return t;
}

Test normal_ks_test(const std::string& name, std::vector<float> samples, double variance) {
  Test t;
  t.name = name + " (Kolmogorov-Smirnov test against the normal distribution)";
  t.expected = "a largest gap near " + number_text(0.87 / std::sqrt(double(samples.size()))) +
               " between the samples' distribution and the normal one";
  for (float s : samples) {
    if (!std::isfinite(s)) {
      t.observed = "a value that is not a finite number (" + number_text(s) + ")";
      t.p_value = 0.0;
      return t;
    }
  }
  std::sort(samples.begin(), samples.end());
  const double n = double(samples.size()), sd = std::sqrt(variance);
  double gap = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double f = normal_cdf(samples[i] / sd);
    gap = std::max({gap, f - double(i) / n, double(i + 1) / n - f});
  }
  t.observed = "the largest gap " + number_text(gap);
  const double root = std::sqrt(n);
  t.p_value = kolmogorov_sf((root + 0.12 + 0.11 / root) * gap);  // Stephens' correction for finite n
  return t;
}

Test independence_test(const std::string& name, const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.size() < 4) throw std::invalid_argument("independence_test: needs two sequences of equal length");
  const double n = double(a.size());
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= n, mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb), saa += (a[i] - ma) * (a[i] - ma), sbb += (b[i] - mb) * (b[i] - mb);
  }
  Test t;
  t.name = name + " (correlation test)";
  t.expected = "0 +- " + number_text(1.0 / std::sqrt(n - 3)) + " (one standard deviation)";
  if (!(saa > 0) || !(sbb > 0) || !std::isfinite(sab)) {
    t.observed = "no spread to correlate (every value the same, or not finite)";
    t.p_value = 0.0;
    return t;
  }
  const double r = std::clamp(sab / std::sqrt(saa * sbb), -1.0 + 1e-15, 1.0 - 1e-15);
  t.observed = "correlation " + number_text(r);
  t.p_value = normal_two_sided(std::atanh(r) * std::sqrt(n - 3));  // Fisher's z
  return t;
}

}  // namespace grader::stats
