// Lesson 07, task 2: histogram, privatised in shared memory.
//
// What is checked:
// - a "wrote nothing" probe;
// - exact counts at every shape below, with counts filled with a pattern before the call (they
//   must be overwritten) and guarded on both sides. The input holds energies drawn from the
//   Boltzmann distribution (baselines.hpp), never within a thousandth of a bin's width of an inner
//   edge, and the values that test the edges: lo, just below lo, just inside hi, hi, just above hi,
//   NaN and the infinities. Shapes: n = 0 and 1; one bin and 4096 bins; odd ranges and counts; two
//   drawn from the run's seed; and, outside the sanitizer, 2^26 values in 256 bins and 2^25 + 1001
//   values nearly all in one of 2 bins, whose count (over 2^24) a float cannot hold exactly;
// - the contract (monte_carlo.hpp) at several shapes;
// - the timed call against one global atomicAdd per value, on the same values in the same run.
#include "monte_carlo_grader.hpp"

#include "baselines.hpp"
#include "diagnosis.hpp"
#include "output_matcher.hpp"
#include "tracer.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace monte_carlo_grader;
namespace baselines = monte_carlo_baselines;

namespace {

struct Shape {
  std::size_t n;
  float lo, hi;
  int bins;
  std::string str() const {
    std::ostringstream text;
    text << "n = " << n << ", [" << lo << ", " << hi << "), bins = " << bins;
    return text.str();
  }
};

std::string call_text(const Shape& s) {
  std::ostringstream text;
  text << "histogram(values, n = " << s.n << ", lo = " << s.lo << ", hi = " << s.hi << ", counts, bins = " << s.bins
       << ", stream)";
  return text.str();
}

std::vector<Shape> shapes() {
  std::vector<Shape> out{{0, 0.0f, 8.0f, 16},    {1, 0.0f, 8.0f, 16},        {9, 0.0f, 8.0f, 4},
                         {1000, 0.0f, 8.0f, 1},  {1000, 0.0f, 8.0f, 4096},  {4097, 0.5f, 3.0f, 7},
                         {100003, 0.0f, 10.0f, 100}, {65536, 0.25f, 6.25f, 256}};
  const std::uint64_t s = grader::seed_for("histogram shapes");
  out.push_back({1 + workbook::mix64(s) % 200000, 0.0f, 8.0f, 1 + int(workbook::mix64(s + 1) % 4096)});
  out.push_back({1 + workbook::mix64(s + 2) % 2000000, 0.125f, 5.0f, 1 + int(workbook::mix64(s + 3) % 300)});
  if (!grader::sanitize_mode()) {
    out.push_back({monte_carlo_benchmark::kHistogramN, monte_carlo_benchmark::kHistogramLo,
                   monte_carlo_benchmark::kHistogramHi, monte_carlo_benchmark::kHistogramBins});
    out.push_back({(std::size_t{1} << 25) + 1001, 0.0f, 64.0f, 2});  // bin 0 holds nearly all: over 2^24
  }
  return out;
}

// The input on the device (guarded by NaNs, which a histogram does not count) and on the host.
struct Problem {
  Problem(const Shape& s, const std::string& name)
      : shape(s),
        host(baselines::energies(s.n, grader::seed_for("histogram " + name + " " + s.str()), s.lo, s.hi, s.bins, true)),
        values(std::max<std::size_t>(s.n, 1), workbook::kInputGuardBits),
        counts(std::size_t(s.bins)) {
    if (s.n > 0) values.upload(host);
  }
  unsigned int* counts_data() { return reinterpret_cast<unsigned int*>(counts.data()); }
  Shape shape;
  std::vector<float> host;
  workbook::GuardedDeviceArray values, counts;
};

std::vector<unsigned int> as_counts(const std::vector<float>& words) {
  std::vector<unsigned int> out(words.size());
  std::memcpy(out.data(), words.data(), words.size() * sizeof(float));
  return out;
}

// Waits, then FAILs with the wrong bins and the facts about the input's edge values.
void check_counts(Problem& p) {
  const Shape& s = p.shape;
  grader::synchronize(call_text(s));
  const grader::DeviceOutput out = grader::read_back(p.counts);
  const std::vector<unsigned int> got = as_counts(out.values);
  const std::vector<unsigned int> expected = baselines::histogram_on_host(p.host, s.lo, s.hi, s.bins);
  std::size_t wrong = 0;
  std::ostringstream list;
  unsigned long long sum_got = 0, sum_expected = 0;
  for (std::size_t b = 0; b < got.size(); ++b) {
    sum_got += got[b];
    sum_expected += expected[b];
    if (got[b] == expected[b]) continue;
    if (++wrong <= 6) {
      list << "\n  bin " << b << (b == 0 ? " (the first)" : b + 1 == got.size() ? " (the last)" : "") << ": expected "
           << expected[b] << ", got ";
      if (workbook::is_poison(out.values[b])) {
        list << "nothing written";
      } else {
        list << got[b] << " (" << (got[b] > expected[b] ? "+" : "-")
             << (got[b] > expected[b] ? got[b] - expected[b] : expected[b] - got[b]) << ")";
      }
    }
  }
  if (wrong == 0 && out.guards.intact()) return;
  std::ostringstream facts;
  facts << call_text(s) << " gave wrong counts";
  if (wrong > 0) {
    const baselines::EdgeFacts edges = baselines::edge_facts(p.host, s.lo, s.hi, s.bins);
    facts << ": " << wrong << " of its " << got.size() << " bins are wrong." << list.str();
    if (wrong > 6) facts << "\n  ...";
    facts << "\nThe bins add up to " << sum_got << "; the " << s.n << " values hold " << sum_expected
          << " in [lo, hi). Among the values: " << edges.below_lo << " below lo (" << edges.just_below_lo
          << " of them less than a bin's width below it), " << edges.at_or_above_hi << " at or above hi, and "
          << edges.not_finite << " NaN or infinite; none of these is counted.";
    // The hint's evidence (grader/hints.json, bin-index-truncated): bin 0 is over by exactly the
    // values a truncating index sends there from below lo, every other bin is right, the last at
    // most short by the values next to hi, whose float index may round up to bins.
    const std::size_t truncated = edges.just_below_lo + edges.nan;
    const std::size_t last = got.size() - 1;
    bool others_right = true;
    for (std::size_t b = 1; b < last; ++b) others_right = others_right && got[b] == expected[b];
    const long long last_short = last > 0 ? (long long)expected[last] - (long long)got[last] : 0;
    const bool last_explained = last_short >= 0 && (unsigned long long)last_short <= edges.just_below_hi;
    if (truncated > 0 && others_right && last_explained &&
        (long long)got[0] - (long long)expected[0] == (long long)truncated) {
      facts << "\n"
            << grader::hint(grader::HintId::bin_index_truncated,
                            "bin 0 holds exactly the " + std::to_string(edges.just_below_lo) +
                                " values less than a bin's width below lo and the " + std::to_string(edges.nan) +
                                " NaNs too many: int() rounds (v - lo) * scale toward zero, so anything in (-1, 0) "
                                "becomes bin 0, and a NaN converts to 0 on the GPU. Decide from the value whether it "
                                "is counted (lo <= v && v < hi is false for NaN), then compute its bin.");
    }
  }
  if (!out.guards.intact()) facts << "\n" << out.guards.describe(got.size());
  FAIL(facts.str());
}

}  // namespace

