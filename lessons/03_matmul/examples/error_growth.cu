// Worked example for lesson 03: how far a float32 dot product of length K is from the exact
// one, and what rounding the inputs to TF32 (10-bit mantissas) adds. Runs on the host: the
// GPU rounds float32 the same way. Lesson 03's README quotes it; ctest runs it.
#include "workbook/workbook.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

// x rounded to TF32: 10 mantissa bits instead of 23 (round to nearest).
float to_tf32(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits = (bits + 0x1000u) & ~0x1FFFu;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

int main() {
  const double u = std::ldexp(1.0, -24);  // float32's unit roundoff
  std::printf("%7s  %12s  %12s  %12s  %10s\n", "K", "fp32 rms err", "rms / (u K)", "tf32 rms err", "tf32/fp32");
  for (int K = 16; K <= 65536; K *= 4) {
    double sq32 = 0, sqtf = 0;
    const int trials = 400;
    for (int t = 0; t < trials; ++t) {
      //! [dot]
      float sum = 0.0f, sum_tf32 = 0.0f;
      double exact = 0.0;
      for (int k = 0; k < K; ++k) {
        const float a = workbook::random_uniform(t, 2 * k, -1, 1), b = workbook::random_uniform(t, 2 * k + 1, -1, 1);
        sum += a * b;                         // what a float32 kernel does
        sum_tf32 += to_tf32(a) * to_tf32(b);  // inputs rounded as TF32 tensor cores do
        exact += double(a) * double(b);       // the reference: float64 is exact enough here
      }
      //! [dot]
      sq32 += (sum - exact) * (sum - exact);
      sqtf += (sum_tf32 - exact) * (sum_tf32 - exact);
    }
    const double rms32 = std::sqrt(sq32 / trials), rmstf = std::sqrt(sqtf / trials);
    std::printf("%7d  %12.2e  %12.3f  %12.2e  %10.0f\n", K, rms32, rms32 / (u * K), rmstf, rmstf / rms32);
  }
  return 0;
}
