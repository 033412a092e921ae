// JSON for the report records, by hand: the format is small and fixed.
#include "report_record.hpp"

#include "hmac_sha256.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace grader {

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string format_record(const TestRecord& record) {
  std::string line = "{\"event\": " + json_quote(record.event) + ", \"test\": " + json_quote(record.test);
  line += ", \"tags\": [";
  for (std::size_t i = 0; i < record.tags.size(); ++i) line += (i ? ", " : "") + json_quote(record.tags[i]);
  line += "]";
  if (!record.outcome.empty()) line += ", \"outcome\": " + json_quote(record.outcome);
  if (!record.messages.empty()) {
    line += ", \"messages\": [";
    for (std::size_t i = 0; i < record.messages.size(); ++i) line += (i ? ", " : "") + json_quote(record.messages[i]);
    line += "]";
  }
  if (!record.what.empty()) line += ", \"what\": " + json_quote(record.what);
  if (record.t >= 0) {
    char number[32];
    std::snprintf(number, sizeof number, "%.3f", record.t);
    line += std::string(", \"t\": ") + number;
  }
  if (record.test_cases >= 0) line += ", \"test_cases\": " + std::to_string(record.test_cases);
  if (!record.metrics.empty()) {
    line += ", \"metrics\": {";
    for (std::size_t i = 0; i < record.metrics.size(); ++i) {
      char number[64];
      const double v = record.metrics[i].second;
      std::snprintf(number, sizeof number, "%.9g", std::isfinite(v) ? v : 0.0);
      line += (i ? ", " : "") + json_quote(record.metrics[i].first) + ": " + number;
    }
    line += "}";
  }
  return line + "}";
}

std::string sign_record(const std::string& line, long sequence, const ReportKey* key) {
  std::string body = line.substr(0, line.size() - 1);
  if (key != nullptr && !key->problem.empty()) body += ", \"key_problem\": " + json_quote(key->problem);
  body += ", \"seq\": " + std::to_string(sequence) + "}";
  if (key == nullptr) return body;
  return body.substr(0, body.size() - 1) + ", \"mac\": \"" + hmac_sha256_hex(key->value, body) + "\"}";
}

ReportKey read_report_key(int fd) {
  ReportKey key;
  char buffer[256];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      key.value.append(buffer, static_cast<std::size_t>(got));
      if (key.value.size() <= 4 * kReportKeyChars) continue;  // more than any key: stop reading
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else if (got < 0) {
      key.problem = std::string("the pipe could not be read: ") + std::strerror(errno);
    }
    break;
  }
  ::close(fd);
  if (!key.problem.empty()) return key;
  if (key.value.empty()) {
    key.problem = "the pipe was empty";
  } else if (key.value.size() != kReportKeyChars) {
    key.problem = "the pipe held " + std::to_string(key.value.size()) + " characters, not the key's " +
                  std::to_string(kReportKeyChars);
  }
  return key;
}

namespace {

struct StartupChannel {
  bool keyed = false;
  ReportKey key;
  bool reporting = false;
  std::string path;
};

StartupChannel& channel() {
  static StartupChannel taken;
  return taken;
}

// Priority 101, the first one a program may use (0-100 belong to the implementation): GCC and
// Clang run it before every constructor and C++ static initialiser of default priority, which is
// what the submission's own code gets unless it asks for a priority itself. So the key is read,
// and its pipe closed, before that code could read it; code that reads it first anyway leaves the
// grader a pipe without a whole key, which every record then reports. The report file's name is
// taken here too, so a later setenv cannot point the listener elsewhere.
__attribute__((constructor(101))) void take_report_channel() {
  StartupChannel& taken = channel();
  if (const char* path = std::getenv("WORKBOOK_REPORT")) {
    taken.reporting = true;
    taken.path = path;
  }
  const char* fd_text = std::getenv("WORKBOOK_REPORT_KEY_FD");
  if (fd_text == nullptr) return;
  taken.keyed = true;
  char* end = nullptr;
  errno = 0;
  const long fd = std::strtol(fd_text, &end, 10);
  if (end == fd_text || *end != '\0' || errno != 0 || fd < 0 || fd > 1 << 20) {
    taken.key.problem = "WORKBOOK_REPORT_KEY_FD is not a descriptor number";
  } else {
    taken.key = read_report_key(static_cast<int>(fd));
  }
  ::unsetenv("WORKBOOK_REPORT_KEY_FD");
  if (!taken.key.problem.empty()) {
    std::fprintf(stderr, "grader: no whole report key from the driver (%s): nothing this run reports will count\n",
                 taken.key.problem.c_str());
  }
}

}  // namespace

const ReportKey* report_key() { return channel().keyed ? &channel().key : nullptr; }

const char* report_path() { return channel().reporting ? channel().path.c_str() : nullptr; }

}  // namespace grader
