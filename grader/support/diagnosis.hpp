/// \file
/// Turning what came back from a kernel into a verdict a student can act on: the facts
/// (what was expected, what came back, which elements) and, only where the evidence proves
/// it, a hint naming the cause. Every hint has an id ("Hint [grid-too-small]: ..."), an entry in
/// grader/hints.json that states its claim and the evidence it needs, and a broken variant in
/// grader/tests/broken/ that must trigger it (grader/README.md).
#pragma once

#include "hint_ids.hpp"  // generated from grader/hints.json

#include "workbook/compare.hpp"
#include "workbook/guarded_array.hpp"

#include <cstddef>
#include <string>

namespace grader {

/// "Hint [id]: text": a cause the evidence shows, labelled so the tests can tell which hint fired.
/// Call it only once the evidence the registry gives for \p id has been checked, and say which
/// check that was beside the call.
std::string hint(HintId id, const std::string& text);

/// "Seen [results-differ]: the same inputs gave ...": the observation, labelled for the driver,
/// that one call on the same inputs gave different results in two runs. It names no cause: a race
/// (a barrier missing) does that, and so does a read of memory nobody wrote (shared memory a tile
/// load skipped), whose content changes from run to run. The driver (grader/driver/races.py) runs
/// the task's tests once more under compute-sanitizer racecheck and prints Hint [race] only when
/// racecheck reports a shared-memory hazard; otherwise it adds what was seen and how to look.
/// \p facts: "the same inputs gave different results in two runs (37 elements differ between them)".
std::string results_differ(const std::string& facts);

/// The label results_differ() puts before its facts; grader/driver/races.py reads the same.
constexpr const char* kResultsDifferLabel = "Seen [results-differ]: ";

/// The facts and, where proven, a hint for an output of \p n elements, given its comparison
/// with the reference and its guard report. \p threads is how many threads the launch that
/// wrote it started (grid x block), or -1 when the grader does not know the launch. Empty
/// when both are clean.
std::string diagnose(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards, std::size_t n,
                     long long threads = -1);

/// True when nothing at all was written: every element still poisoned, guards intact.
bool nothing_written(const workbook::ComparisonReport& comparison, const workbook::GuardReport& guards);

/// What an output left alone looks like, in words: "all 1000 elements of c still hold the NaN
/// the grader filled them with, and nothing around c changed" (the last part only when the
/// output is \p guarded, so that the grader saw its surroundings).
std::string untouched_output(const std::string& name, std::size_t n, bool guarded = true);

}  // namespace grader
