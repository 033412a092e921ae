// Worked example for lesson 04: how far a float32 sum of n numbers is from the exact sum, in
// four orders of addition: one running sum (a CPU loop), a tree (what a block's shared-memory
// reduction does), grid-stride runs then a tree (a whole GPU's sum), and Kahan's compensated
// loop. Each error is printed as a multiple of u * sum|x|, the unit the error bounds use.
// Runs on the host: float32 addition rounds the same way on the GPU. Lesson 04's README shows
// its output; ctest runs it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "workbook/workbook.hpp"

namespace {

// One running sum, as `for i in range(n): s += x[i]` does: the k-th addition rounds a sum of
// k terms, so the bound is (n - 1) u sum|x|.
float sum_sequential(const std::vector<float>& x) {
  float s = 0.0f;
  for (const float v : x) s += v;
  return s;
}

// Level by level, as a block's shared-memory tree does (sequential addressing): element i
// gets element i + half, the array halves, log2(n) levels. Each input passes through only
// ceil(log2 n) additions, so the bound is ceil(log2 n) u sum|x|.
float sum_tree(std::vector<float> x) {  // a copy: the tree overwrites it
  std::size_t width = 1;
  while (width < x.size()) width *= 2;
  x.resize(width, 0.0f);  // padding with zeros changes no sum
  for (std::size_t half = width / 2; half > 0; half /= 2) {
    for (std::size_t i = 0; i < half; ++i) x[i] += x[i + half];
  }
  return x.empty() ? 0.0f : x[0];
}

// A GPU's grid-stride sum: thread t adds x[t], x[t + threads], ... in a running sum, then a
// tree adds the threads' sums. 2^16 threads, about what a wave of a GPU holds.
float sum_grid_stride(const std::vector<float>& x, std::size_t threads = std::size_t(1) << 16) {
  std::vector<float> partial(threads, 0.0f);
  for (std::size_t start = 0; start < x.size(); start += threads) {  // one grid step after another
    for (std::size_t t = 0; t < threads && start + t < x.size(); ++t) partial[t] += x[start + t];
  }
  return sum_tree(partial);
}

// Kahan's compensated sum: c carries what the last addition rounded away, and the next
// addition puts it back. About 2u sum|x| whatever n is, for four operations per element.
float sum_kahan(const std::vector<float>& x) {
  float s = 0.0f, c = 0.0f;
  for (const float v : x) {
    const float y = v - c;
    const float t = s + y;
    c = (t - s) - y;  // (t - s) is what was really added; minus y leaves the rounding error
    s = t;
  }
  return s;
}

// The reference: float64, added as a tree. Its error (at most 24 * 2^-53 sum|x| here) is a
// billion times smaller than the float32 errors it measures.
double sum_exact(const std::vector<float>& x, std::size_t begin, std::size_t end) {
  if (end - begin <= 8) {
    double s = 0;
    for (std::size_t i = begin; i < end; ++i) s += x[i];
    return s;
  }
  const std::size_t mid = begin + (end - begin) / 2;
  return sum_exact(x, begin, mid) + sum_exact(x, mid, end);
}

enum class Input { Uniform, Cancelling };

std::vector<float> make_input(Input input, std::size_t n, std::uint64_t seed) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = input == Input::Uniform ? workbook::random_uniform(seed, i, 0.0f, 1.0f)
                                   : workbook::random_uniform(seed, i, -1000.0f, 1000.0f) -
                                         workbook::random_uniform(seed, i + 1, -1000.0f, 1000.0f);
  }
  return x;
}

void table(Input input, const char* title) {
  const double u = std::ldexp(1.0, -24);  // float32's unit roundoff
  std::printf("%s\n", title);
  // Where the sum cancels, the same errors measured against |sum| instead of S.
  const bool against_sum = input == Input::Cancelling;
  std::printf("%10s %9s | %11s %11s %11s %11s%s\n", "n", "|sum|/S", "sequential", "tree", "grid-stride", "Kahan",
              against_sum ? " | tree in u|sum|" : "");
  for (int log2n = 12; log2n <= 24; log2n += 4) {
    const std::size_t n = std::size_t(1) << log2n;
    // Several inputs per size (fewer for large n), errors as root mean squares.
    const int trials = int(std::min<std::size_t>(64, std::max<std::size_t>(2, (std::size_t(1) << 22) / n)));
    double sq[4] = {}, ratio = 0, sq_relative = 0;
    for (int t = 0; t < trials; ++t) {
      const std::vector<float> x = make_input(input, n, 1000 * log2n + t);
      double sum_abs = 0;
      for (const float v : x) sum_abs += std::abs(double(v));
      const double exact = sum_exact(x, 0, n), unit = u * sum_abs;
      const double got[4] = {sum_sequential(x), sum_tree(x), sum_grid_stride(x), sum_kahan(x)};
      for (int k = 0; k < 4; ++k) sq[k] += (got[k] - exact) * (got[k] - exact) / (unit * unit);
      ratio += std::abs(exact) / sum_abs;
      sq_relative += (got[1] - exact) * (got[1] - exact) / (u * u * exact * exact);
    }
    std::printf("%10zu %9.1e |", n, ratio / trials);
    for (int k = 0; k < 4; ++k) std::printf(" %11.4f", std::sqrt(sq[k] / trials));
    if (against_sum) std::printf(" | %14.0f", std::sqrt(sq_relative / trials));
    std::printf("\n");
  }
}

}  // namespace

int main() {
  std::printf("rms error of a float32 sum, in units of u * S (u = 2^-24, S = sum|x|).\n"
              "Bounds: sequential n - 1, tree and grid-stride about log2 n, Kahan about 2.\n\n");
  table(Input::Uniform, "x uniform in [0, 1): no cancellation, |sum| = S");
  std::printf("\n");
  table(Input::Cancelling, "x[i] = r[i] - r[i+1], r uniform in [-1000, 1000]: the sum nearly cancels");
  return 0;
}
