/// \file
/// Turning what came back from a kernel into a verdict a student can act on: the facts
/// (what was expected, what came back, which elements) and a hint at the usual cause.
#pragma once

#include "workbook/compare.hpp"
#include "workbook/guarded_array.hpp"

#include <cstddef>
#include <string>

namespace grader {

/// The facts and a "Hint:" line for an output of \p n elements, given its comparison with
/// the reference and its guard report. Empty when both are clean.
std::string diagnose(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards, std::size_t n);

/// True when nothing at all was written: every element still poisoned, guards intact.
bool nothing_written(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards);

}  // namespace grader
