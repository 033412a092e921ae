// JSON for the report records, by hand: the format is small and fixed.
#include "report_record.hpp"

#include <cmath>
#include <cstdio>

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

}  // namespace grader
