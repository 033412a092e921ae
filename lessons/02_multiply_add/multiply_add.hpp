/// \file
/// Lesson 02's interface: the functions you write in exercises/02_multiply_add/multiply_add.cu.
/// The grader and the sweep (./sweep 02) call exactly these, so keep their names and
/// parameters as they are.
#pragma once

#include "workbook/timer.hpp"

#include <cuda_runtime.h>

/// Task 1: y[i] = x1[i] * x2[i] + b for 0 <= i < n, with a grid-stride loop: correct for
/// every valid launch configuration, grids far smaller than n included.
__global__ void multiply_add(const float* x1, const float* x2, float b, float* y, int n);

/// A launch configuration for multiply_add.
struct LaunchConfig {
  int block = 256;  ///< threads per block: 1 .. the device's maximum (1024)
  int grid = 0;     ///< blocks in the grid; 0 means "auto": the launcher chooses (see launch_multiply_add)
};

/// Task 2: launches multiply_add on \p stream with \p config (device pointers). An invalid
/// configuration (a block of 0 or 2048 threads, a negative grid, a negative n) throws an
/// exception (std::invalid_argument, or workbook::CudaError from the launch check) whose
/// message says what was wrong; it never returns as if the launch had happened. n == 0
/// launches nothing. An auto grid (config.grid == 0) has at most (n + block - 1) / block blocks,
/// so no block is without work, and at least the smaller of that and the SM count, so every SM
/// has work when n allows (a full wave, capped at what n needs, is one such grid). Returns
/// without waiting for the kernel to finish.
void launch_multiply_add(const float* x1, const float* x2, float b, float* y, int n, LaunchConfig config,
                         cudaStream_t stream = nullptr);

/// Task 3: times launch_multiply_add(x1, x2, b, y, n, config) with CUDA events: \p warmup
/// untimed launches, then \p samples timed ones, each between its own pair of events.
/// Returns the median, minimum and maximum in milliseconds and the number of samples.
/// Throws std::invalid_argument when samples < 1 or warmup < 0.
workbook::TimingStats time_multiply_add(const float* x1, const float* x2, float b, float* y, int n,
                                        LaunchConfig config, int warmup, int samples);