TEST_CASE("Task 2: histogram counts exactly at every shape", "[task_2]") {
  grader::require_gpu();
  {
    const Shape probe{1000, 0.0f, 8.0f, 64};
    Problem p(probe, "probe");
    const auto trace = grader::trace([&] {
      histogram(p.values.data(), probe.n, probe.lo, probe.hi, p.counts_data(), probe.bins, student_stream());
      grader::synchronize(call_text(probe));
    });
    const grader::DeviceOutput out = grader::read_back(p.counts);
    bool untouched = out.guards.intact();
    for (const float c : out.values) untouched = untouched && workbook::is_poison(c);
    const bool gpu_work = trace && (!trace->kernels.empty() || !trace->copies.empty() || !trace->memsets.empty());
    if (untouched && !gpu_work) {
      grader::wrote_nothing(call_text(probe) + " returned and wrote nothing: " +
                                grader::untouched_output("counts", std::size_t(probe.bins)) + "; it ran nothing on the GPU",
                            trace);
    }
  }
  for (const Shape& s : shapes()) {
    CAPTURE(s.str());
    Problem p(s, "shape");
    histogram(p.values.data(), s.n, s.lo, s.hi, p.counts_data(), s.bins, student_stream());
    check_counts(p);
  }
}

TEST_CASE("Task 2: histogram keeps its contract at every shape", "[task_2]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = grader::given_stream_contract("histogram");
  for (const Shape& s : {Shape{0, 0.0f, 8.0f, 16}, Shape{1000, 0.0f, 8.0f, 4096}, Shape{100003, 0.0f, 10.0f, 100},
                         Shape{std::size_t{1} << 24, 0.0f, 8.0f, 256}}) {
    CAPTURE(s.str());
    Problem p(s, "contract");
    grader::require_contract_kept(contract, {call_text(s), {student_stream()}, {}, {{"n", double(s.n)}, {"bins", double(s.bins)}}},
                                  [&] { histogram(p.values.data(), s.n, s.lo, s.hi, p.counts_data(), s.bins, student_stream()); });
  }
}

