// Guarded device arrays: poison inside, known patterns outside, checked after each launch.
#include "workbook/guarded_array.hpp"

#include "workbook/compare.hpp"
#include "workbook/random.hpp"
#include "workbook/startup_environment.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <sstream>

namespace workbook {
namespace {

// "grader_own_": the grader's poison and guards, which compute-sanitizer's check of a pass leaves
// unchecked (grader/driver/sanitizer.py, GRADER_KERNEL_MARK).
__global__ void grader_own_fill_words(std::uint32_t* words, std::size_t count, std::uint32_t bits) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count; i += stride) {
    words[i] = bits;
  }
}

// The fill, on the legacy default stream, without waiting for it.
void enqueue_fill_words(void* words, std::size_t count, std::uint32_t bits) {
  if (count == 0) return;
  const std::size_t blocks = (count + 255) / 256;
  grader_own_fill_words<<<static_cast<int>(blocks < 65536 ? blocks : 65536), 256>>>(static_cast<std::uint32_t*>(words),
                                                                                 count, bits);
  WORKBOOK_CHECK_LAUNCH();
}

}  // namespace

void fill_words_device(void* words, std::size_t count, std::uint32_t bits) {
  if (count == 0) return;
  enqueue_fill_words(words, count, bits);
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
}

std::size_t default_guard_elements() { return sanitizer_run() ? 0 : 4096; }

GuardReport inspect_guards(const std::vector<std::uint32_t>& before, const std::vector<std::uint32_t>& after,
                           std::uint32_t pattern) {
  GuardReport report;
  report.guard_elements = after.size();
  for (std::size_t k = 0; k < after.size(); ++k) {
    if (after[k] == pattern) continue;
    if (report.written_after == 0) report.nearest_after = k;
    report.farthest_after = k;
    ++report.written_after;
    report.offsets_after.push_back(k);
  }
  // before[before.size() - 1] is element -1, so walk it backwards.
  for (std::size_t k = 0; k < before.size(); ++k) {
    if (before[before.size() - 1 - k] == pattern) continue;
    if (report.written_before == 0) report.nearest_before = k;
    report.farthest_before = k;
    ++report.written_before;
  }
  return report;
}

std::string GuardReport::describe(std::size_t n) const {
  std::ostringstream out;
  if (intact()) return "nothing outside the array was written";
  if (written_after > 0) {
    out << written_after << (written_after == 1 ? " element" : " elements") << " past the end of the output "
        << (written_after == 1 ? "was" : "were") << " written (";
    if (written_after == 1) {
      out << "index " << n + nearest_after;
    } else {
      out << "indices " << n + nearest_after << " .. " << n + farthest_after << ", n = " << n;
    }
    out << ")";
  }
  if (written_before > 0) {
    if (written_after > 0) out << "; ";
    out << written_before << (written_before == 1 ? " element" : " elements")
        << " before the start of the output " << (written_before == 1 ? "was" : "were") << " written (index -"
        << nearest_before + 1;
    if (written_before > 1) out << " .. -" << farthest_before + 1;
    out << ")";
  }
  return out.str();
}

GuardedDeviceArray::GuardedDeviceArray(std::size_t n, std::uint32_t guard_bits, std::size_t guard)
    : storage_(n + 2 * guard), n_(n), guard_(guard), guard_bits_(guard_bits) {
  poison();
}

// Three fills and one wait: a wait is a round trip to the GPU, and where gradings share the GPU
// each costs about a millisecond (grader/README.md, "Why side by side buys little").
void GuardedDeviceArray::poison() {
  enqueue_poison();
  if (n_ + 2 * guard_ > 0) WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
}

void GuardedDeviceArray::enqueue_poison() { enqueue_fill(kPoisonBits); }

void GuardedDeviceArray::enqueue_fill(std::uint32_t bits) {
  enqueue_fill_words(storage_.data(), guard_, guard_bits_);
  enqueue_fill_words(data(), n_, bits);
  enqueue_fill_words(data() + n_, guard_, guard_bits_);
}

void GuardedDeviceArray::upload(const std::vector<float>& host) {
  if (host.size() != n_) throw std::invalid_argument("GuardedDeviceArray::upload: size mismatch");
  if (n_ > 0) WORKBOOK_CUDA_CHECK(cudaMemcpy(data(), host.data(), n_ * sizeof(float), cudaMemcpyHostToDevice));
  // A cudaMemcpy from pageable memory may return before the data reaches the device, and it is
  // ordered only with the legacy default stream: wait, so that work on any stream (a student's
  // non-blocking one) sees the data. Without this, a rerun could start from another state than the
  // run it is compared with.
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
}

void GuardedDeviceArray::fill_random(std::uint64_t seed, float lo, float hi) {
  fill_random_device(data(), n_, seed, lo, hi);
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
}

std::vector<float> GuardedDeviceArray::download() const {
  std::vector<float> host(n_);
  if (n_ > 0) {
    WORKBOOK_CUDA_CHECK(cudaMemcpy(host.data(), storage_.data() + guard_, n_ * sizeof(float), cudaMemcpyDeviceToHost));
  }
  return host;
}

GuardReport GuardedDeviceArray::check_guards() const {
  std::vector<std::uint32_t> both(2 * guard_);
  if (guard_ > 0) {
    // Both guards in one copy (one round trip): two rows of guard_ words, guard_ + n_ words apart.
    const std::size_t row = guard_ * 4;
    WORKBOOK_CUDA_CHECK(cudaMemcpy2D(both.data(), row, storage_.data(), (guard_ + n_) * 4, row, 2,
                                     cudaMemcpyDeviceToHost));
  }
  return inspect_guards(std::vector<std::uint32_t>(both.begin(), both.begin() + guard_),
                        std::vector<std::uint32_t>(both.begin() + guard_, both.end()), guard_bits_);
}

std::vector<float> GuardedDeviceArray::download(GuardReport& guards) const {
  // A large array: two copies. The one copy below moves every value on the host to drop the front
  // guard, which costs more than the round trip it saves from about a million elements up.
  if (n_ > kOneCopyMostElements) {
    guards = check_guards();
    return download();
  }
  // The array and its guards in one copy (one round trip); the guards add 2 x 16 KiB to it.
  std::vector<float> all(n_ + 2 * guard_);
  if (!all.empty()) {
    WORKBOOK_CUDA_CHECK(cudaMemcpy(all.data(), storage_.data(), all.size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  std::vector<std::uint32_t> before(guard_), after(guard_);
  if (guard_ > 0) {
    std::memcpy(before.data(), all.data(), guard_ * 4);
    std::memcpy(after.data(), all.data() + guard_ + n_, guard_ * 4);
  }
  guards = inspect_guards(before, after, guard_bits_);
  all.erase(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(guard_));
  all.resize(n_);
  return all;
}

}  // namespace workbook
