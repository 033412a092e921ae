// Worked example for lesson 07: what atomics cost when many threads update the same counters.
//   1. A float counter stops counting at 2^24; an integer one does not.
//   2. Counting the values below 1/2 among 2^26 uniforms, five ways: one atomicAdd on global
//      memory per element; one per hit as written, which the compiler makes one per warp; one per
//      warp by hand (warp-aggregated, with cooperative groups); one on a shared counter per hit and
//      one on global memory per block; a count in a register per thread, reduced in the block, one
//      atomicAdd per block. Same count, timed with CUDA events.
//   3. Counting into 16 bins whose low bins are hot (an exponential distribution): one atomicAdd
//      on global memory per value, against one per group of lanes with the same bin
//      (__match_any_sync).
// It builds no histogram in shared memory: task 2 is yours. Lesson 07's README quotes it between
// the //! [name] markers; ctest runs it (exit 0, or 77 without a GPU).
#include "workbook/workbook.hpp"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

namespace {

constexpr int kBlock = 256;
constexpr int kKeys = 16;

// The grid-stride loop of lesson 01, for every kernel below.
#define FOR_EACH_ELEMENT(i, n)                                                                \
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x,                    \
                   stride_ = std::size_t{blockDim.x} * gridDim.x;                             \
       i < (n); i += stride_)

// 1. Adds 1.0f to *count once per element.
__global__ void count_in_float(std::size_t n, float* count) {
  FOR_EACH_ELEMENT(i, n) atomicAdd(count, 1.0f);
}

//! [per_element]
// One atomicAdd on the same word of global memory for every element, adding 0 or 1: the warps of
// the whole GPU queue at one address in L2, where the additions are done one after the other.
__global__ void count_per_element(const float* x, std::size_t n, float p, unsigned long long* count) {
  FOR_EACH_ELEMENT(i, n) atomicAdd(count, static_cast<unsigned long long>(x[i] < p));
}
//! [per_element]

//! [per_hit]
// One atomicAdd per hit, as written. The compiler sees the same address and the same increment in
// every lane, and makes it one atomicAdd per warp of popc(lanes that got here).
__global__ void count_per_hit(const float* x, std::size_t n, float p, unsigned long long* count) {
  FOR_EACH_ELEMENT(i, n) {
    if (x[i] < p) atomicAdd(count, 1ull);
  }
}
//! [per_hit]

//! [warp_aggregated]
// Warp-aggregated by hand: the lanes still in the loop add up their values, and one of them adds
// the sum. This works for any value (a count, an energy), where the compiler's trick does not.
__global__ void count_warp_aggregated(const float* x, std::size_t n, float p, unsigned long long* count) {
  FOR_EACH_ELEMENT(i, n) {
    const cg::coalesced_group active = cg::coalesced_threads();  // the lanes of this warp in this iteration
    const unsigned int hits = cg::reduce(active, static_cast<unsigned int>(x[i] < p), cg::plus<unsigned int>());
    if (active.thread_rank() == 0) atomicAdd(count, static_cast<unsigned long long>(hits));
  }
}
//! [warp_aggregated]

//! [shared]
// A counter per block in shared memory, where atomics are done in the SM: one atomicAdd on shared
// memory per hit as written (per warp once compiled, as above), one on global memory per block.
// (unsigned int: fewer than 2^32 hits a block.)
__global__ void count_shared(const float* x, std::size_t n, float p, unsigned long long* count) {
  __shared__ unsigned int block_count;
  if (threadIdx.x == 0) block_count = 0;
  __syncthreads();
  FOR_EACH_ELEMENT(i, n) {
    if (x[i] < p) atomicAdd(&block_count, 1u);
  }
  __syncthreads();  // every thread's additions are in before thread 0 reads the total
  if (threadIdx.x == 0) atomicAdd(count, static_cast<unsigned long long>(block_count));
}
//! [shared]

