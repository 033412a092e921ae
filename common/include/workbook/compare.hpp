/// \file
/// Comparing a whole output with a reference and saying what is wrong in a way a student
/// can act on: how many elements differ, which were never written (still the poison
/// value), the first few indices with expected and got, and the largest errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "workbook/host_device.hpp"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#include <cstring>
#endif

namespace workbook {

/// Bit pattern written into outputs before a launch: a quiet NaN no arithmetic produces,
/// so an element that still holds it was never written.
constexpr std::uint32_t kPoisonBits = 0x7FC0FFEEu;

/// The poison value as a float.
float poison_value();

/// True when \p x has exactly the poison bit pattern.
bool is_poison(float x);

/// An element is right when |got - expected| <= abs + rel * |expected|.
struct Tolerance {
  double abs = 0;  ///< absolute part
  double rel = 0;  ///< part relative to |expected|
};

/// Whether \p got is right for \p expected: never when it holds the poison (unwritten); NaN
/// only where the reference is NaN too; otherwise within \p tolerance. The one rule every
/// comparison applies, on the host (compare_to_reference) and on the device
/// (grader/support/device_check.cuh).
WORKBOOK_HOST_DEVICE inline bool element_agrees(float got, double expected, Tolerance tolerance) {
#if defined(__CUDA_ARCH__)
  const std::uint32_t bits = __float_as_uint(got);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &got, sizeof bits);
#endif
  if (bits == kPoisonBits) return false;
  const double g = got;
#if !defined(__CUDA_ARCH__)
  using std::fabs;
  using std::isnan;
#endif
  if (isnan(g) || isnan(expected)) return isnan(g) && isnan(expected);
#if defined(__CUDA_ARCH__)
  // The limit rounded as the host rounds it, not fused into one multiply-add.
  return fabs(g - expected) <= __dadd_rn(tolerance.abs, __dmul_rn(tolerance.rel, fabs(expected)));
#else
  return fabs(g - expected) <= tolerance.abs + tolerance.rel * fabs(expected);
#endif
}

/// One wrong element.
struct Mismatch {
  std::size_t index = 0;   ///< position in the output
  double expected = 0;     ///< the reference value
  double got = 0;          ///< what the output held
  bool unwritten = false;  ///< the output still held the poison value
};

/// How far a float32 dot product of \p length terms may be from the exact value, for inputs
/// uniform in [-1, 1] (lesson 03's matrix products). The running sum wanders like sqrt(k)/3
/// and each addition rounds by up to u = 2^-24 times it, so the error's standard deviation is
/// near 0.1 u K in any order of summation (tiles, FMA, split K); (2K + 16) u absolute plus
/// 4u relative is over ten of those, and about ten times less than TF32's error at K = 4096.
Tolerance float32_dot_tolerance(int length);

/// The outcome of compare_to_reference.
struct ComparisonReport {
  std::size_t count = 0;          ///< elements compared
  std::size_t wrong = 0;          ///< elements outside the tolerance, unwritten ones included
  std::size_t unwritten = 0;      ///< elements still holding the poison value
  std::size_t first_unwritten = 0;  ///< smallest unwritten index (valid when unwritten > 0)
  std::size_t last_unwritten = 0;   ///< largest unwritten index (valid when unwritten > 0)
  double max_abs_error = 0;       ///< over written elements
  double max_rel_error = 0;       ///< over written elements
  std::vector<Mismatch> first_mismatches;  ///< the first few wrong elements, by index

  /// True when every element matched.
  bool ok() const { return wrong == 0; }
  /// True when the unwritten elements are exactly the tail [first_unwritten, count).
  bool unwritten_is_tail() const { return unwritten > 0 && last_unwritten + 1 == count && last_unwritten - first_unwritten + 1 == unwritten; }
  /// Several lines: counts, then the listed mismatches as "[i] expected E, got G".
  std::string describe() const;
};

/// Compares \p got with \p expected element by element, listing at most \p max_listed mismatches.
/// NaN is right only where the reference is NaN too.
ComparisonReport compare_to_reference(const float* got, const float* expected, std::size_t n, Tolerance tolerance,
                                      std::size_t max_listed = 5);

/// A float formatted for messages: shortest round-trip form, "NaN (never written)" for poison.
std::string format_value(double value, bool unwritten = false);

}  // namespace workbook
