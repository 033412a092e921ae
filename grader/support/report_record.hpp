/// \file
/// The line-per-event protocol between a grader program and the driver: each test case
/// writes a "start" record when it begins and an "end" record when it ends, one JSON object
/// per line, flushed at once. A test that crashes or hangs leaves a start without an end,
/// which tells the driver which test it was.
///
/// The channel is authenticated per run: the driver hands the program a fresh key through a
/// pipe (never the environment), and every line carries a sequence number and an HMAC-SHA256
/// under that key (sign_record). A last "run_end" record says the program finished its tests.
/// A line written by anything else, replayed or out of order does not verify, and the driver
/// reports the task as tampered with; an exit before "run_end" does not pass.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace grader {

/// One event of one test case.
struct TestRecord {
  std::string event;                 ///< "start", "end", "fatal", or "wait" / "waited" / "wait_raised" around a GPU wait
  std::string test;                  ///< the test case's name
  std::vector<std::string> tags;     ///< its tags without brackets, e.g. "task_1", "perf"
  std::string outcome;               ///< for "end": passed, failed, skipped or wrote_nothing
  std::vector<std::string> messages; ///< failure, skip or fatal-signal messages
  std::vector<std::pair<std::string, double>> metrics;  ///< recorded metrics
  std::string what;                  ///< for "wait": what the test waits for
  double t = -1;                     ///< seconds since the program started (written when >= 0)
  long test_cases = -1;              ///< for "run_end": how many test cases started (written when >= 0)
};

/// The record as one line of JSON (no trailing newline).
std::string format_record(const TestRecord& record);

/// \p text as a JSON string literal, quotes included.
std::string json_quote(const std::string& text);

/// The key a run's records are signed with, as read from the driver's pipe.
struct ReportKey {
  std::string value;    ///< what the pipe held
  std::string problem;  ///< empty when it held a whole key; else what went wrong ("the pipe was empty")
};

/// Characters in a whole key: the driver sends 32 random bytes as 64 hex digits.
constexpr std::size_t kReportKeyChars = 64;

/// Reads a key from the pipe \p fd up to its end and closes it. A pipe that cannot be read, or
/// that holds anything but kReportKeyChars characters, gives a key with a problem.
ReportKey read_report_key(int fd);

/// A formatted record (format_record) with its sequence number and, when \p key is given, its
/// MAC: `{..., "seq": N, "mac": "<hex>"}`, the MAC taken over the line up to and including
/// `"seq": N}`. A key with a problem marks the record, `"key_problem": "..."` before the sequence
/// number, so the driver can say why nothing verifies. The driver checks all of it
/// (grader/driver/runner.py, parse_records).
std::string sign_record(const std::string& line, long sequence, const ReportKey* key);

/// The key the driver gave this run, read once at start-up from the pipe WORKBOOK_REPORT_KEY_FD
/// names, before the submission's own static initialisers run; nullptr when the program runs
/// without a driver. When the pipe held no whole key (someone read it first), every record says
/// so, none verifies, and the driver reports the run as tampered with.
const ReportKey* report_key();

/// The report file the driver named in WORKBOOK_REPORT when the program started, or nullptr: an
/// ordinary Catch2 program, run by hand. Read at start-up, like the key, so that code being
/// graded cannot point the listener at another file with setenv.
const char* report_path();

}  // namespace grader
