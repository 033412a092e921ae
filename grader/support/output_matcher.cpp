// MatchesReference: compare, check the guards, explain.
#include "output_matcher.hpp"

#include "diagnosis.hpp"

namespace grader {

DeviceOutput read_back(const workbook::GuardedDeviceArray& array) {
  DeviceOutput output;
  output.values = array.download(output.guards);
  return output;
}

MatchesReference::MatchesReference(const std::vector<float>& expected, workbook::Tolerance tolerance,
                                   long long threads)
    : expected_(expected), tolerance_(tolerance), threads_(threads) {}

bool MatchesReference::match(const DeviceOutput& output) const {
  if (output.values.size() != expected_.size()) {
    diagnosis_ = "has " + std::to_string(output.values.size()) + " elements, the reference " +
                 std::to_string(expected_.size());
    return false;
  }
  const auto comparison =
      workbook::compare_to_reference(output.values.data(), expected_.data(), expected_.size(), tolerance_);
  diagnosis_ = diagnose(comparison, output.guards, expected_.size(), threads_);
  return diagnosis_.empty();
}

std::string MatchesReference::describe() const {
  return diagnosis_.empty() ? "matches the reference" : "is checked against the reference:\n" + diagnosis_;
}

}  // namespace grader
