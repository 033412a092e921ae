/// \file
/// What a lesson's grader tests use besides Catch2: the GPU requirement, the run's seed,
/// test sizes, metrics for the scoreboard, and the "wrote nothing" outcome.
/// The grader driver (./grade) runs each task in its own process and reads the records the
/// listener in grader_main.cpp writes; see grader/README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace grader {

/// Skips the current test, with the reason, when no GPU can be used. Otherwise, in a test that is
/// not timed ([perf]), makes the test's device scratch (device_scratch): here, before any traced
/// call of the student's. A cudaMalloc that fails (out of memory, an earlier test's sticky error)
/// leaves none, and the checks allocate their own: a failure for the test's own steps to report.
void require_gpu();

/// Bytes of device_scratch().
constexpr std::size_t kDeviceScratchBytes = 1024 * sizeof(double);

/// kDeviceScratchBytes of device memory that the grader's own checks of one test reuse for their
/// results (count_wrong_on_device, sum_on_device): a cudaMalloc and a cudaFree per check were two
/// more round trips to the GPU, each about a millisecond where gradings share it. require_gpu()
/// makes it, the end of the test frees it (release_device_scratch). nullptr in a timed test, and
/// there each check allocates its own: a device allocation that stays changes what cudaMalloc and
/// cudaFree cost (lesson 05 task 3 times them: beside an 8 KiB allocation kept for the whole test,
/// its baseline of cudaMalloc and cudaFree per batch ran 4 to 5 times faster on an H200), so a timed
/// test finds the allocator as the student's code alone leaves it. One check at a time uses it
/// (each waits for its result before returning).
void* device_scratch();

/// Frees the test's device scratch (at the end of every test case; errors ignored: a test that
/// ended on a sticky CUDA error cannot free anything).
void release_device_scratch();

/// The seed of this run: Catch2's --rng-seed, which the driver sets and prints.
std::uint64_t seed();

/// A seed for one named input of one test, derived from the run's seed.
std::uint64_t seed_for(const std::string& name);

/// True when running under compute-sanitizer (./grade --sanitize): small sizes, no guards. Read from
/// the environment the program started with (workbook::sanitizer_run), so a setenv in the code
/// being graded cannot switch checks off.
bool sanitize_mode();

/// True in the check of a pass (WORKBOOK_SANITIZE names one of compute-sanitizer's four tools at
/// start-up: memcheck, racecheck, synccheck, initcheck), not under ./grade --sanitize
/// (WORKBOOK_SANITIZE=1) or any other value. A test may then run a subset of sanitize_mode's
/// shapes, the same under every tool: whole interior blocks, ragged edge blocks (their paths
/// differ), two trips of a loop over tiles, the tails a vector path leaves. The check looks for an
/// access or a barrier that is wrong while the values come out right; a kernel takes such a path
/// at the ragged shapes kept as at those left out, and the plain run (guards, NaN around every
/// input) has checked the values of every shape. Each call left out saves its waits, about a
/// millisecond each where gradings share the GPU, and under racecheck its instrumented
/// shared-memory accesses (lesson 03's tiled test took about 2 s under racecheck against 0.01 s
/// under memcheck on an H100, November 2026). ./grade --sanitize, which a finding's verdict tells
/// the student to run, and the follow-up of results that differ run every shape.
bool pass_check_mode();

/// Records a number for the scoreboard (e.g. "fraction_of_copy_bandwidth").
void record_metric(const std::string& name, double value);

/// A yardstick of the current timed test: a figure of the grader's own code (cuBLAS's GFLOP/s, a
/// baseline's milliseconds) on a shape the grader fixes, the same whatever code is graded. ./grade
/// times the reference solution's test before the student's and passes its figures to the
/// student's program (`WORKBOOK_YARDSTICKS` as the program started: `name=value,...`), which then
/// takes \p name from there instead of timing it a second time; without such a figure (a program
/// run by hand, the reference's own run, a reference that failed) \p measure gives it. Either way
/// it is recorded as the metric \p name, and the metric "yardsticks_given" counts those taken.
/// Where one run times several tasks, a task's figures are given as `task_N.name`: a test tagged
/// [task_N] takes that one first (set_test_tags).
double yardstick(const std::string& name, const std::function<double()>& measure);

