// The hints for one-dimensional outputs. Each fires only when the evidence (which elements,
// which guard elements, how many threads the launch had) shows its cause; otherwise the
// verdict describes what was observed and names no cause.
#include "diagnosis.hpp"

#include <sstream>

namespace grader {

std::string hint(HintId id, const std::string& text) { return std::string("Hint [") + hint_id_text(id) + "]: " + text; }

std::string results_differ(const std::string& facts) { return kResultsDifferLabel + facts; }

bool nothing_written(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards) {
  return comparison.count > 0 && comparison.unwritten == comparison.count && guards.intact();
}

std::string untouched_output(const std::string& name, std::size_t n, bool guarded) {
  return (n == 1 ? name + " still holds" : "all " + std::to_string(n) + " elements of " + name + " still hold") +
         " the NaN the grader filled " + (n == 1 ? "it" : "them") + " with" +
         (guarded ? ", and nothing around " + name + " changed" : "");
}

namespace {

// Writes past the end, none before the start: which pattern do they form? Each hint below is
// printed only when its pattern is exactly the one the writes form AND every element inside the
// array is right: a kernel that stores to the wrong index (y[i + 1]) also writes element n, but
// then the inside is wrong too, and the bounds are not what is broken.
std::string explain_writes_after(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards,
                                 std::size_t n, long long threads) {
  const std::size_t first = guards.nearest_after, last = guards.farthest_after, count = guards.written_after;
  const bool contiguous = count == last - first + 1;
  // Every element 0 .. n-1 holds its expected value (and the caller saw nothing before element 0).
  const bool inside_right = comparison.ok();
  // Element n alone was written past the end.
  const bool only_element_n = count == 1 && first == 0;
  // Exactly the indices of the launch's extra threads, n .. threads-1: nothing stopped them.
  const bool exactly_the_extra_threads = threads > static_cast<long long>(n) && first == 0 && contiguous &&
                                         last + 1 == static_cast<std::size_t>(threads) - n;
  // Exactly 3n elements from element n: the writes reach element 4n - 1, as a bound of n * 4 bytes would.
  const bool ends_at_element_4n_minus_1 =
      first == 0 && contiguous && count == 3 * n && 4 * n <= guards.guard_elements + n;
  if (!inside_right) {
    return "Elements inside the array are wrong too (below), so the grader names no cause for the writes past "
           "the end.";
  }
  if (only_element_n) {  // evidence: element n alone past the end, 0 .. n-1 right, nothing before 0
    return hint(HintId::off_by_one_end,
                "off by one: every element 0 .. n-1 is right and only element n itself was written past the end, "
                "so the bounds check lets i == n through. Elements are 0 .. n-1: the test is i < n, not i <= n.");
  }
  if (exactly_the_extra_threads) {  // evidence: exactly n .. threads-1 past the end, 0 .. n-1 right
    return hint(HintId::no_bounds_check,
                "the elements written past the end are exactly n .. " + std::to_string(threads - 1) +
                    ", the indices of the launch's " + std::to_string(threads - n) + " extra threads (the grid had " +
                    std::to_string(threads) + " threads for n = " + std::to_string(n) +
                    "), and every element 0 .. n-1 is right: a thread with i >= n must not write, so a bounds "
                    "check, if (i < n), must come before the store.");
  }
  if (ends_at_element_4n_minus_1) {  // evidence: exactly n .. 4n-1 past the end, 0 .. n-1 right
    return hint(HintId::counts_bytes,
                "every element 0 .. n-1 is right, and the writes past the end run exactly to element " +
                    std::to_string(4 * n - 1) +
                    " = 4n - 1, as far as a bound of n * sizeof(float) would take them: a loop bound or check that "
                    "counts bytes instead of elements.");
  }
  return "Every element 0 .. n-1 is right, and stores also reached past the end: some thread stored to an index "
         ">= n.";
}

}  // namespace

std::string diagnose(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards, std::size_t n,
                     long long threads) {
  if (comparison.ok() && guards.intact()) return "";
  std::ostringstream out;
  if (!guards.intact()) {
    out << guards.describe(n) << ".\n";
    if (guards.written_before > 0) {  // evidence: the guard before element 0 was written
      const std::string farthest = std::to_string(guards.farthest_before + 1);
      out << hint(HintId::writes_before_start, "something wrote before element 0 (as far back as element -" +
                                                   farthest + "): an index became negative, such as i - 1 at i = 0.");
    } else {
      out << explain_writes_after(comparison, guards, n, threads);
    }
    if (!comparison.ok()) out << "\nInside the array: " << comparison.describe();
    return out.str();
  }
  // Nothing was written outside the array.
  out << comparison.describe() << "\n";
  const std::string first = std::to_string(comparison.first_unwritten);
  // Every element that was written holds its expected value: only the unwritten ones are wrong.
  const bool written_ones_right = comparison.wrong == comparison.unwritten;
  // The launch is known, had fewer threads than elements, and the unwritten tail starts where they run out.
  const bool tail_starts_where_threads_end = threads >= 0 && threads < static_cast<long long>(n) &&
                                             comparison.first_unwritten == static_cast<std::size_t>(threads);
  // The launch is known and had a thread for every element.
  const bool thread_for_every_element = threads >= static_cast<long long>(n);
  if (comparison.unwritten_is_tail()) {
    if (tail_starts_where_threads_end && written_ones_right) {
      // Evidence: elements 0 .. threads-1 all right, threads .. n-1 never written.
      out << hint(HintId::grid_too_small,
                  "the launch had " + std::to_string(threads) + " threads for n = " + std::to_string(n) +
                      ", elements 0 .. " + std::to_string(threads - 1) + " are right, and the elements from index " +
                      first + " on, exactly where the threads run out, were never written: each thread wrote one "
                      "element. Round the grid up, (n + block - 1) / block blocks, or loop with a grid stride (i += "
                      "blockDim.x * gridDim.x).");
    } else if (thread_for_every_element) {
      // Evidence: a thread for every element, and a tail nobody wrote.
      out << hint(HintId::index_misses_tail,
                  "the launch had " + std::to_string(threads) + " threads for n = " + std::to_string(n) +
                      ", enough for every element, yet the elements from index " + first + " on were never "
                      "written: the indices the threads compute do not reach them. Is i = blockIdx.x * blockDim.x "
                      "+ threadIdx.x (blockDim, not gridDim), and is the loop or check i < n?");
    } else {
      out << "The last " << comparison.unwritten << " elements, from index " << first << ", were never written";
      if (threads >= 0) out << "; the launch had " << threads << " threads for n = " << n;
      if (!written_ones_right) out << "; some elements that were written are wrong too";
      out << ".";
    }
  } else if (comparison.unwritten > 0) {  // unwritten elements with written ones after them
    out << hint(HintId::unwritten_gaps,
                "elements in the middle were never written (the first at index " + first + ") while later ones "
                "were: the indices the threads compute skip some elements. Compare them with blockIdx.x * "
                "blockDim.x + threadIdx.x, and a stride with blockDim.x * gridDim.x.");
  } else {  // every element was written, some are wrong
    out << hint(HintId::wrong_values,
                "every element was written, but some values are wrong: are the inputs and the output indexed with "
                "the same i, and is the arithmetic the one asked for?");
  }
  return out.str();
}

}  // namespace grader
