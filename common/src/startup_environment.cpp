// The WORKBOOK_* variables, copied at start-up (workbook/startup_environment.hpp).
#include "workbook/startup_environment.hpp"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace workbook {
namespace {

using Snapshot = std::vector<std::pair<std::string, std::string>>;

// Taken on first use, which the constructor below makes happen at start-up. Never destroyed, so
// a static destructor may still ask.
const Snapshot& snapshot() {
  static const Snapshot* const taken = [] {
    auto* variables = new Snapshot;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
      const char* equals = std::strchr(*entry, '=');
      if (equals == nullptr || std::strncmp(*entry, "WORKBOOK_", 9) != 0) continue;
      variables->emplace_back(std::string(*entry, static_cast<std::size_t>(equals - *entry)), std::string(equals + 1));
    }
    return variables;
  }();
  return *taken;
}

// Priority 101, the first one a program may use (0-100 belong to the implementation): GCC and
// Clang run it before every constructor and C++ static initialiser of default priority, which is
// what the code being graded gets unless it asks for a priority itself. So a setenv in a
// submission's static initialiser, or anywhere later, cannot change what the grader reads.
__attribute__((constructor(101))) void take_snapshot_at_startup() { (void)snapshot(); }

}  // namespace

const char* startup_env(const char* name) {
  for (const auto& [key, value] : snapshot()) {
    if (key == name) return value.c_str();
  }
  return nullptr;
}

bool sanitizer_run() {
  const char* value = startup_env("WORKBOOK_SANITIZE");
  return value != nullptr && *value != '\0' && *value != '0';
}

}  // namespace workbook
