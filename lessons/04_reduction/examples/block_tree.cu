// Worked example for lesson 04: one result per block with a tree, in the forms the lesson
// compares: interleaved addressing (two ways), sequential addressing, warp shuffles, and
// cooperative groups. Each block finds the MAXIMUM of its elements, not the sum: the sum is
// task 1. Every array here is a whole number of blocks, so no thread lies past the end;
// task 1's arrays are not, and handling that is yours too. Lesson 04's README quotes it
// between the //! [name] markers; ctest runs it.
#include "workbook/workbook.hpp"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace cg = cooperative_groups;

// Interleaved addressing: at each level, thread t combines s[t] with its neighbour stride
// places on, if t is a multiple of 2 * stride. The threads still working are scattered over
// every warp: the warps diverge and stay busy for one useful thread in 2, 4, 8, ...
__global__ void block_max_interleaved(const float* in, float* block_max) {
  extern __shared__ float s[];  // blockDim.x floats: the launch's third parameter sizes it
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();  // every thread's value is in s before anyone reads a neighbour's
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (t % (2 * stride) == 0) s[t] = fmaxf(s[t], s[t + stride]);
    __syncthreads();  // this level is written before the next level reads it
  }
  if (t == 0) block_max[blockIdx.x] = s[0];
}

// The same tree with the working threads packed at the front (no divergence until fewer
// than 32 work), but thread t now touches s[2 * stride * t] and s[2 * stride * t + stride]:
// bank conflicts (32 banks, word w in bank w % 32). At stride 1 a warp's 32 active lanes
// touch 64 words, two per bank: 2-way. Each level doubles it, and at stride 16 every active
// lane of a warp hits the same bank: 32-way when all 32 lanes work (blocks of 1024 threads),
// fewer ways when fewer lanes do (8 with blocks of 256).
__global__ void block_max_interleaved_packed(const float* in, float* block_max) {
  extern __shared__ float s[];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    const unsigned i = 2 * stride * t;
    if (i < blockDim.x) s[i] = fmaxf(s[i], s[i + stride]);
    __syncthreads();
  }
  if (t == 0) block_max[blockIdx.x] = s[0];
}

//! [sequential]
// Sequential addressing: the lower half takes the upper half, until one value is left.
__global__ void block_max_sequential(const float* in, float* block_max) {
  extern __shared__ float s[];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) s[t] = fmaxf(s[t], s[t + half]);
    __syncthreads();
  }
  if (t == 0) block_max[blockIdx.x] = s[0];
}
//! [sequential]

// Sequential addressing without the barrier inside the loop: warps run ahead of each other
// and read s[t + half] before (or after) another warp updated it. Wrong, and not always.
__global__ void block_max_missing_barrier(const float* in, float* block_max) {
  extern __shared__ float s[];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) s[t] = fmaxf(s[t], s[t + half]);
  }
  if (t == 0) block_max[blockIdx.x] = s[0];
}

// WRONG since Volta (2017), shown so that you recognise it: the "warp-synchronous" tail of
// older tutorials. It assumes the 32 threads of a warp run in lockstep, so no barrier is
// needed between levels. With independent thread scheduling nothing guarantees that; the
// compiler and the hardware may interleave these reads and writes differently.
__device__ void warp_tail_volatile_wrong(volatile float* s, unsigned t) {
  s[t] = fmaxf(s[t], s[t + 32]);
  s[t] = fmaxf(s[t], s[t + 16]);
  s[t] = fmaxf(s[t], s[t + 8]);
  s[t] = fmaxf(s[t], s[t + 4]);
  s[t] = fmaxf(s[t], s[t + 2]);
  s[t] = fmaxf(s[t], s[t + 1]);
}

// The tree down to 64 values, then the tail above (blocks of at least 64 threads).
__global__ void block_max_volatile_wrong(const float* in, float* block_max) {
  extern __shared__ float s[];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 32; half /= 2) {
    if (t < half) s[t] = fmaxf(s[t], s[t + half]);
    __syncthreads();
  }
  if (t < 32) warp_tail_volatile_wrong(s, t);
  if (t == 0) block_max[blockIdx.x] = s[0];
}

//! [warp_max]
// The maximum over one warp, in registers: after 5 steps lane 0 holds it (the other lanes hold
// partial results). The mask says all 32 lanes take part: they must all reach this call.
__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}
//! [warp_max]

//! [warp_first]
// Warps first, then the first warp reduces the (at most 32) warp results.
__global__ void block_max_shuffle(const float* in, float* block_max) {
  extern __shared__ float warp_results[];  // one float per warp would be enough
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  const float v = warp_max(in[blockIdx.x * blockDim.x + t]);
  if (lane == 0) warp_results[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const float w = warp_max(lane < blockDim.x / 32 ? warp_results[lane] : -INFINITY);
    if (lane == 0) block_max[blockIdx.x] = w;
  }
}
//! [warp_first]

