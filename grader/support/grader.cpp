// Per-test state and helpers shared by every lesson's grader tests.
#include "grader.hpp"

#include "workbook/cuda_check.hpp"
#include "workbook/device_info.hpp"
#include "workbook/random.hpp"
#include "workbook/startup_environment.hpp"

#include <catch2/catch_get_random_seed.hpp>
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>

namespace grader {
namespace {

struct TestState {
  std::vector<std::pair<std::string, double>> metrics;
  bool wrote_nothing = false;
};

TestState& state() {
  static TestState s;
  return s;
}

std::function<void(const std::string&, bool)>& wait_reporter() {
  static std::function<void(const std::string&, bool)> reporter;
  return reporter;
}

void report_wait(const std::string& what, bool done) {
  if (wait_reporter()) wait_reporter()(what, done);
}

}  // namespace

void require_gpu() {
  if (workbook::cuda_device_count() == 0) SKIP(workbook::no_gpu_reason());
}

std::uint64_t seed() { return Catch::getSeed(); }

std::uint64_t seed_for(const std::string& name) {
  return workbook::mix64(seed() ^ std::hash<std::string>{}(name));
}

bool sanitize_mode() { return workbook::sanitizer_run(); }

void record_metric(const std::string& name, double value) { state().metrics.emplace_back(name, value); }

const std::vector<std::pair<std::string, double>>& recorded_metrics() { return state().metrics; }

void wrote_nothing(const std::string& facts) {
  state().wrote_nothing = true;
  FAIL(facts);
  std::abort();  // FAIL throws; this only tells the compiler so
}

bool marked_wrote_nothing() { return state().wrote_nothing; }

void reset_test_state() { state() = TestState{}; }

void set_wait_reporter(std::function<void(const std::string&, bool)> reporter) {
  wait_reporter() = std::move(reporter);
}

void synchronize(const std::string& what) {
  report_wait(what, false);
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  report_wait(what, true);
}

GpuWait::GpuWait(const std::string& what) { report_wait(what, false); }

GpuWait::~GpuWait() { report_wait("", true); }

std::vector<std::size_t> test_sizes(int block, std::size_t large) {
  const std::size_t b = static_cast<std::size_t>(block);
  // 1000 and 1000003: fixed sizes that no block divides, so the first failing size (and with it
  // the diagnosis) does not depend on the seed's draws alone.
  std::vector<std::size_t> sizes{1, 31, 32, 33, b - 1, b, b + 1, 1000, 1000003};
  // Two random sizes drawn from the run's seed, so each run also covers fresh shapes.
  const std::uint64_t s = seed_for("test_sizes");
  sizes.push_back(2 + workbook::mix64(s) % 4093);
  sizes.push_back(4096 + workbook::mix64(s + 1) % (1u << 20));
  if (!sanitize_mode()) sizes.push_back(large);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  sizes.erase(std::remove(sizes.begin(), sizes.end(), std::size_t{0}), sizes.end());
  return sizes;
}

}  // namespace grader
