// The report records the driver parses: valid JSON lines, strings escaped.
#include "hmac_sha256.hpp"
#include "report_record.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

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

TEST_CASE("HMAC-SHA256 gives the RFC 4231 test vectors", "[report]") {
  // Test cases 1 to 4, 6 and 7 (5 truncates the MAC, which the report does not).
  CHECK(grader::hmac_sha256_hex(std::string(20, '\x0b'), "Hi There") ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(grader::hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(grader::hmac_sha256_hex(std::string(20, '\xaa'), std::string(50, '\xdd')) ==
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string counting;
  for (char c = 1; c <= 25; ++c) counting += c;
  CHECK(grader::hmac_sha256_hex(counting, std::string(50, '\xcd')) ==
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // A key longer than the block is hashed first.
  CHECK(grader::hmac_sha256_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First") ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  CHECK(grader::hmac_sha256_hex(std::string(131, '\xaa'),
                                "This is a test using a larger than block-size key and a larger than block-size data. "
                                "The key needs to be hashed before being used by the HMAC algorithm.") ==
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST_CASE("SHA-256 of messages around the padding boundary", "[report]") {
  auto hex = [](const std::string& m) {
    std::string out;
    char b[3];
    for (auto byte : grader::sha256(m)) {
      std::snprintf(b, sizeof b, "%02x", byte);
      out += b;
    }
    return out;
  };
  CHECK(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // FIPS 180-4's two-block example: 56 bytes, so the length no longer fits the first block.
  CHECK(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex(std::string(1000, 'a')) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

// The same line, key and MAC are in grader/tests/test_runner.py (SignedVectorTest), where Python's
// hmac must verify it: the C++ signer and the driver's verifier agree byte for byte, UTF-8 and a
// byte that is not UTF-8 (a student's exception message may hold anything) included.
constexpr const char* kVectorKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr const char* kVectorLine =
    "{\"event\": \"end\", \"test\": \"Task 1: na\xc3\xafve \xff\", \"tags\": [\"task_1\"], \"outcome\": \"passed\", "
    "\"messages\": [\"a \\\"quoted\\\"\\nline\"], \"t\": 0.250, \"metrics\": {\"gbps\": 1.5}, \"seq\": 3, "
    "\"mac\": \"487bceb1022663356e5d4ca0c49e45657e52ffbdd5a9da1844d13295fd2a09a3\"}";

TEST_CASE("a signed record carries its sequence number and a MAC over the line up to it", "[report]") {
  grader::TestRecord r;
  r.event = "end";
  r.test = "Task 1: na\xc3\xafve \xff";
  r.tags = {"task_1"};
  r.outcome = "passed";
  r.messages = {"a \"quoted\"\nline"};
  r.t = 0.25;
  r.metrics = {{"gbps", 1.5}};
  const grader::ReportKey key{kVectorKey, ""};
  CHECK(grader::sign_record(grader::format_record(r), 3, &key) == kVectorLine);
  // Without a driver there is no key: the sequence number alone.
  CHECK(grader::sign_record(R"({"event": "start"})", 7, nullptr) == R"({"event": "start", "seq": 7})");
}

TEST_CASE("a record signed without a whole key says so", "[report]") {
  grader::TestRecord r;
  r.event = "run_end";
  r.test_cases = 0;
  const grader::ReportKey empty{"", "the pipe was empty"};
  const std::string body = R"({"event": "run_end", "test": "", "tags": [], "test_cases": 0, )"
                           R"("key_problem": "the pipe was empty", "seq": 0})";
  CHECK(grader::sign_record(grader::format_record(r), 0, &empty) ==
        body.substr(0, body.size() - 1) + ", \"mac\": \"" + grader::hmac_sha256_hex("", body) + "\"}");
}

namespace {

// A pipe holding \p text, its write end closed, as the driver leaves it.
int pipe_holding(const std::string& text) {
  int ends[2];
  REQUIRE(::pipe(ends) == 0);
  REQUIRE(::write(ends[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(ends[1]);
  return ends[0];
}

}  // namespace

TEST_CASE("the key is read whole from its pipe, and anything less is a problem", "[report]") {
  const grader::ReportKey whole = grader::read_report_key(pipe_holding(kVectorKey));
  CHECK(whole.value == kVectorKey);
  CHECK(whole.problem.empty());

  const grader::ReportKey empty = grader::read_report_key(pipe_holding(""));  // someone read it first
  CHECK(empty.problem == "the pipe was empty");

  const grader::ReportKey partial = grader::read_report_key(pipe_holding(std::string(kVectorKey).substr(8)));
  CHECK(partial.problem == "the pipe held 56 characters, not the key's 64");

  const int closed = pipe_holding(kVectorKey);
  ::close(closed);  // someone closed it first
  const grader::ReportKey unreadable = grader::read_report_key(closed);
  CHECK(unreadable.problem.rfind("the pipe could not be read: ", 0) == 0);
}

TEST_CASE("a run_end record counts the test cases", "[report]") {
  grader::TestRecord r;
  r.event = "run_end";
  r.test_cases = 3;
  CHECK(grader::format_record(r) == R"({"event": "run_end", "test": "", "tags": [], "test_cases": 3})");
}
