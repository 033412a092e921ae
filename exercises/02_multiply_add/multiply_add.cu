// Lesson 02: y = x1*x2 + B. Read lessons/02_multiply_add/README.md first.
//
// Fill in the three TODOs; each is one task of the lesson. Grade your work with
//     ./grade 02
// and, once task 1 passes, sweep sizes and launch configurations for your report with
//     ./sweep 02
// Untouched, this file compiles and every task is graded "not implemented yet".
#include "multiply_add.hpp"

#include "workbook/workbook.hpp"

#include <stdexcept>
#include <string>
#include <vector>

__global__ void multiply_add(const float* x1, const float* x2, float b, float* y, int n) {
  // TODO(task 1): a grid-stride loop. Start at the global index
  // blockIdx.x * blockDim.x + threadIdx.x, step by the number of threads in the whole grid
  // (blockDim.x * gridDim.x) while i < n, and set y[i] = x1[i] * x2[i] + b at each step.
}

void launch_multiply_add(const float* x1, const float* x2, float b, float* y, int n, LaunchConfig config,
                         cudaStream_t stream) {
  // TODO(task 2): check the configuration, then launch.
  //   1. Throw std::invalid_argument, with a message that says what is wrong, when n < 0,
  //      when config.block is not between 1 and the device's maximum threads per block
  //      (cudaDeviceGetAttribute with cudaDevAttrMaxThreadsPerBlock), or when config.grid
  //      is negative.
  //   2. When n == 0 there is nothing to do: return.
  //   3. Choose the grid: config.grid, or when it is 0 ("auto") a grid of your choice
  //      between min(SM count, (n + block - 1) / block) and (n + block - 1) / block blocks
  //      (multiply_add.hpp says why).
  //   4. multiply_add<<<grid, config.block, 0, stream>>>(...), then WORKBOOK_CHECK_LAUNCH().
  (void)x1, (void)x2, (void)b, (void)y, (void)n, (void)config, (void)stream;
}

workbook::TimingStats time_multiply_add(const float* x1, const float* x2, float b, float* y, int n,
                                        LaunchConfig config, int warmup, int samples) {
  // TODO(task 3): time launch_multiply_add with CUDA events (write it yourself: do not call
  // workbook::time_on_device, which the grader compares you with).
  //   1. Throw std::invalid_argument when samples < 1 or warmup < 0.
  //   2. warmup untimed launches.
  //   3. For each sample: record a start event, launch, record a stop event
  //      (cudaEventCreate / cudaEventRecord, or workbook::Event's record()).
  //   4. Wait for the last stop event (cudaEventSynchronize), then read each sample with
  //      cudaEventElapsedTime (milliseconds) and destroy the events.
  //   5. Return workbook::summarize_ms(times): the median, minimum and maximum.
  (void)x1, (void)x2, (void)b, (void)y, (void)n, (void)config, (void)warmup, (void)samples;
  return {};
}
