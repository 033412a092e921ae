// Worked example for lesson 04: the last step of a device-wide sum, adding one partial sum per
// block into *out. Two ways: an atomicAdd per block (the order of the additions varies from
// run to run, and so do the last bits), and a second pass that adds the partials in index
// order (the same bits every run). Also what happens to the atomic version when *out is not
// zeroed before each call. The partials here are made up; computing them from an input array
// is tasks 1 and 2. Lesson 04's README quotes it between the //! [name] markers; ctest runs it.
#include "workbook/workbook.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

// One block per partial, as if each block had just reduced its share of the input.
__global__ void add_partials_atomic(const float* partials, float* out) {
  if (threadIdx.x == 0) atomicAdd(out, partials[blockIdx.x]);  // read, add, write as one step: no update is lost
}

// A second pass: one thread adds the partials in index order and writes *out once. Slow for
// many partials (a block's tree does it faster), but the order, and so the result, is fixed.
__global__ void add_partials_in_order(const float* partials, unsigned count, float* out) {
  float s = 0.0f;
  for (unsigned b = 0; b < count; ++b) s += partials[b];
  *out = s;
}

namespace {

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float read(const float* device_value) {
  float x = 0;
  WORKBOOK_CUDA_CHECK(cudaMemcpy(&x, device_value, sizeof x, cudaMemcpyDeviceToHost));
  return x;
}

}  // namespace

int main(int, char** argv) {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  // One partial per block of a grid of 8 blocks per SM, uniform in [-1000, 1000].
  const unsigned blocks = 8u * unsigned(workbook::query_device().sm_count);
  workbook::DeviceBuffer<float> partials(blocks), result(1);
  workbook::fill_random_device(partials.data(), blocks, 11, -1000.0f, 1000.0f);
  std::vector<float> host(blocks);
  partials.copy_to_host(host.data());
  double exact = 0, sum_abs = 0;
  for (const float x : host) exact += x, sum_abs += std::abs(double(x));
  const double tolerance = 2 * std::ceil(std::log2(double(blocks))) * std::ldexp(1.0, -24) * sum_abs;
  workbook::Stream stream(cudaStreamNonBlocking);
  float* out = result.data();
  const cudaStream_t s = stream.get();
  bool ok = true;

  std::printf("%u partial sums; float64 on the host: %.6f\n", blocks, exact);
  {
    std::set<std::uint32_t> seen;
    float lo = INFINITY, hi = -INFINITY;
    for (int run = 0; run < 20; ++run) {
      //! [atomic_combine]
      // *out accumulates: zero it on the stream, in every call, before the first atomicAdd.
      WORKBOOK_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), s));
      add_partials_atomic<<<blocks, 32, 0, s>>>(partials.data(), out);
      WORKBOOK_CHECK_LAUNCH();
      //! [atomic_combine]
      stream.synchronize();
      const float got = read(out);
      seen.insert(bits(got));
      lo = std::fmin(lo, got), hi = std::fmax(hi, got);
      ok = ok && std::abs(got - exact) <= tolerance;
    }
    std::printf("  atomicAdd per block:          20 runs, %zu different results, from %.6f to %.6f\n", seen.size(), lo, hi);
  }

  std::set<std::uint32_t> seen;
  for (int run = 0; run < 20; ++run) {
    add_partials_in_order<<<1, 1, 0, s>>>(partials.data(), blocks, out);
    WORKBOOK_CHECK_LAUNCH();
    stream.synchronize();
    seen.insert(bits(read(out)));
  }
  if (seen.size() == 1) {
    std::printf("  second pass, in index order:  20 runs, the same result every time, %.6f\n", read(out));
  } else {
    std::printf("  second pass, in index order:  20 runs, %zu different results\n", seen.size());
  }
  ok = ok && seen.size() == 1 && std::abs(read(out) - exact) <= tolerance;

  // The same atomic kernel called twice with only one memset: the second call starts from the
  // first call's result.
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), s));
  add_partials_atomic<<<blocks, 32, 0, s>>>(partials.data(), out);
  add_partials_atomic<<<blocks, 32, 0, s>>>(partials.data(), out);  // no memset before this one
  WORKBOOK_CHECK_LAUNCH();
  stream.synchronize();
  std::printf("  two atomic calls, one memset: %.6f, twice the sum\n", read(out));

  if (!ok) std::printf("\nFAILED: a combined sum was off, or the in-order pass changed between runs\n");
  return ok ? 0 : 1;
}
