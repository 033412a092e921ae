// The hints: each names the usual cause of one pattern of wrong output.
#include "diagnosis.hpp"

#include <sstream>

namespace grader {

bool nothing_written(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards) {
  return comparison.count > 0 && comparison.unwritten == comparison.count && guards.intact();
}

std::string diagnose(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards, std::size_t n) {
  if (comparison.ok() && guards.intact()) return "";
  std::ostringstream out;
  if (!guards.intact()) {
    out << guards.describe(n) << ".\n";
    if (guards.written_before > 0) {
      out << "Hint: something wrote before element 0: is an index negative, or an offset subtracted?";
    } else if (guards.written_after == 1 && guards.nearest_after == 0) {
      out << "Hint: off by one: the bounds check lets i == n through. Elements are 0 .. n-1, so the test is i < n, "
             "not i <= n.";
    } else {
      out << "Hint: elements past n were written: is there a bounds check (if (i < n)) before every write, and "
             "does it count elements, not bytes?";
    }
    if (!comparison.ok()) out << "\nInside the array: " << comparison.describe();
    return out.str();
  }
  out << comparison.describe() << "\n";
  if (comparison.unwritten_is_tail()) {
    out << "Hint: the last " << comparison.unwritten << " elements (from index " << comparison.first_unwritten
        << ") were never written: the threads do not cover n. Round the grid up, (n + block - 1) / block blocks, or "
           "loop with a grid stride (i += blockDim.x * gridDim.x).";
  } else if (comparison.unwritten > 0) {
    out << "Hint: some elements in the middle were never written: are the index or the stride computed from the "
           "right blockIdx, blockDim and gridDim?";
  } else {
    out << "Hint: every element was written but some values are wrong: are the inputs and the output indexed with "
           "the same i, and is the arithmetic the one asked for?";
  }
  return out.str();
}

}  // namespace grader
