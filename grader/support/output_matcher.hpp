/// \file
/// A Catch2 matcher over a whole kernel output: `REQUIRE_THAT(output, MatchesReference(expected, tol))`.
/// On failure it reports how many elements are wrong, which were never written, the first
/// indices with expected and got, anything written outside the array, and a hint.
#pragma once

#include "workbook/compare.hpp"
#include "workbook/guarded_array.hpp"

#include <catch2/catch_tostring.hpp>
#include <catch2/matchers/catch_matchers_templated.hpp>

#include <string>
#include <vector>

namespace grader {

/// What came back from the device: the values and the state of the guards around them.
struct DeviceOutput {
  std::vector<float> values;     ///< the output, copied to the host
  workbook::GuardReport guards;  ///< what was written outside it
};

/// Copies \p array (values and guard report) back from the device.
DeviceOutput read_back(const workbook::GuardedDeviceArray& array);

/// Matches a DeviceOutput whose values are within \p tolerance of \p expected and whose
/// guards are intact.
class MatchesReference : public Catch::Matchers::MatcherGenericBase {
public:
  /// \p expected must outlive the matcher. \p threads: how many threads the launch that wrote
  /// the output had (grid x block), when the grader knows it; the diagnosis uses it as evidence.
  MatchesReference(const std::vector<float>& expected, workbook::Tolerance tolerance, long long threads = -1);

  /// Compares and remembers the result for describe().
  bool match(const DeviceOutput& output) const;
  /// The diagnosis of the last match (Catch2 calls it after match()).
  std::string describe() const override;

private:
  const std::vector<float>& expected_;
  workbook::Tolerance tolerance_;
  long long threads_;
  mutable std::string diagnosis_;
};

}  // namespace grader

template <>
struct Catch::StringMaker<grader::DeviceOutput> {
  static std::string convert(const grader::DeviceOutput& output) {
    return "output of " + std::to_string(output.values.size()) + " elements";
  }
};
