// The report records the driver parses: valid JSON lines, strings escaped.
#include "report_record.hpp"

#include <catch2/catch_test_macros.hpp>

TEST_CASE("a start record has event and test and tags", "[report]") {
  grader::TestRecord r;
  r.event = "start";
  r.test = "Task 1: correct";
  r.tags = {"task_1"};
  CHECK(grader::format_record(r) == R"({"event": "start", "test": "Task 1: correct", "tags": ["task_1"]})");
}

TEST_CASE("an end record carries outcome and messages and metrics", "[report]") {
  grader::TestRecord r;
  r.event = "end";
  r.test = "t";
  r.tags = {"task_2", "perf"};
  r.outcome = "failed";
  r.messages = {"line one\nline \"two\"\\"};
  r.metrics = {{"gbps", 2500.5}, {"fraction_of_copy_bandwidth", 0.875}};
  CHECK(grader::format_record(r) ==
        R"({"event": "end", "test": "t", "tags": ["task_2", "perf"], "outcome": "failed", )"
        R"("messages": ["line one\nline \"two\"\\"], "metrics": {"gbps": 2500.5, "fraction_of_copy_bandwidth": 0.875}})");
}

TEST_CASE("control characters are escaped", "[report]") {
  CHECK(grader::json_quote(std::string("a\tb\x01", 4)) == "\"a\\tb\\u0001\"");
}
