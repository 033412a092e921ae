// Lesson 07, task 3: thermal_velocities, through cuRAND's host API.
//
// What is checked:
// - a "wrote nothing" probe;
// - at every size, with v poisoned and guarded: every value written and nothing around v; the
//   values' mean (z-test) and mean square (chi-square) against a normal of variance kT/m; from 1000
//   values on, their distribution (Kolmogorov-Smirnov); at the last two sizes (the drawn one and
//   the largest), vx against vy
//   and vy against vz of the same particles (correlation). Sizes: 1, 2 (6 values), 3 (9: odd),
//   334, 33333 (99999: odd), one drawn from the run's seed and, outside the sanitizer, 2^21 + 1;
// - a generator seeded alike gives the same values; the next call on the same generator gives
//   new ones;
// - the work is cuRAND's: its kernels ran, none of the program's own;
// - the contract (monte_carlo.hpp: the stream given, which the generator must be told) at several sizes.
#include "monte_carlo_grader.hpp"

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

constexpr float kTOverM = 2.25f;  // kT/m in every call: the components' variance (sigma = 1.5)

std::string call_text(std::size_t particles) {
  return "thermal_velocities(generator, v, particles = " + std::to_string(particles) + ", kT_over_m = 2.25, stream)";
}

std::vector<std::size_t> sizes() {
  std::vector<std::size_t> out{1, 2, 3, 334, 33333};
  out.push_back(1000 + workbook::mix64(grader::seed_for("velocity sizes")) % 200000);
  if (!grader::sanitize_mode()) out.push_back((std::size_t{1} << 21) + 1);
  return out;
}

// Calls, waits, and FAILs unless every value was written and nothing around v.
std::vector<float> velocities(curandGenerator_t generator, workbook::GuardedDeviceArray& v, std::size_t particles) {
  v.poison();
  thermal_velocities(generator, v.data(), particles, kTOverM, student_stream());
  grader::synchronize(call_text(particles));
  const grader::DeviceOutput out = grader::read_back(v);
  std::size_t unwritten = 0, first = 0, not_finite = 0;
  for (std::size_t i = 0; i < out.values.size(); ++i) {
    if (workbook::is_poison(out.values[i])) {
      if (unwritten++ == 0) first = i;
    } else {
      not_finite += !std::isfinite(out.values[i]);
    }
  }
  if (unwritten > 0 || not_finite > 0 || !out.guards.intact()) {
    std::string facts = call_text(particles) + " did not fill v with 3 * " + std::to_string(particles) + " = " +
                        std::to_string(out.values.size()) + " numbers:";
    if (unwritten > 0) {
      facts += "\n  " + std::to_string(unwritten) + " values never written, the first at v[" + std::to_string(first) + "]";
      if (unwritten == 1 && first + 1 == out.values.size() && out.values.size() % 2 == 1) {
        facts += " (the last of an odd count; cuRAND's curandGenerateNormal returns CURAND_STATUS_LENGTH_NOT_MULTIPLE "
                 "for an odd count and writes nothing: lesson section 'Task 3')";
      }
    }
    if (not_finite > 0) facts += "\n  " + std::to_string(not_finite) + " values that are not finite numbers";
    if (!out.guards.intact()) facts += "\n  " + out.guards.describe(out.values.size());
    FAIL(facts);
  }
  return out.values;
}

}  // namespace

