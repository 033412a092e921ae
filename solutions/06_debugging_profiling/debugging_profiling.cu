// Lesson 06 reference solution: the heat step mended, three transposes, the field strength with
// its threads the right way round, and a fast heat step.
#include "debugging_profiling.hpp"

#include "workbook/workbook.hpp"

namespace {

// ---- Task 1: the heat step, mended ---------------------------------------------------------

constexpr int kHeatTile = 16;  // a block of 16 x 16 threads, one grid point each

// The exercise's tiled kernel with its three bugs fixed: every halo load guarded by the grid's
// edge, the halo along y loaded as well as along x, and a barrier between filling the tile and
// reading it.
__global__ void heat_step_kernel(const float* u, float* out, int nx, int ny, float alpha) {
  __shared__ float tile[kHeatTile + 2][kHeatTile + 2];
  const int x = blockIdx.x * kHeatTile + threadIdx.x;
  const int y = blockIdx.y * kHeatTile + threadIdx.y;
  const int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
  const bool inside = x < nx && y < ny;
  if (inside) {
    tile[ty][tx] = u[y * nx + x];
    if (threadIdx.x == 0 && x > 0) tile[ty][0] = u[y * nx + x - 1];
    if (threadIdx.x == kHeatTile - 1 && x + 1 < nx) tile[ty][tx + 1] = u[y * nx + x + 1];
    if (threadIdx.y == 0 && y > 0) tile[0][tx] = u[(y - 1) * nx + x];
    if (threadIdx.y == kHeatTile - 1 && y + 1 < ny) tile[ty + 1][tx] = u[(y + 1) * nx + x];
  }
  __syncthreads();
  if (!inside) return;
  const float c = tile[ty][tx];
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
    out[y * nx + x] = c;
  } else {
    out[y * nx + x] = c + alpha * (tile[ty][tx - 1] + tile[ty][tx + 1] + tile[ty - 1][tx] + tile[ty + 1][tx] - 4.0f * c);
  }
}

dim3 grid_of(dim3 block, int nx, int ny, int per_thread_y = 1) {
  return dim3(unsigned((nx + block.x - 1) / block.x), unsigned((ny + block.y * per_thread_y - 1) / (block.y * per_thread_y)));
}

// ---- Tasks 2-4: transposes -----------------------------------------------------------------

constexpr int kTile = 32;  // a 32 x 32 tile, moved by a block of 32 x 8 threads, four rows each
constexpr int kRows = 8;

// A thread per element: reads along a row of in (coalesced), writes down a column of out (a warp's
// 32 stores land in 32 rows of out, 32 sectors per request).
__global__ void transpose_naive_kernel(const float* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[std::size_t(c) * rows + r] = in[std::size_t(r) * cols + c];
}

// Through a tile of shared memory: a warp reads a row segment of in and writes a row segment of
// out. Pad = 1 gives each row of the tile 33 words, so a column of the tile lies in 32 banks.
template <int Pad>
__global__ void transpose_tile_kernel(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[kTile][kTile + Pad];
  const int c0 = blockIdx.x * kTile, r0 = blockIdx.y * kTile;
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    const int r = r0 + j, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[j][threadIdx.x] = in[std::size_t(r) * cols + c];
  }
  __syncthreads();
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    const int c = c0 + j, r = r0 + threadIdx.x;  // out's row c, column r
    if (c < cols && r < rows) out[std::size_t(c) * rows + r] = tile[threadIdx.x][j];
  }
}

// ---- Task 5: the field strength -------------------------------------------------------------

// threadIdx.x along x: a warp reads 32 consecutive floats of one row.
__global__ void field_strength_kernel(const float* phi, float* e, int nx, int ny, float h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const std::size_t i = std::size_t(y) * nx + x;
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
    e[i] = 0.0f;
    return;
  }
  const float ex = (phi[i + 1] - phi[i - 1]) / (2.0f * h);
  const float ey = (phi[i + nx] - phi[i - nx]) / (2.0f * h);
  e[i] = sqrtf(ex * ex + ey * ey);
}

// ---- Task 6: a fast heat step --------------------------------------------------------------

constexpr int kFastWidth = 128;  // threads per block, along x
constexpr int kFastRows = 16;    // grid rows per thread

// Each thread walks down kFastRows rows of one column, keeping the points above, at and below in
// registers, so each row is read from memory once; a warp's loads are 32 consecutive floats, and
// the left and right neighbours, one float apart, come from the L1 cache.
__global__ void heat_step_fast_kernel(const float* __restrict__ u, float* __restrict__ out, int nx, int ny,
                                      float alpha) {
  const int x = blockIdx.x * kFastWidth + threadIdx.x;
  if (x >= nx) return;
  const int y0 = blockIdx.y * kFastRows;
  const int y1 = min(y0 + kFastRows, ny);
  const bool edge_x = x == 0 || x == nx - 1;
  float up = y0 > 0 ? __ldg(u + std::size_t(y0 - 1) * nx + x) : 0.0f;
  float here = __ldg(u + std::size_t(y0) * nx + x);
  for (int y = y0; y < y1; ++y) {
    const std::size_t i = std::size_t(y) * nx + x;
    const float down = y + 1 < ny ? __ldg(u + i + nx) : 0.0f;
    if (edge_x || y == 0 || y == ny - 1) {
      out[i] = here;
    } else {
      out[i] = here + alpha * (__ldg(u + i - 1) + __ldg(u + i + 1) + up + down - 4.0f * here);
    }
    up = here;
    here = down;
  }
}

}  // namespace

void heat_step(const float* u, float* out, int nx, int ny, float alpha, cudaStream_t stream) {
  const dim3 block(kHeatTile, kHeatTile);
  heat_step_kernel<<<grid_of(block, nx, ny), block, 0, stream>>>(u, out, nx, ny, alpha);
  WORKBOOK_CHECK_LAUNCH();
}

void transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  const dim3 block(32, 8);
  transpose_naive_kernel<<<grid_of(block, cols, rows), block, 0, stream>>>(in, out, rows, cols);
  WORKBOOK_CHECK_LAUNCH();
}

void transpose_tiled(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  const dim3 block(kTile, kRows);
  transpose_tile_kernel<0><<<grid_of(dim3(kTile, kTile), cols, rows), block, 0, stream>>>(in, out, rows, cols);
  WORKBOOK_CHECK_LAUNCH();
}

void transpose_padded(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  const dim3 block(kTile, kRows);
  transpose_tile_kernel<1><<<grid_of(dim3(kTile, kTile), cols, rows), block, 0, stream>>>(in, out, rows, cols);
  WORKBOOK_CHECK_LAUNCH();
}

void field_strength(const float* phi, float* e, int nx, int ny, float h, cudaStream_t stream) {
  const dim3 block(32, 8);
  field_strength_kernel<<<grid_of(block, nx, ny), block, 0, stream>>>(phi, e, nx, ny, h);
  WORKBOOK_CHECK_LAUNCH();
}

void heat_step_fast(const float* u, float* out, int nx, int ny, float alpha, cudaStream_t stream) {
  const dim3 block(kFastWidth, 1);
  heat_step_fast_kernel<<<grid_of(block, nx, ny, kFastRows), block, 0, stream>>>(u, out, nx, ny, alpha);
  WORKBOOK_CHECK_LAUNCH();
}