// The same with cooperative groups: cg::reduce does the shuffles for a tile of 32 threads and
// hands the result to every thread of the tile. cg::greater<float> picks the larger of two
// values (a max); cg::plus<float> would add them.
__global__ void block_max_cg(const float* in, float* block_max) {
  extern __shared__ float warp_results[];
  //! [cg_tile]
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);  // this thread's warp, as an object
  const float v = cg::reduce(warp, in[blockIdx.x * blockDim.x + threadIdx.x], cg::greater<float>());
  //! [cg_tile]
  if (warp.thread_rank() == 0) warp_results[warp.meta_group_rank()] = v;
  block.sync();  // __syncthreads()
  if (warp.meta_group_rank() == 0) {
    const unsigned lane = warp.thread_rank();
    const float w = cg::reduce(warp, lane < warp.meta_group_size() ? warp_results[lane] : -INFINITY,
                               cg::greater<float>());
    if (lane == 0) block_max[blockIdx.x] = w;
  }
}

namespace {

using BlockKernel = void (*)(const float*, float*);

struct Variant {
  const char* name;
  BlockKernel kernel;
  int min_block;  // the smallest block it supports
  bool must_be_right;
};

void launch(BlockKernel kernel, const float* in, float* out, std::size_t n, int block, cudaStream_t stream = nullptr) {
  const unsigned grid = unsigned(n / block);
  //! [launch]
  // Third launch parameter: bytes of dynamic shared memory per block, what extern __shared__ gets.
  kernel<<<grid, block, block * sizeof(float), stream>>>(in, out);
  //! [launch]
  WORKBOOK_CHECK_LAUNCH();
}

// How many of the block maxima differ from the host's (a max is exact: no rounding).
std::size_t wrong_blocks(const Variant& v, const workbook::DeviceBuffer<float>& in, const std::vector<float>& host,
                         std::size_t n, int block) {
  workbook::DeviceBuffer<float> out(n / block);
  launch(v.kernel, in.data(), out.data(), n, block);
  std::vector<float> got(out.size());
  out.copy_to_host(got.data());
  std::size_t wrong = 0;
  for (std::size_t b = 0; b < got.size(); ++b) {
    const float want = *std::max_element(host.begin() + b * block, host.begin() + (b + 1) * block);
    wrong += got[b] != want;
  }
  return wrong;
}

}  // namespace

int main(int, char** argv) {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  const std::vector<Variant> variants = {
      {"interleaved, t % (2*stride)", block_max_interleaved, 32, true},
      {"interleaved, packed (conflicts)", block_max_interleaved_packed, 32, true},
      {"sequential addressing", block_max_sequential, 32, true},
      {"warps first, __shfl_down_sync", block_max_shuffle, 32, true},
      {"warps first, cg::reduce", block_max_cg, 32, true},
      {"no barrier in the loop (race)", block_max_missing_barrier, 32, false},
      {"volatile warp tail (wrong)", block_max_volatile_wrong, 64, false},
  };

  // Correctness on 2^22 floats (uniform in [-1, 1]) with several block sizes.
  const std::size_t n_check = std::size_t(1) << 22;
  workbook::DeviceBuffer<float> check(n_check);
  workbook::fill_random_device(check.data(), n_check, 42);
  std::vector<float> host(n_check);
  check.copy_to_host(host.data());
  bool ok = true;
  std::printf("block maxima of 2^22 floats, wrong blocks for blocks of 32 / 256 / 1024 threads:\n");
  for (const Variant& v : variants) {
    std::printf("  %-34s", v.name);
    for (const int block : {32, 256, 1024}) {
      if (block < v.min_block) {
        std::printf("  %8s", "-");
        continue;
      }
      const std::size_t wrong = wrong_blocks(v, check, host, n_check, block);
      std::printf("  %8zu", wrong);
      if (v.must_be_right && wrong > 0) ok = false;
    }
    std::printf("\n");
  }

  // Speed on 2^26 floats with blocks of 256: GB/s read, against the measured copy bandwidth.
  const std::size_t n = std::size_t(1) << 26;
  const int block = 256;
  workbook::DeviceBuffer<float> in(n), out(n / block);
  workbook::fill_random_device(in.data(), n, 7);
  const double copy = workbook::copy_bandwidth_gbps_for_run();
  std::printf("\n2^26 floats, blocks of %d, one element per thread (copy bandwidth %.0f GB/s):\n", block, copy);
  for (const Variant& v : variants) {
    if (!v.must_be_right) continue;
    const auto t = workbook::time_on_device([&](cudaStream_t s) { launch(v.kernel, in.data(), out.data(), n, block, s); });
    const double gbps = workbook::gigabytes_per_second(double(n) * sizeof(float), t.median_ms);
    std::printf("  %-34s %8.1f us  %6.0f GB/s (%3.0f%%)\n", v.name, 1e3 * t.median_ms, gbps, 100 * gbps / copy);
  }
  if (!ok) std::printf("\nFAILED: a kernel that must be right gave a wrong block maximum\n");
  return ok ? 0 : 1;
}
