// Broken on purpose (task 3): records both events after the launch, so each pair encloses
// nothing and the median is a few microseconds. The tracer's call order shows the first timed
// launch has no event before it (hint timer-events-misplaced).
#include "multiply_add.hpp"

#include "workbook/workbook.hpp"

#include <stdexcept>
#include <string>
#include <vector>

__global__ void multiply_add(const float* x1, const float* x2, float b, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = x1[i] * x2[i] + b;
  }
}

void launch_multiply_add(const float* x1, const float* x2, float b, float* y, int n, LaunchConfig config,
                         cudaStream_t stream) {
  int device = 0, max_block = 0;
  WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&max_block, cudaDevAttrMaxThreadsPerBlock, device));
  if (n < 0) throw std::invalid_argument("n must not be negative");
  if (config.block < 1 || config.block > max_block) {
    throw std::invalid_argument("block must be 1 to " + std::to_string(max_block) + ", got " +
                                std::to_string(config.block));
  }
  if (config.grid < 0) throw std::invalid_argument("grid must not be negative");
  if (n == 0) return;
  const int grid = config.grid > 0 ? config.grid : (n + config.block - 1) / config.block;
  multiply_add<<<grid, config.block, 0, stream>>>(x1, x2, b, y, n);
  WORKBOOK_CHECK_LAUNCH();
}

workbook::TimingStats time_multiply_add(const float* x1, const float* x2, float b, float* y, int n,
                                        LaunchConfig config, int warmup, int samples) {
  if (samples < 1 || warmup < 0) throw std::invalid_argument("need samples >= 1 and warmup >= 0");
  for (int i = 0; i < warmup; ++i) launch_multiply_add(x1, x2, b, y, n, config);
  std::vector<cudaEvent_t> start(samples), stop(samples);
  for (int i = 0; i < samples; ++i) {
    WORKBOOK_CUDA_CHECK(cudaEventCreate(&start[i]));
    WORKBOOK_CUDA_CHECK(cudaEventCreate(&stop[i]));
  }
  for (int i = 0; i < samples; ++i) {
    launch_multiply_add(x1, x2, b, y, n, config);
    WORKBOOK_CUDA_CHECK(cudaEventRecord(start[i]));
    WORKBOOK_CUDA_CHECK(cudaEventRecord(stop[i]));
  }
  WORKBOOK_CUDA_CHECK(cudaEventSynchronize(stop[samples - 1]));
  std::vector<double> times;
  for (int i = 0; i < samples; ++i) {
    float ms = 0;
    WORKBOOK_CUDA_CHECK(cudaEventElapsedTime(&ms, start[i], stop[i]));
    times.push_back(ms);
    WORKBOOK_CUDA_CHECK(cudaEventDestroy(start[i]));
    WORKBOOK_CUDA_CHECK(cudaEventDestroy(stop[i]));
  }
  return workbook::summarize_ms(times);
}
