/// \file
/// Device arrays with guard regions: extra elements before and after the array, filled with
/// a known bit pattern and checked after a kernel ran. An out-of-bounds write usually does
/// not crash (it lands in a neighbouring allocation), so this is how a grader sees it.
/// Under compute-sanitizer the guards are left out (guard size 0), so the sanitizer sees
/// the out-of-bounds access against the allocation itself.
#pragma once

#include "workbook/device_buffer.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace workbook {

/// Guard pattern around outputs: a signalling NaN that GPU arithmetic never produces.
constexpr std::uint32_t kOutputGuardBits = 0x7FA11AD5u;
/// Guard pattern around inputs, different from kOutputGuardBits so that a kernel copying
/// input guards into output guards is still caught.
constexpr std::uint32_t kInputGuardBits = 0x7F8B00B5u;

/// Which guard elements no longer hold their pattern. Offsets count from the array's ends:
/// after[0] is element n, before[0] is element -1.
struct GuardReport {
  std::size_t written_before = 0;  ///< overwritten elements in the guard before the array
  std::size_t written_after = 0;   ///< overwritten elements in the guard after the array
  std::size_t nearest_before = 0;  ///< smallest k such that element -(k+1) was written
  std::size_t farthest_before = 0; ///< largest such k
  std::size_t nearest_after = 0;   ///< smallest k such that element n+k was written
  std::size_t farthest_after = 0;  ///< largest such k
  std::size_t guard_elements = 0;  ///< guard size on each side
  /// Every k such that element n+k was written, in increasing order: which elements, not only
  /// how many, for a diagnosis that must match a pattern exactly (lesson 03's missing bounds check).
  std::vector<std::size_t> offsets_after;

  /// True when neither guard was touched.
  bool intact() const { return written_before == 0 && written_after == 0; }
  /// One or two sentences naming what was overwritten, for an array of \p n elements.
  std::string describe(std::size_t n) const;
};

/// Inspects guard contents copied to the host. \p before is in memory order (its last
/// element sits right before the array).
GuardReport inspect_guards(const std::vector<std::uint32_t>& before, const std::vector<std::uint32_t>& after,
                           std::uint32_t pattern);

/// Guard elements on each side for this run: 4096, or 0 when the program started under the
/// sanitizer (sanitizer_run(): WORKBOOK_SANITIZE set at start-up).
std::size_t default_guard_elements();

/// \p n floats on the device with guard regions on both sides.
class GuardedDeviceArray {
public:
  /// Allocates n + 2 * guard floats; fills the guards with \p guard_bits and the array with poison.
  GuardedDeviceArray(std::size_t n, std::uint32_t guard_bits = kOutputGuardBits,
                     std::size_t guard = default_guard_elements());

  /// Device pointer to element 0 of the array (past the front guard).
  float* data() noexcept { return storage_.data() + guard_; }
  /// The same address, for reading.
  const float* data() const noexcept { return storage_.data() + guard_; }
  /// Number of elements in the array, guards excluded.
  std::size_t size() const noexcept { return n_; }
  /// Guard elements on each side (0 under the sanitizer).
  std::size_t guard_elements() const noexcept { return guard_; }
  /// The bit pattern the guards hold while intact.
  std::uint32_t guard_bits() const noexcept { return guard_bits_; }

  /// Writes the poison value into every array element (and restores the guards), and waits.
  void poison();
  /// poison() without the wait: enqueued on the legacy default stream, which orders it before the
  /// next work on that stream only. For an array the next work to touch is a kernel launched there
  /// (kernel<<<grid, block>>>); before work on any other stream (a student's function given its
  /// own stream), poison(). One round trip to the GPU fewer (about a millisecond where gradings
  /// share it).
  void enqueue_poison();
  /// enqueue_poison() with \p bits in every array element instead of the poison value: the guards
  /// restored, nothing waited for.
  void enqueue_fill(std::uint32_t bits);
  /// Copies \p host (size() values) into the array; the data is on the device, for every stream,
  /// when it returns.
  void upload(const std::vector<float>& host);
  /// Fills the array with random_uniform(seed, i, lo, hi), on the device.
  void fill_random(std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);
  /// Copies the array (guards excluded) to the host. Waits for the device.
  std::vector<float> download() const;
  /// Copies the guards to the host and reports which elements were overwritten.
  GuardReport check_guards() const;
  /// download() and check_guards() in one copy from the device (up to kOneCopyMostElements
  /// values; two copies above): the values, and the guards' report in \p guards. Waits for the device.
  std::vector<float> download(GuardReport& guards) const;
  /// The largest array download(GuardReport&) copies in one go.
  static constexpr std::size_t kOneCopyMostElements = std::size_t{1} << 20;

private:
  DeviceBuffer<float> storage_;
  std::size_t n_;
  std::size_t guard_;
  std::uint32_t guard_bits_;
};

/// Fills \p count 32-bit words at device address \p words with \p bits (synchronous).
void fill_words_device(void* words, std::size_t count, std::uint32_t bits);

}  // namespace workbook