// A count per thread in a register, the block's total by lesson 04's reduction, one atomicAdd per block.
__global__ void count_in_registers(const float* x, std::size_t n, float p, unsigned long long* count) {
  unsigned int mine = 0;
  FOR_EACH_ELEMENT(i, n) mine += x[i] < p;
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  mine = cg::reduce(warp, mine, cg::plus<unsigned int>());
  __shared__ unsigned int warp_counts[kBlock / 32];
  if (warp.thread_rank() == 0) warp_counts[warp.meta_group_rank()] = mine;
  block.sync();
  if (threadIdx.x == 0) {
    unsigned long long total = 0;
    for (int w = 0; w < kBlock / 32; ++w) total += warp_counts[w];
    atomicAdd(count, total);
  }
}

// 3. The bin of a value u in [0, 1): the "energy" E = -log2(1 - u), exponentially distributed, in
// bins of width 1, the last one open-ended: bin 1 holds half the values, bin 2 a quarter, and so
// on; bin 0 only u = 0. ilogbf is exact, so the host and the GPU agree on every bin.
__host__ __device__ int bin_of(float u) {
  const int b = -ilogbf(1.0f - u);  // 1 - u is exact: u is a multiple of 2^-24
  return b < kKeys - 1 ? b : kKeys - 1;
}

__global__ void bins_global(const float* x, std::size_t n, unsigned int* counts) {
  FOR_EACH_ELEMENT(i, n) atomicAdd(&counts[bin_of(x[i])], 1u);
}

//! [match_any]
// Warp-aggregated by key: the lanes holding the same bin find each other, and the lowest of them
// adds their number. `base` is the same for the 32 lanes of a warp (blocks are whole warps), so
// all of them run the loop equally often and can all take part in the warp functions.
__global__ void bins_match_any(const float* x, std::size_t n, unsigned int* counts) {
  const unsigned int lane = threadIdx.x % 32;
  const std::size_t stride = std::size_t{blockDim.x} * gridDim.x;
  for (std::size_t base = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x - lane; base < n; base += stride) {
    const std::size_t i = base + lane;
    const unsigned int valid = __ballot_sync(0xffffffffu, i < n);  // the lanes that hold an element
    if (i < n) {
      const int bin = bin_of(x[i]);
      const unsigned int peers = __match_any_sync(valid, bin);  // the lanes with my bin, me included
      if (lane == __ffs(peers) - 1) atomicAdd(&counts[bin], __popc(peers));
    }
  }
}
//! [match_any]

