// A grader program without a GPU: the real listener and main() (grader_main.cpp) around a few
// host-only test cases that behave like honest code and like code that tampers with the report.
// grader/tests/test_runner.py runs it through the driver's run_phase, so the records the C++
// listener signs are verified by the driver's Python, and each attack meets the real defence:
//   [honest]   passes, and records what the grader reads from its start-up environment;
//   [fails]    fails with a message that is not UTF-8;
//   [forges]   appends a replayed line and a made-up passing record to the report file;
//   [exits]    calls std::exit(0) in the middle of a test;
//   [yardsticks] asks grader::yardstick for figures, each "measured" as 7 when not given;
//   [times]    sleeps 0.2 s (its set-up; WORKBOOK_CHANNEL_TEST_SETUP_MS milliseconds when set), then
//              times a 1 ms sleep three times by the host's clock (workbook::time_on_host: where a
//              parked program waits, ./grade --park-timed); first prints
//              WORKBOOK_CHANNEL_TEST_PRINT_BYTES bytes when set.
// All but [honest] are hidden ([.]): run by hand, the program runs that one alone.
// Environment switches, each an attack made at start-up:
//   WORKBOOK_CHANNEL_TEST_SETENV       a default-priority static initialiser sets the bandwidth,
//                                      WORKBOOK_SANITIZE, WORKBOOK_REPORT and WORKBOOK_YARDSTICKS, as
//                                      a submission could;
//   WORKBOOK_CHANNEL_TEST_STEAL_KEY    a .preinit_array function, which runs before any constructor,
//                                      reads the key's pipe before the grader does;
//   WORKBOOK_CHANNEL_TEST_LATE_THIEF   a default-priority static initialiser tries to read the pipe
//                                      (its number noted before the grader took it).
// It is not a lesson's grader and never touches a GPU.
#include "grader.hpp"

#include "workbook/device_info.hpp"
#include "workbook/guarded_array.hpp"
#include "workbook/startup_environment.hpp"
#include "workbook/timer.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

int noted_key_fd = -1;       // the pipe's number, for the late thief
long late_thief_read = -1;   // what it got: bytes read, or -1 when the read failed

// The variable \p name in \p envp. So early, the C library's getenv may not see the environment yet.
const char* find(char** envp, const char* name) {
  const std::size_t length = std::strlen(name);
  for (char** entry = envp; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, name, length) == 0 && (*entry)[length] == '=') return *entry + length + 1;
  }
  return nullptr;
}

void before_every_constructor(int, char**, char** envp) {
  const char* fd_text = find(envp, "WORKBOOK_REPORT_KEY_FD");
  if (fd_text == nullptr) return;
  if (find(envp, "WORKBOOK_CHANNEL_TEST_LATE_THIEF") != nullptr) noted_key_fd = std::atoi(fd_text);
  if (find(envp, "WORKBOOK_CHANNEL_TEST_STEAL_KEY") != nullptr) {
    char stolen[256];
    while (::read(std::atoi(fd_text), stolen, sizeof stolen) > 0) {
    }
  }
}

// Functions in .preinit_array run before every constructor of the program, whatever its priority.
__attribute__((section(".preinit_array"), used)) void (*const preinit)(int, char**, char**) = &before_every_constructor;

const bool attacked_at_startup = [] {
  if (std::getenv("WORKBOOK_CHANNEL_TEST_SETENV") != nullptr) {
    ::setenv("WORKBOOK_COPY_BANDWIDTH_GBPS", "1", 1);
    ::setenv("WORKBOOK_SANITIZE", "racecheck", 1);
    ::setenv("WORKBOOK_REPORT", "/dev/null", 1);
    ::setenv("WORKBOOK_YARDSTICKS", "a=1000,b=1000,ab=1000,abc=1000,e=1000", 1);
  }
  if (noted_key_fd >= 0) {
    char stolen[256];
    late_thief_read = static_cast<long>(::read(noted_key_fd, stolen, sizeof stolen));
  }
  return true;
}();

}  // namespace

TEST_CASE("honest", "[honest]") {
  // The bandwidth only when the driver gave one: measuring it would need a GPU.
  if (workbook::startup_env("WORKBOOK_COPY_BANDWIDTH_GBPS") != nullptr) {
    grader::record_metric("copy_bandwidth_gbps", workbook::copy_bandwidth_gbps_for_run());
  }
  grader::record_metric("guard_elements", static_cast<double>(workbook::default_guard_elements()));
  grader::record_metric("sanitize_mode", grader::sanitize_mode() ? 1 : 0);
  grader::record_metric("pass_check_mode", grader::pass_check_mode() ? 1 : 0);
  grader::record_metric("late_thief_read", static_cast<double>(late_thief_read));
  grader::record_metric("key_fd_in_environment", std::getenv("WORKBOOK_REPORT_KEY_FD") != nullptr ? 1 : 0);
  CHECK(attacked_at_startup);
}

TEST_CASE("fails", "[.][fails]") {
  FAIL("a message that is not UTF-8: \xff\xfe");
}

TEST_CASE("forges", "[.][forges]") {
  const char* path = std::getenv("WORKBOOK_REPORT");
  REQUIRE(path != nullptr);
  std::string first;
  {
    std::ifstream report(path);
    std::getline(report, first);  // this test's own start record, signed by the grader
  }
  std::FILE* report = std::fopen(path, "a");
  REQUIRE(report != nullptr);
  std::fprintf(report, "%s\n", first.c_str());  // replayed: a MAC that verifies, out of sequence
  std::fprintf(report,
               "{\"event\": \"end\", \"test\": \"forged\", \"tags\": [\"forges\"], \"outcome\": \"passed\", "
               "\"metrics\": {\"fraction_of_copy_bandwidth\": 99.0}, \"seq\": 1, \"mac\": \"%064d\"}\n",
               0);
  std::fclose(report);
  CHECK(false);  // the real verdict, which the forged lines are to hide
}

TEST_CASE("exits", "[.][exits]") {
  std::exit(0);
}

TEST_CASE("yardsticks of a task", "[.][task_2][yardsticks_of_a_task]") {
  grader::record_metric("a", grader::yardstick("a", [] { return 7.0; }));
  grader::record_metric("b", grader::yardstick("b", [] { return 7.0; }));
  grader::record_metric("c", grader::yardstick("c", [] { return 7.0; }));
}

TEST_CASE("yardsticks", "[.][yardsticks]") {
  int measured = 0;
  for (const char* name : {"a", "b", "c", "abc", "e", "f"}) {
    grader::yardstick(name, [&] { return ++measured, 7.0; });
  }
  grader::record_metric("measured", measured);
}

TEST_CASE("times", "[.][times]") {
  if (const char* bytes = std::getenv("WORKBOOK_CHANNEL_TEST_PRINT_BYTES")) {
    for (long i = std::atol(bytes); i > 0; i -= 64) std::fputs("printed before the timing, as a kernel's printf might..\n", stdout);
    std::fputs("the last line printed before the timing\n", stdout);
    std::fflush(stdout);
  }
  const char* setup_ms = std::getenv("WORKBOOK_CHANNEL_TEST_SETUP_MS");
  std::this_thread::sleep_for(std::chrono::milliseconds(setup_ms != nullptr ? std::atoi(setup_ms) : 200));
  const auto stats = workbook::time_on_host([] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }, 0, 3);
  grader::record_metric("median_ms", stats.median_ms);
}
