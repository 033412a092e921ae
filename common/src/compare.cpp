// Whole-array comparison with a report a student can act on.
#include "workbook/compare.hpp"

#include "workbook/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

namespace workbook {

float poison_value() {
  float x;
  std::memcpy(&x, &kPoisonBits, sizeof x);
  return x;
}

bool is_poison(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits == kPoisonBits;
}

std::string format_value(double value, bool unwritten) {
  if (unwritten) return "NaN (never written)";
  if (std::isnan(value)) return "NaN";
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

namespace {

// The report of got[begin, end), its indices those of the whole array.
ComparisonReport compare_range(const float* got, const float* expected, std::size_t begin, std::size_t end,
                               Tolerance tolerance, std::size_t max_listed) {
  ComparisonReport report;
  for (std::size_t i = begin; i < end; ++i) {
    const bool unwritten = is_poison(got[i]);
    const double g = got[i];
    const double e = expected[i];
    const bool right = element_agrees(got[i], e, tolerance);
    if (unwritten) {
      if (report.unwritten == 0) report.first_unwritten = i;
      report.last_unwritten = i;
      ++report.unwritten;
    } else if (!std::isnan(e) && !std::isnan(g)) {
      const double abs_error = std::fabs(g - e);
      const double rel_error = e != 0 ? abs_error / std::fabs(e) : (abs_error > 0 ? INFINITY : 0.0);
      if (abs_error > report.max_abs_error) report.max_abs_error = abs_error;
      if (rel_error > report.max_rel_error) report.max_rel_error = rel_error;
    }
    if (!right) {
      ++report.wrong;
      if (report.first_mismatches.size() < max_listed) report.first_mismatches.push_back({i, e, g, unwritten});
    }
  }
  return report;
}

}  // namespace

ComparisonReport compare_to_reference(const float* got, const float* expected, std::size_t n, Tolerance tolerance,
                                      std::size_t max_listed) {
  // Ranges on every core (a 2^26-element output took 90 ms on one), merged in index order: the
  // report is the one a single loop over [0, n) gives, whatever the number of ranges.
  std::mutex mutex;
  std::map<std::size_t, ComparisonReport> parts;  // by the range's first index
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    ComparisonReport part = compare_range(got, expected, begin, end, tolerance, max_listed);
    const std::lock_guard<std::mutex> lock(mutex);
    parts.emplace(begin, std::move(part));
  });
  ComparisonReport report;
  report.count = n;
  for (auto& [begin, part] : parts) {
    if (part.unwritten > 0) {
      if (report.unwritten == 0) report.first_unwritten = part.first_unwritten;
      report.last_unwritten = part.last_unwritten;
      report.unwritten += part.unwritten;
    }
    report.wrong += part.wrong;
    report.max_abs_error = std::max(report.max_abs_error, part.max_abs_error);
    report.max_rel_error = std::max(report.max_rel_error, part.max_rel_error);
    for (const Mismatch& m : part.first_mismatches) {
      if (report.first_mismatches.size() < max_listed) report.first_mismatches.push_back(m);
    }
  }
  return report;
}

std::string ComparisonReport::describe() const {
  std::ostringstream out;
  if (ok()) {
    out << "all " << count << " elements match (max abs error " << max_abs_error << ", max rel error "
        << max_rel_error << ")";
    return out.str();
  }
  out << wrong << " of " << count << " elements are wrong";
  if (unwritten > 0) {
    out << ", " << unwritten << " of them never written";
    if (unwritten > 1) out << " (indices " << first_unwritten << " .. " << last_unwritten << ")";
  }
  out << "\n";
  for (const Mismatch& m : first_mismatches) {
    out << "  [" << m.index << "] expected " << format_value(m.expected) << ", got "
        << format_value(m.got, m.unwritten) << "\n";
  }
  if (wrong > first_mismatches.size()) out << "  ... and " << (wrong - first_mismatches.size()) << " more\n";
  if (wrong > unwritten) {
    out << "  largest error among written elements: " << max_abs_error << " absolute, " << max_rel_error
        << " relative";
  }
  std::string text = out.str();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

Tolerance float32_dot_tolerance(int length) {
  const double u = 1.0 / 16777216.0;  // 2^-24
  return {u * (2.0 * length + 16), 4 * u};
}

}  // namespace workbook
