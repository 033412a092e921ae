/// \file
/// Seeded random numbers that the host and the device compute identically: element i of a
/// stream is a hash of (seed, i). So inputs can be generated on the GPU at full speed and the
/// expected result computed on the host without copying the inputs back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "workbook/host_device.hpp"

namespace workbook {

/// The splitmix64 finaliser: a fast, well-mixed 64-bit hash.
WORKBOOK_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Element \p i of the stream \p seed: a float uniform in [lo, hi), the same on host and device.
WORKBOOK_HOST_DEVICE inline float random_uniform(std::uint64_t seed, std::uint64_t i, float lo, float hi) {
  const std::uint64_t bits = mix64(mix64(seed) ^ i);
  const float unit = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // 24 bits -> [0, 1)
#if defined(__CUDA_ARCH__)
  // Rounded multiply, then rounded add, as the host does: a fused multiply-add (nvcc's default)
  // would round once and differ from the host wherever (hi - lo) * unit is not exact.
  return __fadd_rn(lo, __fmul_rn(hi - lo, unit));
#else
  return lo + (hi - lo) * unit;
#endif
}

/// \p n values of the stream \p seed on the host, uniform in [lo, hi).
std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);

/// The values of random_floats written into \p n floats of host memory at \p out (pinned memory
/// too), on every core: no vector made and copied.
void fill_random(float* out, std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);

/// Fills \p n floats of device memory at \p out with the stream \p seed (asynchronous on \p stream).
void fill_random_device(float* out, std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f,
                        void* stream = nullptr);

/// A seed for a run: std::random_device, for when the user gave none.
std::uint64_t fresh_seed();

}  // namespace workbook
