// Lesson 07, task 1: count_inside_circle, pi by Monte Carlo with cuRAND's device API.
//
// What is checked:
// - a "wrote nothing" probe (the counter left as the grader filled it, nothing run on the GPU);
// - at every size, 32 seeds (4 under compute-sanitizer): no count above n (the counter is filled
//   with a large value before each call, so a count added to it is seen), the total of the counts
//   against the binomial distribution of their points with p = pi/4 (exact), and, where a count's
//   standard deviation is 10 or more, the spread of the counts against the binomial one
//   (chi-square): correlated streams give too large a spread, draws that ignore the seed too
//   small a one. Sizes: 1, 2, 3, 100, 255, 257, 1000, 4097, 100003, two drawn from the run's seed
//   and 2^26 + 5 (under the sanitizer: 1, 3, 257, 1000, 4097 and one drawn), so a last partial
//   block left out (or counted twice) moves the total;
// - the same seed gives the same count, three times (integer counts do not depend on the order
//   they are added in);
// - the contract (monte_carlo.hpp) at several sizes;
// - the timed call against cuRAND's host API doing the same job through memory.
#include "monte_carlo_grader.hpp"

#include "baselines.hpp"
#include "tracer.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace monte_carlo_grader;
namespace stats = grader::stats;

namespace {

// 32 seeds a size; under compute-sanitizer, whose tools are there for memory errors and races and
// slow every launch many times over, 4 seeds and the smaller sizes (2 seeds in the check of a pass).
int seeds() { return grader::pass_check_mode() ? 2 : grader::sanitize_mode() ? 4 : 32; }

std::string call_text(std::uint64_t n, std::uint64_t seed) {
  return "count_inside_circle(n = " + std::to_string(n) + ", seed = " + std::to_string(seed) + ", inside, stream)";
}

std::vector<std::uint64_t> sizes() {
  const std::uint64_t s = grader::seed_for("pi sizes");
  if (grader::sanitize_mode()) return {1, 3, 257, 1000, 4097, 2 + workbook::mix64(s) % 20000};
  return {1, 2, 3, 100, 255, 257, 1000, 4097, 100003, 2 + workbook::mix64(s) % 20000,
          20000 + workbook::mix64(s + 1) % 3000000, (std::uint64_t{1} << 26) + 5};
}

// One call, waited for; FAILs when the count cannot be a count of n points.
unsigned long long count(DeviceCounter& inside, std::uint64_t n, std::uint64_t seed) {
  inside.poison();
  count_inside_circle(n, seed, inside.data(), student_stream());
  grader::synchronize(call_text(n, seed));
  const unsigned long long k = inside.read();
  if (k == DeviceCounter::kPoison) {
    FAIL(call_text(n, seed) << " left *inside as it was: the grader put " << DeviceCounter::kPoison
                            << " there before the call, and that is what it holds after it.");
  }
  if (k > n) {
    std::string facts = call_text(n, seed) + " counted " + std::to_string(k) + " points inside, more than the " +
                        std::to_string(n) + " it draws.";
    if (k > DeviceCounter::kPoison && k - DeviceCounter::kPoison <= n) {
      facts += " The grader put " + std::to_string(DeviceCounter::kPoison) + " in *inside before the call: " +
               std::to_string(k) + " is that plus " + std::to_string(k - DeviceCounter::kPoison) +
               ". The header says the count is written to *inside, not added to what was there.";
    }
    FAIL(facts);
  }
  return k;
}

}  // namespace

