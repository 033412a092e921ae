// Worked example for lesson 06: looking inside a running kernel, with printf and with cuda-gdb.
// Each thread advances one damped oscillator, x'' = -omega^2 x - gamma x', with its own omega;
// one chosen thread prints its state. Run as
//   example_06_debugging_profiling_printf_probe          one thread prints
//   example_06_debugging_profiling_printf_probe every    every thread prints: count the lines
// and, built with -G, under cuda-gdb (lesson 06's README, "cuda-gdb"). It shows what printf costs
// and where its output goes, not a bug to find. Lesson 06's README quotes it between the
// //! [name] markers; ctest runs it (exit 0, or 77 without a GPU).
#include "workbook/workbook.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kBlock = 64;

__global__ void oscillators(float* x_out, float* v_out, int n, int steps, float dt, float gamma,
                            bool every_thread_prints) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float omega = 1.0f + 0.001f * i;
  float x = 1.0f, v = 0.0f;
  for (int step = 0; step < steps; ++step) {  // semi-implicit Euler (README: cuda-gdb stops at line 28)
    v += dt * (-omega * omega * x - gamma * v);
    x += dt * v;
  }
  //! [probe]
  if (every_thread_prints || (blockIdx.x == 1 && threadIdx.x == 5)) {  // one thread, not thousands
    printf("block %d, thread %d: i = %d, omega = %.4f, x = %.6f, v = %.6f\n", blockIdx.x, threadIdx.x, i,
           omega, x, v);
  }
  //! [probe]
  x_out[i] = x;
  v_out[i] = v;
}

}  // namespace

int main(int argc, char** argv) {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("printf_probe");
  const bool every = argc > 1 && std::strcmp(argv[1], "every") == 0;
  const int n = every ? 65536 : 4 * kBlock;
  const int steps = 1000;
  const float dt = 0.01f, gamma = 0.1f;

  std::size_t fifo_bytes = 0;
  WORKBOOK_CUDA_CHECK(cudaDeviceGetLimit(&fifo_bytes, cudaLimitPrintfFifoSize));
  // A larger buffer must be asked for before the first launch of a kernel that prints:
  //   cudaDeviceSetLimit(cudaLimitPrintfFifoSize, bytes);
  std::printf("host: the device's printf buffer holds %zu bytes\n", fifo_bytes);

  workbook::Stream stream(cudaStreamNonBlocking);
  workbook::DeviceBuffer<float> x(n), v(n);
  oscillators<<<(n + kBlock - 1) / kBlock, kBlock, 0, stream.get()>>>(x.data(), v.data(), n, steps, dt, gamma,
                                                                       every);
  WORKBOOK_CHECK_LAUNCH();
  std::printf("host: kernel queued\n");  // printed first: the kernel's lines wait in the buffer
  stream.synchronize();                   // a synchronisation: now the kernel's lines come out
  std::printf("host: stream synchronised\n");

  // The same oscillator on the host, for the thread that printed (i = 1 * kBlock + 5).
  const int i = kBlock + 5;
  const float omega = 1.0f + 0.001f * i;
  float hx = 1.0f, hv = 0.0f;
  for (int step = 0; step < steps; ++step) {
    hv += dt * (-omega * omega * hx - gamma * hv);
    hx += dt * hv;
  }
  float gx = 0.0f;
  WORKBOOK_CUDA_CHECK(cudaMemcpy(&gx, x.data() + i, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("host: i = %d, x = %.6f on the GPU, %.6f on the host\n", i, gx, hx);
  return std::fabs(gx - hx) <= 1e-4f * (1.0f + std::fabs(hx)) ? 0 : 1;
}