TEST_CASE("Task 2: histogram against one global atomic per value", "[task_2][perf]") {
  grader::require_gpu();
  const Shape s{monte_carlo_benchmark::kHistogramN, monte_carlo_benchmark::kHistogramLo, monte_carlo_benchmark::kHistogramHi,
                monte_carlo_benchmark::kHistogramBins};
  CAPTURE(s.str());
  Problem p(s, "timed");
  histogram(p.values.data(), s.n, s.lo, s.hi, p.counts_data(), s.bins, student_stream());
  check_counts(p);  // wrong counts are not timed
  workbook::MeasureOptions timing = monte_carlo_benchmark::graded_timing();
  timing.stream = student_stream();
  // The yardstick: the reference's figure when ./grade gives it (grader::yardstick), else timed here.
  const double global_atomics_ms = grader::yardstick("global_atomics_ms", [&] {
    return workbook::measure([&](cudaStream_t st) {
      monte_carlo_baselines::global_atomics_histogram(p.values.data(), s.n, s.lo, s.hi, p.counts_data(), s.bins, st);
    }, timing).median_ms;
  });
  timing.profiled = true;  // the student's code: what a profiling run profiles
  const auto student = workbook::measure(
      [&](cudaStream_t st) { histogram(p.values.data(), s.n, s.lo, s.hi, p.counts_data(), s.bins, st); }, timing);
  const double bytes = 4.0 * double(s.n);  // each value read once
  const double gbps = workbook::gigabytes_per_second(bytes, student.median_ms);
  const double copy_gbps = workbook::copy_bandwidth_gbps_for_run();
  grader::record_metric("profiled_bytes", bytes);
  grader::record_metric("n", double(s.n));
  grader::record_metric("median_ms", student.median_ms);
  grader::record_metric("gbps", gbps);
  grader::record_metric("copy_bandwidth_gbps", copy_gbps);
  grader::record_metric("fraction_of_copy_bandwidth", gbps / copy_gbps);
  grader::record_metric("speedup_over_global_atomics", global_atomics_ms / student.median_ms);
}
