// HMAC-SHA256 (RFC 2104 over FIPS 180-4), for the authenticated report channel: every record a
// grader program writes carries a MAC under a key that the driver makes for that run alone, so a
// record written by anything else in the process does not count (grader/README.md, "What
// official grading defends against"). Small and dependency-free on purpose; tested against the
// RFC 4231 vectors (tests/report_listener_test.cpp) and against Python's hmac (test_runner.py).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace grader {

/// The SHA-256 digest of `message`.
std::array<std::uint8_t, 32> sha256(const std::string& message);

/// HMAC-SHA256 of `message` under `key`, as 64 lowercase hex digits.
std::string hmac_sha256_hex(const std::string& key, const std::string& message);

}  // namespace grader
