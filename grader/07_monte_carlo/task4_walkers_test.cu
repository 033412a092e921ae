// Lesson 07, task 4 (challenge): random walkers, their generator states kept between calls.
//
// What is checked:
// - a "wrote nothing" probe (walkers_start leaves the positions as the grader filled them);
// - at every size: walkers_start puts every walker at the origin and writes nothing around the
//   positions; then four calls of walkers_advance, 8 steps each (sigma = 0.5). After the first and
//   the fourth call (t = 8 and 32 steps), the positions against the walk's distribution: the sum
//   of all x and y (z-test: independent walkers average out; identical ones do not) and the sum of
//   x^2 + y^2 (chi-square with 2 * count degrees of freedom: the mean squared displacement is
//   2 sigma^2 t only if every call continues where the last one stopped). Sizes: 33, 1000, 65539
//   (not under the sanitizer) and one drawn from the run's seed; at the two largest, x against y
//   after the fourth call (correlation);
// - the same seed and the same calls give the same positions, bit for bit;
// - the contract (monte_carlo.hpp) of both functions at several sizes;
// - the timed call against cuRAND's host API drawing the same normals into memory, then a kernel
//   adding them to the positions.
#include "monte_carlo_grader.hpp"

#include "baselines.hpp"
#include "diagnosis.hpp"
#include "output_matcher.hpp"
#include "tracer.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace monte_carlo_grader;
namespace stats = grader::stats;

namespace {

constexpr float kSigma = 0.5f;
constexpr int kStepsPerCall = 8;

std::string start_text(int count, std::uint64_t seed) {
  return "walkers_start(walkers with count = " + std::to_string(count) + ", seed = " + std::to_string(seed) + ", stream)";
}
std::string advance_text(int count, int steps) {
  return "walkers_advance(walkers with count = " + std::to_string(count) + ", steps = " + std::to_string(steps) +
         ", sigma = 0.5, stream)";
}

// An ensemble's memory: positions poisoned and guarded, states as the grader left them.
struct Ensemble {
  explicit Ensemble(int count) : x(std::size_t(count)), y(std::size_t(count)), states(std::size_t(count)), count(count) {}
  Walkers walkers() { return {x.data(), y.data(), states.data(), count}; }
  workbook::GuardedDeviceArray x, y;
  workbook::DeviceBuffer<curandStatePhilox4_32_10_t> states;
  int count;
};

struct Positions {
  std::vector<float> x, y;
};

// Waits, then FAILs when a position was not written (or is not finite) or memory around them was.
Positions read_positions(Ensemble& e, const std::string& after) {
  grader::synchronize(after);
  const grader::DeviceOutput x = grader::read_back(e.x), y = grader::read_back(e.y);
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < x.values.size(); ++i) {
    if (!std::isfinite(x.values[i]) || !std::isfinite(y.values[i])) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad > 0 || !x.guards.intact() || !y.guards.intact()) {
    std::string facts = "After " + after + ":";
    if (bad > 0) {
      facts += "\n  " + std::to_string(bad) + " of the " + std::to_string(x.values.size()) +
               " walkers have a position that was never written or is not a finite number, the first walker " +
               std::to_string(first) + " at (" + workbook::format_value(x.values[first], workbook::is_poison(x.values[first])) +
               ", " + workbook::format_value(y.values[first], workbook::is_poison(y.values[first])) + ")";
    }
    if (!x.guards.intact()) facts += "\n  x: " + x.guards.describe(x.values.size());
    if (!y.guards.intact()) facts += "\n  y: " + y.guards.describe(y.values.size());
    FAIL(facts);
  }
  return {x.values, y.values};
}

std::vector<int> sizes() {
  std::vector<int> out{33, 1000};
  if (!grader::sanitize_mode()) out.push_back(65539);
  out.push_back(2 + int(workbook::mix64(grader::seed_for("walker sizes")) % 30000));
  return out;
}

}  // namespace

TEST_CASE("Task 4: the walkers spread as a random walk does over several calls", "[task_4]") {
  grader::require_gpu();
  {
    Ensemble e(1000);
    const std::uint64_t seed = grader::seed_for("walkers probe");
    const auto trace = grader::trace([&] {
      walkers_start(e.walkers(), seed, student_stream());
      grader::synchronize(start_text(e.count, seed));
    });
    const grader::DeviceOutput out = grader::read_back(e.x);
    bool untouched = out.guards.intact();
    for (const float v : out.values) untouched = untouched && workbook::is_poison(v);
    const bool gpu_work = trace && (!trace->kernels.empty() || !trace->copies.empty() || !trace->memsets.empty());
    if (untouched && !gpu_work) {
      grader::wrote_nothing(start_text(e.count, seed) + " returned and wrote nothing: " + grader::untouched_output("x", 1000) +
                                "; it ran nothing on the GPU",
                            trace);
    }
  }
  const std::vector<int> all = sizes();
  std::vector<stats::Test> tests;
  for (std::size_t k = 0; k < all.size(); ++k) {
    const int count = all[k];
    CAPTURE(count);
    Ensemble e(count);
    const std::uint64_t seed = grader::seed_for("walkers " + std::to_string(count));
    walkers_start(e.walkers(), seed, student_stream());
    const Positions start = read_positions(e, start_text(count, seed));
    for (int i = 0; i < count; ++i) {
      if (start.x[i] != 0.0f || start.y[i] != 0.0f) {
        FAIL(start_text(count, seed) << " left walker " << i << " at (" << workbook::format_value(start.x[i]) << ", "
                                     << workbook::format_value(start.y[i]) << "), not at the origin.");
      }
    }
    for (int call = 1; call <= 4; ++call) {
      walkers_advance(e.walkers(), kStepsPerCall, kSigma, student_stream());
      if (call != 1 && call != 4) continue;
      const int t = call * kStepsPerCall;
      const std::string when = std::to_string(call) + (call == 1 ? " call" : " calls") + " of " +
                               std::to_string(kStepsPerCall) + " steps (t = " + std::to_string(t) + ")";
      const Positions p = read_positions(e, advance_text(count, kStepsPerCall) + ", call " + std::to_string(call));
      double sum = 0, squares = 0;
      for (int i = 0; i < count; ++i) sum += double(p.x[i]) + p.y[i], squares += double(p.x[i]) * p.x[i] + double(p.y[i]) * p.y[i];
      const double variance = double(kSigma) * kSigma * t;  // of each coordinate after t steps
      const std::string at = std::to_string(count) + " walkers after " + when;
      tests.push_back(stats::mean_zero_test("x + y summed over " + at, sum, 2.0 * count, variance));
      stats::Test msd = stats::sum_of_squares_test("x^2 + y^2 summed over " + at, squares, 2.0 * count, variance);
      msd.observed = "mean squared displacement " + stats::number_text(squares / count);
      msd.expected = "2 sigma^2 t = " + stats::number_text(2 * variance) + " +- " +
                     stats::number_text(2 * variance * std::sqrt(1.0 / count)) + " (one standard deviation)";
      tests.push_back(msd);
      if (call == 4 && k + 2 >= all.size() && count >= 1000) {
        tests.push_back(stats::independence_test("x and y of " + at, p.x, p.y));
      }
    }
  }
  require_statistics("walkers_start and walkers_advance", tests);
}

