// main() of every grader program: Catch2's session plus a listener that writes the
// report records (report_record.hpp) to the file named by WORKBOOK_REPORT, each signed with
// the key the driver passed through a pipe, both taken at start-up (report_record.cpp). Without
// that variable the program is an ordinary Catch2 test program: run it by hand to debug.
//
// With WORKBOOK_TIMING_GATE ("<gate fd>,<parked fd>", ./grade --park-timed: grader/driver/runner.py,
// ParkedRun) the program parks before its first timing (workbook::set_before_first_timing): it
// says "parked" on one pipe and waits for the driver's "g" on the other, which comes once the GPU
// is the grading's alone. Its records' clock leaves out the wait; "parked" carries the seconds
// the program had run by then on that clock.
#include "grader.hpp"
#include "report_record.hpp"

#include "workbook/timer.hpp"

#include <catch2/catch_session.hpp>
#include <catch2/catch_test_case_info.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace {

// The records' clock starts here, as the program is loaded.
const std::chrono::steady_clock::time_point program_started = std::chrono::steady_clock::now();

// The timing gate's pipes (-1: none), and the seconds the program waited there, which the
// records' clock leaves out.
int gate_fd = -1, parked_fd = -1;
double parked_s = 0.0;

// Exit status of a program whose gate closed without a "g": the driver is gone or discarded
// it, and nothing is to be timed.
constexpr int kGateClosedExit = 3;

void park_until_go() {
  // Nothing of this program's is left running on the GPU while it waits, so a parked program
  // does not disturb the grading that has the GPU alone.
  (void)cudaDeviceSynchronize();
  const auto parked = std::chrono::steady_clock::now();
  char said[64];
  const int length = std::snprintf(said, sizeof said, "parked %.6f\n",
                                   std::chrono::duration<double>(parked - program_started).count());
  ssize_t wrote = 0;
  do wrote = ::write(parked_fd, said, static_cast<std::size_t>(length));
  while (wrote < 0 && errno == EINTR);
  char go = 0;
  ssize_t got = 0;
  do got = ::read(gate_fd, &go, 1);
  while (got < 0 && errno == EINTR);
  ::close(gate_fd);
  ::close(parked_fd);
  if (wrote <= 0 || got != 1 || go != 'g') std::_Exit(kGateClosedExit);
  parked_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - parked).count();
}

// WORKBOOK_TIMING_GATE, taken as main() begins: both descriptors, or no gate.
void take_timing_gate() {
  const char* text = std::getenv("WORKBOOK_TIMING_GATE");
  if (text == nullptr) return;
  int gate = -1, parked = -1;
  char tail = 0;
  if (std::sscanf(text, "%d,%d%c", &gate, &parked, &tail) == 2 && gate >= 0 && parked >= 0) {
    gate_fd = gate;
    parked_fd = parked;
    // Not inherited by a program this one starts, which would keep the pipes open after its end.
    (void)::fcntl(gate_fd, F_SETFD, FD_CLOEXEC);
    (void)::fcntl(parked_fd, F_SETFD, FD_CLOEXEC);
    workbook::set_before_first_timing(park_until_go);
  } else {
    std::fprintf(stderr, "grader: WORKBOOK_TIMING_GATE is not two descriptor numbers: the program does not park\n");
  }
  ::unsetenv("WORKBOOK_TIMING_GATE");
}

class GradeListener : public Catch::EventListenerBase {
public:
  using Catch::EventListenerBase::EventListenerBase;

  void testRunStarting(const Catch::TestRunInfo&) override {
    if (const char* path = grader::report_path()) file_ = std::fopen(path, "a");
    if (file_ != nullptr) {
      grader::set_wait_reporter([this](const std::string& what, grader::WaitEvent event, const std::string& error) {
        grader::TestRecord record;
        record.event = event == grader::WaitEvent::Begun   ? "wait"
                       : event == grader::WaitEvent::Ended ? "waited"
                                                           : "wait_raised";
        if (!error.empty()) record.messages.push_back(error);
        record.test = current_.test;
        record.what = what;
        write(record);
      });
    }
  }

  void testRunEnded(const Catch::TestRunStats&) override {
    grader::set_wait_reporter(nullptr);
    grader::TestRecord end;
    end.event = "run_end";  // the program finished its tests: an exit before this does not pass
    end.test_cases = test_cases_;
    write(end);
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
  }

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    grader::reset_test_state();
    ++test_cases_;
    current_ = grader::TestRecord{};
    current_.test = info.name;
    for (const Catch::Tag& tag : info.tags) current_.tags.emplace_back(tag.original.data(), tag.original.size());
    grader::set_test_tags(current_.tags);
    current_.event = "start";
    write(current_);
  }

  void assertionEnded(const Catch::AssertionStats& stats) override {
    const Catch::AssertionResult& result = stats.assertionResult;
    const bool skip = result.getResultType() == Catch::ResultWas::ExplicitSkip;
    if (result.isOk() && !skip) return;
    // Explicit messages (FAIL, SKIP) also arrive among the info messages: keep them once.
    const std::string message(result.getMessage());
    std::string text;
    for (const Catch::MessageInfo& info : stats.infoMessages) {
      if (result.hasExpression() || info.message != message) text += info.message + "\n";
    }
    text += result.hasExpression() ? result.getExpandedExpression() : message;
    if (result.getResultType() == Catch::ResultWas::ThrewException) text = "threw: " + text;
    current_.messages.push_back(text);
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    grader::release_device_scratch();
    current_.event = "end";
    if (grader::marked_wrote_nothing()) {
      current_.outcome = "wrote_nothing";
    } else if (stats.totals.assertions.failed > 0) {
      current_.outcome = "failed";
    } else if (stats.totals.assertions.skipped > 0) {
      current_.outcome = "skipped";
    } else {
      current_.outcome = "passed";
    }
    current_.metrics = grader::recorded_metrics();
    write(current_);
  }

  void fatalErrorEncountered(Catch::StringRef signal) override {
    grader::TestRecord fatal = current_;
    fatal.event = "fatal";
    fatal.messages = {std::string(signal)};
    write(fatal);
  }

private:
  // Every record carries the seconds since the program started, on the clock the driver's
  // deadline runs on, so a test stopped at its limit shows what it was doing and for how long;
  // less the wait of a parked program, whose deadline starts again when it goes on.
  void write(grader::TestRecord record) {
    if (file_ == nullptr) return;
    record.t = std::chrono::duration<double>(std::chrono::steady_clock::now() - program_started).count() - parked_s;
    const std::string line = grader::sign_record(grader::format_record(record), sequence_++, grader::report_key());
    std::fprintf(file_, "%s\n", line.c_str());
    std::fflush(file_);
  }

  std::FILE* file_ = nullptr;
  long sequence_ = 0;
  long test_cases_ = 0;
  grader::TestRecord current_;
};

}  // namespace

CATCH_REGISTER_LISTENER(GradeListener)

int main(int argc, char* argv[]) {
  take_timing_gate();
  return Catch::Session().run(argc, argv);
}