TEST_CASE("Task 1: count_inside_circle counts as a correct sampler does at every size", "[task_1]") {
  grader::require_gpu();
  DeviceCounter inside;
  {
    const std::uint64_t n = 1000, seed = grader::seed_for("pi probe");
    const auto trace = grader::trace([&] {
      count_inside_circle(n, seed, inside.data(), student_stream());
      grader::synchronize(call_text(n, seed));
    });
    const bool gpu_work = trace && (!trace->kernels.empty() || !trace->copies.empty() || !trace->memsets.empty());
    if (inside.read() == DeviceCounter::kPoison && !gpu_work) {
      grader::wrote_nothing(call_text(n, seed) + " returned and left *inside as the grader filled it; it ran nothing on the GPU",
                            trace);
    }
  }
  std::vector<stats::Test> tests;
  for (const std::uint64_t n : sizes()) {
    CAPTURE(n);
    std::vector<double> counts;
    double total = 0;
    for (int k = 0; k < seeds(); ++k) {
      const double c = double(count(inside, n, grader::seed_for("pi seed " + std::to_string(k) + " n " + std::to_string(n))));
      counts.push_back(c);
      total += c;
    }
    const std::string at = "n = " + std::to_string(n) + ", " + std::to_string(seeds()) + " seeds";
    stats::Test t = stats::binomial_test("the total count over " + at, total, seeds() * double(n), kQuarterPi);
    t.observed += " points inside (pi ~ " + stats::number_text(4.0 * total / (seeds() * double(n))) + ")";
    tests.push_back(t);
    const double variance = double(n) * kQuarterPi * (1 - kQuarterPi);
    if (variance >= 100) tests.push_back(stats::variance_test("the spread of the counts over " + at, counts, variance));
  }
  require_statistics("count_inside_circle", tests);
}

TEST_CASE("Task 1: count_inside_circle gives the same count for the same seed", "[task_1]") {
  grader::require_gpu();
  DeviceCounter inside;
  std::vector<std::uint64_t> ns{1000, 100003};
  if (!grader::sanitize_mode()) ns.push_back((std::uint64_t{1} << 26) + 5);
  for (const std::uint64_t n : ns) {
    const std::uint64_t seed = grader::seed_for("pi same seed " + std::to_string(n));
    const unsigned long long first = count(inside, n, seed);
    for (int again = 1; again < 3; ++again) {
      const unsigned long long k = count(inside, n, seed);
      if (k != first) {
        FAIL(call_text(n, seed) << " counted " << first << " points inside, then " << k
                                << " when called again with the same n and seed. The header asks for the same count: "
                                   "a count made of integers is the same in whatever order the GPU adds it up, one "
                                   "made in floating point is not, and neither is one drawn from a seed that changes "
                                   "(a clock, a counter kept between calls).");
      }
    }
  }
}

TEST_CASE("Task 1: count_inside_circle keeps its contract at every size", "[task_1]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = grader::given_stream_contract("count_inside_circle");
  DeviceCounter inside;
  for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{100003},
                                (std::uint64_t{1} << 24) + 1}) {
    CAPTURE(n);
    const std::uint64_t seed = grader::seed_for("pi contract");
    grader::require_contract_kept(contract, {call_text(n, seed), {student_stream()}, {}, {{"n", double(n)}}},
                                  [&] { count_inside_circle(n, seed, inside.data(), student_stream()); });
  }
}

TEST_CASE("Task 1: count_inside_circle against cuRAND's host API", "[task_1][perf]") {
  grader::require_gpu();
  const std::uint64_t n = monte_carlo_benchmark::kPiN, seed = grader::seed_for("pi timed");
  CAPTURE(n);
  DeviceCounter inside;
  // A count far from pi/4 is not timed.
  const unsigned long long k = count(inside, n, seed);
  require_statistics("count_inside_circle, the timed call", {stats::binomial_test("its count", double(k), double(n), kQuarterPi)});
  workbook::MeasureOptions timing = monte_carlo_benchmark::graded_timing();
  timing.stream = student_stream();
  // The yardstick: the reference's figure when ./grade gives it (grader::yardstick), else timed here.
  const double host_api_ms = grader::yardstick("host_api_ms", [&] {
    monte_carlo_baselines::HostApiPi host_api(n);
    return workbook::measure([&](cudaStream_t s) { host_api.run(inside.data(), s); }, timing).median_ms;
  });
  timing.profiled = true;  // the student's code: what a profiling run profiles
  const auto student = workbook::measure([&](cudaStream_t s) { count_inside_circle(n, seed, inside.data(), s); }, timing);
  grader::record_metric("n", double(n));
  grader::record_metric("median_ms", student.median_ms);
  grader::record_metric("samples_per_second", double(n) / (student.median_ms * 1e-3));
  grader::record_metric("speedup_over_host_api", host_api_ms / student.median_ms);
}