#undef FOR_EACH_ELEMENT

}  // namespace

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("atomic_contention");
  workbook::Stream stream(cudaStreamNonBlocking);
  const cudaStream_t s = stream.get();
  const int blocks = workbook::query_device().sm_count * (2048 / kBlock);  // one full wave

  // 1. Exactness.
  const std::size_t n_float = std::size_t{1} << 25;
  workbook::DeviceBuffer<float> float_count(1);
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(float_count.data(), 0, sizeof(float), s));
  count_in_float<<<blocks, kBlock, 0, s>>>(n_float, float_count.data());
  WORKBOOK_CHECK_LAUNCH();
  float got = 0;
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(&got, float_count.data(), sizeof got, cudaMemcpyDeviceToHost, s));
  stream.synchronize();
  std::printf("2^25 atomicAdd(&f, 1.0f) on a float: %.0f (2^24 = 16777216); on an integer it would be %zu\n\n",
              got, n_float);

  // 2. One counter, five ways.
  const std::size_t n = std::size_t{1} << 26;
  const float p = 0.5f;
  const std::uint64_t seed = 7;
  workbook::DeviceBuffer<float> x(n);
  workbook::fill_random_device(x.data(), n, seed, 0.0f, 1.0f, s);
  std::size_t expected = 0, warps_with_hits = 0;  // from the same values, made on the host
  std::vector<std::size_t> expected_bins(kKeys, 0);
  for (std::size_t w = 0; w < n / 32; ++w) {
    bool any = false;
    for (std::size_t i = 32 * w; i < 32 * w + 32; ++i) {
      const float v = workbook::random_uniform(seed, i, 0.0f, 1.0f);
      any |= v < p;
      expected += v < p;
      ++expected_bins[bin_of(v)];
    }
    warps_with_hits += any;
  }
  workbook::DeviceBuffer<unsigned long long> count(1);
  struct Way {
    const char* name;
    void (*kernel)(const float*, std::size_t, float, unsigned long long*);
    std::size_t global_atomics;
  };
  const Way ways[] = {
      {"`atomicAdd(count, x[i] < p)`, every element", count_per_element, n},
      {"`if (x[i] < p) atomicAdd(count, 1)`", count_per_hit, warps_with_hits},
      {"warp-aggregated by hand (`cg::reduce`)", count_warp_aggregated, n / 32},
      {"shared counter per block", count_shared, std::size_t(blocks)},
      {"register per thread, block reduction", count_in_registers, std::size_t(blocks)},
  };
  workbook::TimingOptions options;
  options.stream = s;
  std::printf("Counting the values below %.1f among 2^26 uniforms (%zu of them), %d blocks of %d:\n", p, expected,
              blocks, kBlock);
  std::printf("| counter | atomics on global memory | ms | G values/s | count |\n| --- | --- | --- | --- | --- |\n");
  int wrong = 0;
  for (const Way& way : ways) {
    const auto run = [&](cudaStream_t st) {
      WORKBOOK_CUDA_CHECK(cudaMemsetAsync(count.data(), 0, sizeof(unsigned long long), st));
      way.kernel<<<blocks, kBlock, 0, st>>>(x.data(), n, p, count.data());
    };
    const auto t = workbook::time_on_device(run, options);
    WORKBOOK_CHECK_LAUNCH();
    unsigned long long c = 0;
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(&c, count.data(), sizeof c, cudaMemcpyDeviceToHost, s));
    stream.synchronize();
    wrong += c != expected;
    std::printf("| %s | %zu | %.3f | %.1f | %llu%s |\n", way.name, way.global_atomics, t.median_ms,
                n / (t.median_ms * 1e6), c, c == expected ? "" : " WRONG");
  }

  // 3. Sixteen counters, the low ones hot.
  workbook::DeviceBuffer<unsigned int> bins(kKeys);
  std::printf("\n2^26 values into %d bins (bin 0: %zu values, bin %d: %zu):\n", kKeys, expected_bins[0], kKeys - 1,
              expected_bins[kKeys - 1]);
  std::printf("| counter | ms | G values/s | counts |\n| --- | --- | --- | --- |\n");
  const struct {
    const char* name;
    void (*kernel)(const float*, std::size_t, unsigned int*);
  } keyed[] = {{"`atomicAdd(&counts[bin], 1)`, every value", bins_global},
               {"warp-aggregated by bin (`__match_any_sync`)", bins_match_any}};
  for (const auto& way : keyed) {
    const auto run = [&](cudaStream_t st) {
      WORKBOOK_CUDA_CHECK(cudaMemsetAsync(bins.data(), 0, bins.bytes(), st));
      way.kernel<<<blocks, kBlock, 0, st>>>(x.data(), n, bins.data());
    };
    const auto t = workbook::time_on_device(run, options);
    WORKBOOK_CHECK_LAUNCH();
    std::vector<unsigned int> got_bins(kKeys);
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(got_bins.data(), bins.data(), bins.bytes(), cudaMemcpyDeviceToHost, s));
    stream.synchronize();
    int bad = 0;
    for (int b = 0; b < kKeys; ++b) bad += got_bins[b] != expected_bins[b];
    wrong += bad;
    std::printf("| %s | %.3f | %.1f | %s |\n", way.name, t.median_ms, n / (t.median_ms * 1e6),
                bad == 0 ? "exact" : "WRONG");
  }
  return wrong == 0 ? 0 : 1;
}