TEST_CASE("Task 4: the same seed gives the same walk", "[task_4]") {
  grader::require_gpu();
  const int count = 1000;
  const std::uint64_t seed = grader::seed_for("walkers reproducible");
  std::vector<Positions> runs;
  for (int run = 0; run < 2; ++run) {
    Ensemble e(count);
    walkers_start(e.walkers(), seed, student_stream());
    for (int call = 0; call < 3; ++call) walkers_advance(e.walkers(), kStepsPerCall, kSigma, student_stream());
    runs.push_back(read_positions(e, advance_text(count, kStepsPerCall) + ", the third call"));
  }
  std::size_t differ = 0;
  for (int i = 0; i < count; ++i) {
    differ += std::memcmp(&runs[0].x[i], &runs[1].x[i], 4) != 0 || std::memcmp(&runs[0].y[i], &runs[1].y[i], 4) != 0;
  }
  if (differ > 0) {
    FAIL(start_text(count, seed) << " then three calls of walkers_advance, done twice, left " << differ << " of " << count
                                 << " walkers in different places. The same seed and the same calls must give the same "
                                    "walk (monte_carlo.hpp): every number drawn from the states the seed set.");
  }
}

TEST_CASE("Task 4: walkers_start and walkers_advance keep their contract at every size", "[task_4]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract start = grader::given_stream_contract("walkers_start");
  const grader::Contract advance = grader::given_stream_contract("walkers_advance");
  for (const int count : {1, 1000, 1 << 20}) {
    CAPTURE(count);
    Ensemble e(count);
    const std::uint64_t seed = grader::seed_for("walkers contract");
    grader::require_contract_kept(start, {start_text(count, seed), {student_stream()}, {}, {{"count", double(count)}}},
                                  [&] { walkers_start(e.walkers(), seed, student_stream()); });
    for (const int steps : {0, 5}) {
      grader::require_contract_kept(advance,
                                    {advance_text(count, steps), {student_stream()}, {}, {{"count", double(count)}, {"steps", double(steps)}}},
                                    [&] { walkers_advance(e.walkers(), steps, kSigma, student_stream()); });
    }
  }
}

TEST_CASE("Task 4: walkers_advance against cuRAND's host API", "[task_4][perf]") {
  grader::require_gpu();
  const int count = monte_carlo_benchmark::kWalkers, steps = monte_carlo_benchmark::kWalkerSteps;
  const float sigma = monte_carlo_benchmark::kWalkerSigma;
  CAPTURE(count, steps);
  Ensemble e(count);
  const std::uint64_t seed = grader::seed_for("walkers timed");
  walkers_start(e.walkers(), seed, student_stream());
  walkers_advance(e.walkers(), steps, sigma, student_stream());
  {  // a walk that does not spread as it should is not timed
    const Positions p = read_positions(e, advance_text(count, steps));
    double squares = 0;
    for (int i = 0; i < count; ++i) squares += double(p.x[i]) * p.x[i] + double(p.y[i]) * p.y[i];
    require_statistics("walkers_advance, the timed call",
                       {stats::sum_of_squares_test("x^2 + y^2 summed over the walkers", squares, 2.0 * count,
                                                   double(sigma) * sigma * steps)});
  }
  workbook::MeasureOptions timing = monte_carlo_benchmark::graded_timing();
  timing.stream = student_stream();
  // The yardstick: the reference's figure when ./grade gives it (grader::yardstick), else timed here.
  const double host_api_ms = grader::yardstick("host_api_ms", [&] {
    monte_carlo_baselines::HostApiWalk host_api(count, steps);
    return workbook::measure([&](cudaStream_t s) { host_api.run(sigma, s); }, timing).median_ms;
  });
  timing.profiled = true;  // the student's code: what a profiling run profiles
  const auto student = workbook::measure([&](cudaStream_t s) { walkers_advance(e.walkers(), steps, sigma, s); }, timing);
  grader::record_metric("walkers", double(count));
  grader::record_metric("steps", double(steps));
  grader::record_metric("median_ms", student.median_ms);
  grader::record_metric("steps_per_second", double(count) * steps / (student.median_ms * 1e-3));
  grader::record_metric("speedup_over_host_api", host_api_ms / student.median_ms);
}
