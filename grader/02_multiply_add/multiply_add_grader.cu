// Lesson 02's grader: the helpers its tests share (multiply_add_grader.hpp) that are not
// templates.
#include "multiply_add_grader.hpp"

#include <string>

namespace multiply_add_grader {

int blocks_for(std::size_t n, int block) { return static_cast<int>((n + block - 1) / block); }

void check_output(Problem& p, long long threads) {
  grader::synchronize("multiply_add on n = " + std::to_string(p.n()));
  if (grader::agrees_on_device(p.y, kFmaOrNot, p.formula)) return;
  REQUIRE_THAT(grader::read_back(p.y), grader::MatchesReference(p.expected(), kFmaOrNot, threads));
}

void record_bandwidth(std::size_t n, const workbook::TimingStats& stats) {
  const double gbps = workbook::gigabytes_per_second(multiply_add_benchmark::kBytesPerElement * n, stats.median_ms);
  const double copy_gbps = workbook::copy_bandwidth_gbps_for_run();
  grader::record_metric("profiled_bytes", multiply_add_benchmark::kBytesPerElement * n);
  grader::record_metric("n", static_cast<double>(n));
  grader::record_metric("median_ms", stats.median_ms);
  grader::record_metric("gbps", gbps);
  grader::record_metric("copy_bandwidth_gbps", copy_gbps);
  grader::record_metric("fraction_of_copy_bandwidth", gbps / copy_gbps);
}

}  // namespace multiply_add_grader
