// Worked example for lesson 03: which index is threadIdx.x decides how fast a 2D kernel runs.
// Lesson 03's README quotes it between the //! [name] markers; ctest runs it. It scales the
// rows of a matrix (B[r][c] = s[r] * A[r][c]), not a matrix product, so the tasks stay yours.
#include "workbook/workbook.hpp"

#include <cstdio>

//! [columns_in_x]
// x runs along a row: the 32 threads of a warp (32 wide blocks) touch 32 neighbouring floats,
// 128 bytes in a row, which the memory system serves as four 32-byte sectors, all used.
__global__ void scale_rows(const float* A, const float* s, float* B, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) B[r * cols + c] = s[r] * A[r * cols + c];
}
//! [columns_in_x]

//! [rows_in_x]
// x runs down a column (as i, j = cuda.grid(2) with i the row does in Numba): the 32 threads
// of a warp touch 32 floats `cols` apart: 32 separate 32-byte sectors for 32 useful floats.
__global__ void scale_rows_strided(const float* A, const float* s, float* B, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  const int c = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) B[r * cols + c] = s[r] * A[r * cols + c];
}
//! [rows_in_x]

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("coalescing");
  const int rows = 8192, cols = 8192;  // 256 MiB per matrix
  workbook::DeviceBuffer<float> A(std::size_t(rows) * cols), B(A.size()), s(rows);
  workbook::fill_random_device(A.data(), A.size(), 1);
  workbook::fill_random_device(s.data(), s.size(), 2);

  //! [launch_2d]
  const dim3 block(32, 8);  // 256 threads: 32 along x, 8 along y
  const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
  scale_rows<<<grid, block>>>(A.data(), s.data(), B.data(), rows, cols);
  //! [launch_2d]
  WORKBOOK_CHECK_LAUNCH();
  const dim3 grid_t((rows + block.x - 1) / block.x, (cols + block.y - 1) / block.y);

  workbook::TimingOptions options;
  options.flush_l2 = true;
  const double bytes = 2.0 * A.bytes();
  const auto good = workbook::time_on_device([&](cudaStream_t st) {
    scale_rows<<<grid, block, 0, st>>>(A.data(), s.data(), B.data(), rows, cols);
  }, options);
  const auto bad = workbook::time_on_device([&](cudaStream_t st) {
    scale_rows_strided<<<grid_t, block, 0, st>>>(A.data(), s.data(), B.data(), rows, cols);
  }, options);
  WORKBOOK_CHECK_LAUNCH();
  const double copy = workbook::copy_bandwidth_gbps_for_run();
  std::printf("8192 x 8192 row scaling, blocks of 32 x 8 (copy bandwidth %.0f GB/s):\n", copy);
  std::printf("  x along the columns: %7.3f ms, %5.0f GB/s (%3.0f%%)\n", good.median_ms,
              workbook::gigabytes_per_second(bytes, good.median_ms),
              100 * workbook::gigabytes_per_second(bytes, good.median_ms) / copy);
  std::printf("  x along the rows:    %7.3f ms, %5.0f GB/s (%3.0f%%), %.1fx slower\n", bad.median_ms,
              workbook::gigabytes_per_second(bytes, bad.median_ms),
              100 * workbook::gigabytes_per_second(bytes, bad.median_ms) / copy, bad.median_ms / good.median_ms);
  return 0;
}
