/// \file
/// Checking large outputs on the device, where they are.
///
/// agrees_on_device is the fast path of checking an output: every element against its expected value, on the
/// device, by the rule the host's comparison applies (workbook::element_agrees); nothing comes
/// back but a count. A grader test asks it first; only when it finds a wrong element (or a
/// written guard) does the test copy the output back and compare on the host, for the full
/// report (grader::MatchesReference and the lessons' own diagnoses). So a right output costs a
/// kernel over it instead of a copy, a host reference and a host loop: seconds at 2^28 elements.
///
/// The expected value comes from a functor the test defines, `double operator()(std::size_t i)`,
/// callable on the device: the lesson's formula on the seeded inputs (workbook::random_uniform is
/// the same on both sides), never a read of memory the student's code could have written. It must
/// compute what the host's reference computes, rounded as it rounds (the compiler fuses a multiply
/// and an add unless told not to: __dmul_rn, __dadd_rn), so that the device never calls right what
/// the host would call wrong. The value is rounded to float before the comparison, as the hosts'
/// expected arrays are. grader/support/tests/device_check_gpu_test.cu checks the rule on both sides.
///
/// Then sum_on_device: the float64 reference sum of a large input where it lies, instead of a
/// copy back and a serial host loop (lesson 04's sums).
#pragma once

#include "grader.hpp"
#include "workbook/compare.hpp"
#include "workbook/cuda_check.hpp"
#include "workbook/device_buffer.hpp"
#include "workbook/guarded_array.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace grader {

namespace detail {

// The grader's kernels carry "grader_own_" in their names: compute-sanitizer's memcheck, racecheck
// and synccheck leave them unchecked, at full speed, in the check of a pass (grader/driver/sanitizer.py,
// GRADER_KERNEL_MARK). Only kernels that the grader launches on its own buffers are so named.
template <class Expected>
__global__ void grader_own_count_disagreements(const float* got, std::size_t n, workbook::Tolerance tolerance,
                                               Expected expected, unsigned long long* wrong) {
  unsigned long long mine = 0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    // Rounded to float first, as every host reference of the grader holds its expected values.
    mine += !workbook::element_agrees(got[i], static_cast<float>(expected(i)), tolerance);
  }
  if (mine != 0) atomicAdd(wrong, mine);
}

// Adds to *changed the number of the \p count words at \p words that no longer hold \p bits.
template <class Word>
__global__ void grader_own_count_changed_words(const Word* words, std::size_t count, Word bits,
                                               unsigned long long* changed) {
  unsigned long long mine = 0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    mine += words[i] != bits;
  }
  if (mine != 0) atomicAdd(changed, mine);
}

template <class Term>
__global__ void grader_own_partial_sums(const float* x, std::size_t n, Term term, double* partial) {
  __shared__ double lane[256];
  double mine = 0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) mine += term(x[i]);
  lane[threadIdx.x] = mine;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) lane[threadIdx.x] += lane[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = lane[0];
}

}  // namespace detail

namespace detail {

// Enqueues the count of the \p n floats at \p got that disagree with expected(i), added to *wrong.
template <class Expected>
void enqueue_count_wrong(const float* got, std::size_t n, workbook::Tolerance tolerance, Expected expected,
                         unsigned long long* wrong) {
  if (n == 0) return;
  int device = 0, sms = 0;
  WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t wanted = (n + 255) / 256;
  const int blocks = static_cast<int>(wanted < std::size_t(sms) * 8 ? wanted : std::size_t(sms) * 8);
  grader_own_count_disagreements<<<blocks, 256>>>(got, n, tolerance, expected, wrong);
  WORKBOOK_CUDA_CHECK(cudaGetLastError());
}

// Where one check's result goes on the device: the test's scratch (device_scratch), or in a timed
// test, which has none, a buffer of the check's own, as before there was a scratch.
class CheckSpace {
public:
  CheckSpace() : own_(device_scratch() != nullptr ? 0 : kDeviceScratchBytes) {}
  void* get() { return own_.size() > 0 ? static_cast<void*>(own_.data()) : device_scratch(); }

private:
  workbook::DeviceBuffer<char> own_;
};

inline unsigned long long* zeroed_count(CheckSpace& space) {
  auto* count = static_cast<unsigned long long*>(space.get());
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned long long), nullptr));
  return count;
}

// The count at \p count, after the work enqueued before it (one round trip).
inline unsigned long long read_count(const unsigned long long* count) {
  unsigned long long value = 0;
  WORKBOOK_CUDA_CHECK(cudaMemcpy(&value, count, sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

}  // namespace detail

/// How many of the \p n floats at device address \p got disagree with expected(i) (0 .. n).
/// Waits for the device: one round trip (the count comes back through device_scratch).
template <class Expected>
unsigned long long count_wrong_on_device(const float* got, std::size_t n, workbook::Tolerance tolerance,
                                         Expected expected) {
  detail::CheckSpace space;
  unsigned long long* wrong = detail::zeroed_count(space);
  detail::enqueue_count_wrong(got, n, tolerance, expected, wrong);
  return detail::read_count(wrong);
}

/// True when every element of \p array agrees with expected(i) and its guards are intact: the
/// elements and the guards counted on the device, one round trip in all.
/// False says only that the host must look (and report); it is never a verdict by itself.
template <class Expected>
bool agrees_on_device(const workbook::GuardedDeviceArray& array, workbook::Tolerance tolerance, Expected expected) {
  detail::CheckSpace space;
  unsigned long long* wrong = detail::zeroed_count(space);
  detail::enqueue_count_wrong(array.data(), array.size(), tolerance, expected, wrong);
  if (const std::size_t guard = array.guard_elements(); guard > 0) {
    const auto* before = reinterpret_cast<const std::uint32_t*>(array.data()) - guard;
    const auto* after = reinterpret_cast<const std::uint32_t*>(array.data()) + array.size();
    for (const std::uint32_t* words : {before, after}) {
      detail::grader_own_count_changed_words<<<static_cast<int>((guard + 255) / 256), 256>>>(words, guard, array.guard_bits(),
                                                                                  wrong);
      WORKBOOK_CUDA_CHECK(cudaGetLastError());
    }
  }
  return detail::read_count(wrong) == 0;
}

/// The float64 sum of term(x[i]) over the \p n floats at device address \p x (term: float ->
/// double, callable on the device), added on the device in a fixed order: the same input gives
/// the same sum on every call. Its rounding error is that of float64, far inside any tolerance a
/// float32 result is held to. Waits for the device: one round trip (the partial sums come back
/// through device_scratch).
template <class Term>
double sum_on_device(const float* x, std::size_t n, Term term) {
  // As many blocks as n needs, up to 1024: few for a small input, which matters under
  // compute-sanitizer's racecheck, whose cost grows with every block's shared-memory accesses.
  constexpr std::size_t kMostBlocks = 1024, kThreads = 256;  // kThreads: detail::grader_own_partial_sums's shared array
  const std::size_t wanted = (n + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted == 0 ? 1 : (wanted < kMostBlocks ? wanted : kMostBlocks));
  static_assert(kMostBlocks * sizeof(double) <= kDeviceScratchBytes, "the partial sums fit device_scratch");
  detail::CheckSpace space;
  auto* partial = static_cast<double*>(space.get());
  detail::grader_own_partial_sums<<<blocks, kThreads>>>(x, n, term, partial);
  WORKBOOK_CUDA_CHECK(cudaGetLastError());
  std::vector<double> host(blocks);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(host.data(), partial, blocks * sizeof(double), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (const double p : host) sum += p;
  return sum;
}

}  // namespace grader
