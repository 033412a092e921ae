// random_uniform: reproducible, in range, and not degenerate.
#include "workbook/random.hpp"

#include <catch2/catch_test_macros.hpp>

#include <set>
#include <vector>

TEST_CASE("the same seed gives the same values and another seed other values", "[random]") {
  const auto a = workbook::random_floats(1000, 42);
  const auto b = workbook::random_floats(1000, 42);
  const auto c = workbook::random_floats(1000, 43);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("values lie between lo and hi and spread over the range", "[random]") {
  const auto values = workbook::random_floats(100000, 7, -2.0f, 3.0f);
  float lo = 10, hi = -10;
  double sum = 0;
  for (float v : values) {
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    sum += v;
  }
  CHECK(lo >= -2.0f);
  CHECK(hi < 3.0f);
  CHECK(lo < -1.99f);
  CHECK(hi > 2.99f);
  CHECK(sum / values.size() > 0.45);  // mean of U(-2, 3) is 0.5
  CHECK(sum / values.size() < 0.55);
  CHECK(std::set<float>(values.begin(), values.end()).size() > 99000);
}

TEST_CASE("element i does not depend on how many elements were asked for", "[random]") {
  const auto short_run = workbook::random_floats(10, 5);
  const auto long_run = workbook::random_floats(1000, 5);
  for (int i = 0; i < 10; ++i) CHECK(short_run[i] == long_run[i]);
  CHECK(workbook::random_uniform(5, 999, -1, 1) == long_run[999]);
}

TEST_CASE("fill_random writes random_floats' values in place, and nothing outside them", "[random]") {
  const std::size_t n = (std::size_t(1) << 20) + 3;  // several of parallel_for's ranges, one partial
  std::vector<float> buffer(n + 2, -7.0f);
  workbook::fill_random(buffer.data() + 1, n, 11, -3.0f, 2.0f);
  CHECK(buffer.front() == -7.0f);
  CHECK(buffer.back() == -7.0f);
  CHECK(std::vector<float>(buffer.begin() + 1, buffer.end() - 1) == workbook::random_floats(n, 11, -3.0f, 2.0f));
  workbook::fill_random(buffer.data(), 0, 11);  // nothing to write
  CHECK(buffer.front() == -7.0f);
}
