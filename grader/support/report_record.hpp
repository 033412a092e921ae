/// \file
/// The line-per-event protocol between a grader program and the driver: each test case
/// writes a "start" record when it begins and an "end" record when it ends, one JSON object
/// per line, flushed at once. A test that crashes or hangs leaves a start without an end,
/// which tells the driver which test it was.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace grader {

/// One event of one test case.
struct TestRecord {
  std::string event;                 ///< "start", "end", "fatal", or "wait" / "waited" around a GPU wait
  std::string test;                  ///< the test case's name
  std::vector<std::string> tags;     ///< its tags without brackets, e.g. "task_1", "perf"
  std::string outcome;               ///< for "end": passed, failed, skipped or not_implemented
  std::vector<std::string> messages; ///< failure, skip or fatal-signal messages
  std::vector<std::pair<std::string, double>> metrics;  ///< recorded metrics
  std::string what;                  ///< for "wait": what the test waits for
  double t = -1;                     ///< seconds since the program started (written when >= 0)
};

/// The record as one line of JSON (no trailing newline).
std::string format_record(const TestRecord& record);

/// \p text as a JSON string literal, quotes included.
std::string json_quote(const std::string& text);

}  // namespace grader
