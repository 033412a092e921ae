// Worked example for lesson 06: three bugs, one per kernel, each of a kind that one
// compute-sanitizer tool finds and the other tools do not see:
//   jacobi_sweep        never writes the two ends of its output,      initcheck
//                       which the next sweep reads
//   reverse_each_block  reads shared memory before the threads of     racecheck
//                       other warps have written it (no barrier)
//   smooth3             reads one float past the end of its input     memcheck
// Run plainly, it exits 0 and prints values that look plausible: that is the point. It is meant
// to be run under each tool (lesson 06's README, "compute-sanitizer"), best from a build with
// -lineinfo so that the reports name the source lines. The bugs are 1-D, and none is task 1's:
// finding those is the task. Lesson 06's README quotes it between the //! [name] markers; ctest
// runs it (exit 0, or 77 without a GPU).
#include "workbook/workbook.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

constexpr int kBlock = 256;

//! [off_by_one]
// Three-point smoothing: out[i] is the mean of in[i] and the neighbours it has.
__global__ void smooth3(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float sum = in[i];
  int count = 1;
  if (i > 0) { sum += in[i - 1]; ++count; }
  if (i < n) { sum += in[i + 1]; ++count; }  // the bug: i < n - 1. Thread n-1 reads in[n]
  out[i] = sum / count;
}
//! [off_by_one]

//! [unwritten_ends]
// One Jacobi sweep for u'' = 0 with fixed ends: out[i] = (in[i-1] + in[i+1]) / 2 inside. The bug:
// the ends are not copied to `out` (missing: else if (i == 0 || i == n - 1) out[i] = in[i];),
// so when in and out swap, the next sweep reads two floats that nothing ever wrote.
__global__ void jacobi_sweep(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) out[i] = 0.5f * (in[i - 1] + in[i + 1]);
}
//! [unwritten_ends]

//! [missing_barrier]
// Reverses each block's 256 elements through shared memory.
__global__ void reverse_each_block(const float* in, float* out) {
  __shared__ float tile[kBlock];
  const int t = threadIdx.x, first = blockIdx.x * kBlock;
  tile[t] = in[first + t];
  // The bug: no __syncthreads() here. Thread t reads the element that thread 255 - t wrote,
  // in another warp, which may not have written it yet.
  out[first + t] = tile[kBlock - 1 - t];
}
//! [missing_barrier]

int blocks_for(int n) { return (n + kBlock - 1) / kBlock; }

}  // namespace

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("memory_bugs");
  workbook::Stream stream(cudaStreamNonBlocking);
  const cudaStream_t s = stream.get();

  // Four Jacobi sweeps between u and v on n = 1000 points, u = 1 at the left end and 0 elsewhere.
  // v is never initialised (cudaMalloc, like Numba's cuda.device_array or cupy.empty).
  const int n = 1000;
  std::vector<float> out(n);
  workbook::DeviceBuffer<float> u(n), v(n);
  std::vector<float> initial(n, 0.0f);
  initial[0] = 1.0f;
  u.copy_from_host(initial.data());
  for (int sweep = 0; sweep < 4; ++sweep) {
    const bool even = sweep % 2 == 0;
    jacobi_sweep<<<blocks_for(n), kBlock, 0, s>>>(even ? u.data() : v.data(), even ? v.data() : u.data(), n);
    WORKBOOK_CHECK_LAUNCH();
  }
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(out.data(), u.data(), n * sizeof(float), cudaMemcpyDeviceToHost, s));
  stream.synchronize();
  std::vector<float> expected = initial, next = initial;  // the same four sweeps, ends kept
  for (int sweep = 0; sweep < 4; ++sweep) {
    for (int i = 1; i < n - 1; ++i) next[i] = 0.5f * (expected[i - 1] + expected[i + 1]);
    expected = next;
  }
  std::printf("jacobi_sweep: u[1] = %g after 4 sweeps (with the ends kept: %g)\n", out[1], expected[1]);

  // reverse_each_block on 64 blocks.
  const int m = 64 * kBlock;
  std::vector<float> values(m);
  for (int i = 0; i < m; ++i) values[i] = float(i);
  workbook::DeviceBuffer<float> forward(m), reversed(m);
  forward.copy_from_host(values.data());
  reverse_each_block<<<m / kBlock, kBlock, 0, s>>>(forward.data(), reversed.data());
  WORKBOOK_CHECK_LAUNCH();
  std::vector<float> got(m);
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(got.data(), reversed.data(), m * sizeof(float), cudaMemcpyDeviceToHost, s));
  stream.synchronize();
  int wrong = 0;
  for (int i = 0; i < m; ++i) {
    const int first = i / kBlock * kBlock;
    wrong += got[i] != values[first + kBlock - 1 - (i - first)];
  }
  std::printf("reverse_each_block: %d of %d elements wrong in this run\n", wrong, m);

  // smooth3 last: under memcheck the kernel stops at its first invalid access, and every CUDA
  // call after it fails. Its input holds n = 1000 floats (4000 bytes): in[n] lies outside it.
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = float(i % 7);
  workbook::DeviceBuffer<float> in(n), smoothed(n);
  in.copy_from_host(host.data());
  smooth3<<<blocks_for(n), kBlock, 0, s>>>(in.data(), smoothed.data(), n);
  WORKBOOK_CHECK_LAUNCH();
  try {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(out.data(), smoothed.data(), n * sizeof(float), cudaMemcpyDeviceToHost, s));
    stream.synchronize();
  } catch (const workbook::CudaError& e) {
    std::printf("smooth3: the copy after it failed: %s\n", e.what());
    return 1;
  }
  std::printf("smooth3: out[n-1] = %g (the mean of its two elements: %g)\n", out[n - 1],
              0.5f * (host[n - 2] + host[n - 1]));
  return 0;  // whatever the values: the bugs are there for compute-sanitizer to find
}
