// Lesson 07's grader: what its tests share (monte_carlo_grader.hpp).
#include "monte_carlo_grader.hpp"

#include "tracer.hpp"

#include "workbook/curand_check.hpp"

#include <catch2/catch_test_macros.hpp>

#include <sstream>

namespace monte_carlo_grader {

cudaStream_t student_stream() {
  static workbook::Stream stream(cudaStreamNonBlocking);
  return stream.get();
}

void require_statistics(const std::string& call, const std::vector<grader::stats::Test>& tests) {
  // Under compute-sanitizer (./grade --sanitize, and the check of a pass) the calls are made for
  // the sanitizer's sake, memory errors and races; their statistics are judged in the normal run
  // only, so a correct program's chance of failing a grading stays as grader/README.md counts it.
  if (grader::sanitize_mode()) return;
  std::ostringstream failed, passed;
  std::size_t failures = 0;
  for (const grader::stats::Test& t : tests) {
    (t.passed() ? passed : failed) << "\n  - " << t.describe();
    failures += !t.passed();
  }
  if (failures == 0) return;
  std::ostringstream facts;
  facts << call << ": " << failures << " of its " << tests.size()
        << " statistical tests failed. Each test fails a correct program once in a million gradings "
           "(alpha = 1e-6; grader/README.md, 'Statistical checks'), so this is not bad luck:"
        << failed.str();
  if (failures < tests.size()) facts << "\nThe tests it passed:" << passed.str();
  FAIL(facts.str());
}

DeviceCounter::DeviceCounter() : buffer_(1) { poison(); }

void DeviceCounter::poison() {
  const unsigned long long value = kPoison;
  buffer_.copy_from_host(&value);
  // A copy from pageable memory may return before the value lands, and the student's stream is
  // not ordered with the default stream: wait, or the value could land after the student's work.
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
}

unsigned long long DeviceCounter::read() const {
  unsigned long long value = 0;
  buffer_.copy_to_host(&value);
  return value;
}

Generator::Generator(std::uint64_t seed, curandRngType_t type) {
  WORKBOOK_CURAND_CHECK(curandCreateGenerator(&generator_, type));
  WORKBOOK_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(generator_, seed));
}

Generator::~Generator() {
  if (generator_ != nullptr) curandDestroyGenerator(generator_);
}

std::vector<grader::TracedKernel> curand_kernels(const grader::Trace& trace) {
  std::vector<grader::TracedKernel> out;
  for (const grader::TracedKernel& k : trace.library_kernels()) {
    if (k.launched_by.find("curand") != std::string::npos) out.push_back(k);
  }
  return out;
}

std::string kernels_text(const std::vector<grader::TracedKernel>& kernels) {
  std::string text = std::to_string(kernels.size()) + (kernels.size() == 1 ? " kernel" : " kernels");
  for (std::size_t i = 0; i < kernels.size() && i < 4; ++i) text += (i == 0 ? ": " : ", ") + grader::launch_text(kernels[i]);
  if (kernels.size() > 4) text += ", ...";
  return text;
}

}  // namespace monte_carlo_grader