TEST_CASE("Task 3: thermal_velocities draws the Maxwell-Boltzmann components at every size", "[task_3]") {
  grader::require_gpu();
  {
    const std::size_t particles = 1000;
    Generator generator(grader::seed_for("velocities probe"));
    workbook::GuardedDeviceArray v(3 * particles);
    const auto trace = grader::trace([&] {
      thermal_velocities(generator.get(), v.data(), particles, kTOverM, student_stream());
      grader::synchronize(call_text(particles));
    });
    const grader::DeviceOutput out = grader::read_back(v);
    bool untouched = out.guards.intact();
    for (const float x : out.values) untouched = untouched && workbook::is_poison(x);
    const bool gpu_work = trace && (!trace->kernels.empty() || !trace->copies.empty() || !trace->memsets.empty());
    if (untouched && !gpu_work) {
      grader::wrote_nothing(call_text(particles) + " returned and wrote nothing: " +
                                grader::untouched_output("v", 3 * particles) + "; it ran nothing on the GPU",
                            trace);
    }
  }
  const std::vector<std::size_t> all = sizes();
  std::vector<stats::Test> tests;
  for (std::size_t k = 0; k < all.size(); ++k) {
    const std::size_t particles = all[k];
    CAPTURE(particles);
    Generator generator(grader::seed_for("velocities " + std::to_string(particles)));
    workbook::GuardedDeviceArray v(3 * particles);
    const std::vector<float> values = velocities(generator.get(), v, particles);
    const std::string at = "the " + std::to_string(values.size()) + " values of " + std::to_string(particles) + " particles";
    double sum = 0, squares = 0;
    for (const float x : values) sum += x, squares += double(x) * x;
    tests.push_back(stats::mean_zero_test(at, sum, double(values.size()), kTOverM));
    tests.push_back(stats::sum_of_squares_test(at, squares, double(values.size()), kTOverM));
    if (values.size() >= 1000) tests.push_back(stats::normal_ks_test(at, values, kTOverM));
    if (k + 2 >= all.size() && particles >= 1000) {
      std::vector<float> vx(particles), vy(particles), vz(particles);
      for (std::size_t i = 0; i < particles; ++i) vx[i] = values[3 * i], vy[i] = values[3 * i + 1], vz[i] = values[3 * i + 2];
      tests.push_back(stats::independence_test("vx and vy of " + std::to_string(particles) + " particles", vx, vy));
      tests.push_back(stats::independence_test("vy and vz of " + std::to_string(particles) + " particles", vy, vz));
    }
  }
  require_statistics("thermal_velocities", tests);
}

TEST_CASE("Task 3: thermal_velocities follows the generator (same seed: same values; next call: new ones)", "[task_3]") {
  grader::require_gpu();
  const std::size_t particles = 33333;  // 99999 values: odd
  const std::uint64_t seed = grader::seed_for("velocities reproducible");
  workbook::GuardedDeviceArray v(3 * particles);
  Generator first(seed), second(seed);
  const std::vector<float> a = velocities(first.get(), v, particles);
  const std::vector<float> b = velocities(second.get(), v, particles);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  if (differ > 0) {
    FAIL(call_text(particles) << " gave other values (" << differ << " of " << a.size()
                              << " differ) with a second generator made and seeded exactly like the first. The values "
                                 "should come from the generator the caller gives, and so follow its seed.");
  }
  const std::vector<float> next = velocities(first.get(), v, particles);
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += std::memcmp(&a[i], &next[i], sizeof(float)) == 0;
  if (same == a.size()) {
    FAIL(call_text(particles) << " gave exactly the same values on the generator's next call. Successive calls continue "
                                 "the generator's sequence (monte_carlo.hpp): setting its seed or offset again inside "
                                 "the function starts the sequence over.");
  }
}

TEST_CASE("Task 3: thermal_velocities lets cuRAND do the work", "[task_3]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const std::size_t particles = 1001;  // 3003 values: odd
  Generator generator(grader::seed_for("velocities library"));
  workbook::GuardedDeviceArray v(3 * particles);
  const auto trace = grader::trace([&] {
    thermal_velocities(generator.get(), v.data(), particles, kTOverM, student_stream());
    grader::synchronize(call_text(particles));
  });
  if (!trace) SKIP("the tracer could not start (CUPTI), so whose kernels ran is unknown");
  const std::vector<grader::TracedKernel> own = trace->program_kernels(), curand = curand_kernels(*trace);
  if (!own.empty()) {
    FAIL(call_text(particles) << " ran " << kernels_text(own)
                              << " of its own. Task 3 lets cuRAND's host API do the work: a mean of 0 and a standard "
                                 "deviation of sqrt(kT/m) are arguments of curandGenerateNormal, and an odd count needs "
                                 "no kernel either (lesson section 'Task 3').\nWhat the call did on the GPU:\n"
                              << trace->describe());
  }
  if (curand.empty()) {
    FAIL(call_text(particles) << " ran no kernel of cuRAND's library. What the call did on the GPU:\n" << trace->describe());
  }
}

TEST_CASE("Task 3: thermal_velocities keeps its contract at every size", "[task_3]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = grader::given_stream_contract("thermal_velocities");
  for (const std::size_t particles : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{33333}}) {
    CAPTURE(particles);
    Generator generator(grader::seed_for("velocities contract"));
    workbook::GuardedDeviceArray v(std::max<std::size_t>(3 * particles, 1));
    grader::require_contract_kept(contract, {call_text(particles), {student_stream()}, {}, {{"particles", double(particles)}}},
                                  [&] { thermal_velocities(generator.get(), v.data(), particles, kTOverM, student_stream()); });
  }
}