/// The figure `WORKBOOK_YARDSTICKS`, as the program started, gives for \p name (parsed then, before
/// the code being graded could change the environment or the locale); 0 when it gives none, or
/// one that is not a finite positive number.
double given_yardstick(const std::string& name);

/// The metrics recorded in the current test case (read by the listener).
const std::vector<std::pair<std::string, double>>& recorded_metrics();

/// Ends the current test as a failure with the outcome "wrote nothing": the call under test
/// ran and left its output exactly as the grader filled it. \p facts says which call, on what
/// problem, and what it did (tracer.hpp's wrote_nothing adds the trace). Only the driver can
/// tell whether that is the untouched skeleton ("not implemented yet") or code the student
/// wrote (a failure with these facts): it compares the source with grader/skeletons.json.
[[noreturn]] void wrote_nothing(const std::string& facts);

/// True when the current test ended through wrote_nothing() (read by the listener).
bool marked_wrote_nothing();

/// Clears the per-test state; the listener calls it when a test case starts.
void reset_test_state();

/// The current test case's tags without brackets ("task_1", "perf"), set by the listener after
/// reset_test_state: which task's yardsticks (yardstick) the test takes.
void set_test_tags(std::vector<std::string> tags);

/// Waits for the GPU to finish everything queued (cudaDeviceSynchronize, checked), and tells
/// the driver that it waits for \p what and when the wait ended. A test stopped at its time
/// limit then shows whether one launch never finished or the checks were merely slow.
void synchronize(const std::string& what = "");

/// The same records around a host call that waits for the GPU inside (a student's host
/// function): construct before the call, destroy after it. A call that ends by throwing (a
/// CUDA error surfacing in it, such as an illegal address) is reported as such, with its label,
/// so that a crash verdict can name the call it surfaced in.
class GpuWait {
public:
  explicit GpuWait(const std::string& what);
  ~GpuWait();
  GpuWait(const GpuWait&) = delete;
  GpuWait& operator=(const GpuWait&) = delete;

private:
  std::string what_;
  int exceptions_;  // std::uncaught_exceptions() at construction: more at destruction means unwinding
};

/// How a wait for the GPU went, as the driver reads it.
enum class WaitEvent {
  Begun,   ///< "wait": the grader started waiting for \p what
  Ended,   ///< "waited": it returned
  Raised,  ///< "wait_raised": it ended by throwing (an error surfaced in \p what); the record
           ///< carries the CUDA error pending then (cudaPeekAtLastError), if any
};

/// Where the listener in grader_main.cpp sends "wait" records (one JSON line each); unset
/// when no report file was asked for.
void set_wait_reporter(
    std::function<void(const std::string& what, WaitEvent event, const std::string& cuda_error)> reporter);

/// Fills the shared memory of every SM with \p value (as much as one block may have, two blocks
/// per SM so that each SM runs one), and waits. Shared memory a kernel never writes holds whatever
/// the block before it on that SM left, which may well repeat itself from run to run; filled with
/// a different value before each rerun, it makes such a read give different results every time,
/// as a race may. Which of the two it is, racecheck tells (grader/driver/races.py).
void fill_shared_memory(float value);

/// Sizes every correctness test covers, in increasing order: 1, warp size -1/0/+1, \p block
/// -1/0/+1, 1000 and a prime that are not multiples of any block size, two seeded random sizes, and
/// \p large (skipped under the sanitizer).
std::vector<std::size_t> test_sizes(int block, std::size_t large);

}  // namespace grader
