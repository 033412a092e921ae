// The report records the driver parses: valid JSON lines, strings escaped.
#include "hmac_sha256.hpp"
#include "report_record.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cstdio>

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
  CHECK(grader::hmac_sha256_hex(std::string(20, '\x0b'), "Hi There") ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(grader::hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than the block is hashed first.
  CHECK(grader::hmac_sha256_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First") ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
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
  CHECK(hex(std::string(1000, 'a')) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST_CASE("a signed record carries its sequence number and a MAC over the line up to it", "[report]") {
  const std::string key = "k";
  const std::string line = grader::sign_record(R"({"event": "start"})", 7, &key);
  const std::string body = R"({"event": "start", "seq": 7})";
  // The MAC as Python's hmac computes it (grader/driver/runner.py verifies with that).
  CHECK(line == R"({"event": "start", "seq": 7, "mac": ")" + grader::hmac_sha256_hex(key, body) + "\"}");
  CHECK(grader::hmac_sha256_hex(key, body) == "8daa47ec9d042fa9c942bd8fee9641dc7f788ce8a1129f4692ddb2d87374de79");
  CHECK(grader::sign_record(R"({"event": "start"})", 7, nullptr) == body);
}
