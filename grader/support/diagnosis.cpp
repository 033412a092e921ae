// The hints for one-dimensional outputs. Each fires only when the evidence (which elements,
// which guard elements, how many threads the launch had) shows its cause; otherwise the
// verdict describes what was observed and names no cause.
#include "diagnosis.hpp"

#include <sstream>

namespace grader {

std::string hint(HintId id, const std::string& text) { return std::string("Hint [") + hint_id_text(id) + "]: " + text; }

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
// printed only when its pattern is exactly the one the writes form.
std::string explain_writes_after(const workbook::GuardReport& guards, std::size_t n, long long threads) {
  const std::size_t first = guards.nearest_after, last = guards.farthest_after, count = guards.written_after;
  const bool contiguous = count == last - first + 1;
  // Element n alone was written past the end.
  const bool only_element_n = count == 1 && first == 0;
  // Exactly the indices of the launch's extra threads, n .. threads-1: nothing stopped them.
  const bool exactly_the_extra_threads = threads > static_cast<long long>(n) && first == 0 && contiguous &&
                                         last + 1 == static_cast<std::size_t>(threads) - n;
  // Exactly 3n elements from element n: the writes reach element 4n - 1, as a bound of n * 4 bytes would.
  const bool ends_at_element_4n_minus_1 =
      first == 0 && contiguous && count == 3 * n && 4 * n <= guards.guard_elements + n;
  if (only_element_n) {
    return hint(HintId::off_by_one_end,
                "off by one: only element n itself was written past the end, so the bounds check lets i == n "
                "through. Elements are 0 .. n-1: the test is i < n, not i <= n.");
  }
  if (exactly_the_extra_threads) {
    return hint(HintId::no_bounds_check,
                "the elements written past the end are exactly n .. " + std::to_string(threads - 1) +
                    ", the indices of the launch's " + std::to_string(threads - n) + " extra threads (the grid had " +
                    std::to_string(threads) + " threads for n = " + std::to_string(n) +
                    "): a thread with i >= n must not write, so a bounds check, if (i < n), must come before the "
                    "store.");
  }
  if (ends_at_element_4n_minus_1) {
    return hint(HintId::counts_bytes,
                "the writes run exactly to element " + std::to_string(4 * n - 1) +
                    " = 4n - 1, as far as a bound of n * sizeof(float) would take them: a loop bound or check that "
                    "counts bytes instead of elements.");
  }
  return "Elements past n were written (see above): some write has no bound, or a bound larger than n.";
}

}  // namespace

std::string diagnose(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards, std::size_t n,
                     long long threads) {
  if (comparison.ok() && guards.intact()) return "";
  std::ostringstream out;
  if (!guards.intact()) {
    out << guards.describe(n) << ".\n";
    if (guards.written_before > 0) {  // the guard before element 0 was written
      out << hint(HintId::writes_before_start, "something wrote before element 0 (element -" +
                                                   std::to_string(guards.nearest_before + 1) +
                                                   " and nearer): an index became negative, such as i - 1 at i = 0.");
    } else {
      out << explain_writes_after(guards, n, threads);
    }
    if (!comparison.ok()) out << "\nInside the array: " << comparison.describe();
    return out.str();
  }
  // Nothing was written outside the array.
  out << comparison.describe() << "\n";
  const std::string first = std::to_string(comparison.first_unwritten);
  // The launch is known, had fewer threads than elements, and the unwritten tail starts where they run out.
  const bool tail_starts_where_threads_end = threads >= 0 && threads < static_cast<long long>(n) &&
                                             comparison.first_unwritten == static_cast<std::size_t>(threads);
  // The launch is known and had a thread for every element.
  const bool thread_for_every_element = threads >= static_cast<long long>(n);
  if (comparison.unwritten_is_tail()) {
    if (tail_starts_where_threads_end) {
      out << hint(HintId::grid_too_small,
                  "the launch had " + std::to_string(threads) + " threads for n = " + std::to_string(n) +
                      ", and the elements from index " + first + " on, exactly where the threads run out, were "
                      "never written: each thread wrote one element. Round the grid up, (n + block - 1) / block "
                      "blocks, or loop with a grid stride (i += blockDim.x * gridDim.x).");
    } else if (thread_for_every_element) {
      out << hint(HintId::index_misses_tail,
                  "the launch had " + std::to_string(threads) + " threads for n = " + std::to_string(n) +
                      ", enough for every element, yet the elements from index " + first + " on were never "
                      "written: the indices the threads compute do not reach them. Is i = blockIdx.x * blockDim.x "
                      "+ threadIdx.x (blockDim, not gridDim), and is the loop or check i < n?");
    } else {
      out << "The last " << comparison.unwritten << " elements, from index " << first << ", were never written.";
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
