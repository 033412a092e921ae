// Lesson 07's grader: what its tests (task1_*_test.cu .. task4_*_test.cu) share.
//
// Random results are judged by the distribution a correct program draws them from
// (grader/support/statistics.hpp): each check is a test at alpha = 1e-6, and grader/README.md,
// "Statistical checks", lists them all with the false-failure rate of a whole grading. Every seed
// comes from the run's seed (grader::seed_for), so `./grade --seed N 07` repeats a verdict.
// Results that must not be random are checked exactly: the same seed gives the same result bit for
// bit, histogram counts equal the host's.
#pragma once

#include "monte_carlo.hpp"

#include "benchmark.hpp"
#include "contract.hpp"
#include "grader.hpp"
#include "statistics.hpp"

#include "workbook/workbook.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace monte_carlo_grader {

constexpr double kQuarterPi = 0.78539816339744830962;

// The stream every call is given: non-blocking, so work that strays to the default stream is not
// ordered with it.
cudaStream_t student_stream();

// FAILs, naming \p call and every test that failed (with its figures), when any of \p tests
// failed; the passed ones are listed after them, so the verdict shows what did hold. Does nothing
// under compute-sanitizer: statistics are judged in the normal run only.
void require_statistics(const std::string& call, const std::vector<grader::stats::Test>& tests);

// A single value on the device, filled with a known pattern before each call, so a call that
// leaves it alone, or adds to it, is seen.
class DeviceCounter {
public:
  static constexpr unsigned long long kPoison = 0x5A5A5A5A5A5Aull;  // 99,339,888,941,658: no count of a test
  DeviceCounter();
  unsigned long long* data() { return buffer_.data(); }
  void poison();
  unsigned long long read() const;  // waits for the device
private:
  workbook::DeviceBuffer<unsigned long long> buffer_;
};

// Creates a cuRAND host-API generator of \p type seeded with \p seed, and destroys it.
class Generator {
public:
  Generator(std::uint64_t seed, curandRngType_t type = CURAND_RNG_PSEUDO_PHILOX4_32_10);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  curandGenerator_t get() const { return generator_; }
private:
  curandGenerator_t generator_ = nullptr;
};

// The kernels of \p trace that cuRAND's library launched (Trace::program_kernels() gives the program's own).
std::vector<grader::TracedKernel> curand_kernels(const grader::Trace& trace);

// "0 kernels", "1 kernel: name<<<...>>>", "3 kernels: a<<<...>>>, b<<<...>>>, ..."
std::string kernels_text(const std::vector<grader::TracedKernel>& kernels);

}  // namespace monte_carlo_grader
