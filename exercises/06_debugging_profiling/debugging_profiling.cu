// Lesson 06: debugging and profiling. Read lessons/06_debugging_profiling/README.md first.
//
// Two of these tasks give you code that runs: task 1's heat step has bugs in it, task 5's field
// strength is right but slow. Tasks 2, 3, 4 and 6 (an optional challenge) are yours to write.
// Grade your work with
//     ./grade 06
// and run the sanitizers the grader runs with
//     ./grade --sanitize 06
// The grids are stored row by row: point (x, y) of an nx-by-ny grid is a[y * nx + x]
// (debugging_profiling.hpp).
#include "debugging_profiling.hpp"

#include "workbook/workbook.hpp"

namespace {

constexpr int kHeatTile = 16;  // a block of 16 x 16 threads, one grid point each

// One step of the heat equation through a tile of shared memory: each block loads its 16 x 16
// points and the ring of neighbours around them (the halo) once, then computes from the tile.
__global__ void heat_step_kernel(const float* u, float* out, int nx, int ny, float alpha) {
  // TODO(task 1): this kernel has three bugs. Its values are wrong at some points, and it touches
  // memory it should not: find each bug with the tools of the lesson (compute-sanitizer's memcheck,
  // initcheck and racecheck, printf, cuda-gdb) before you fix it. Keep the tile, or write the step
  // without one: any correct kernel passes, when memcheck, initcheck and racecheck are clean on
  // it. Lesson sections: "compute-sanitizer", "printf in a kernel", "cuda-gdb", "Task 1".
  __shared__ float tile[kHeatTile + 2][kHeatTile + 2];
  const int x = blockIdx.x * kHeatTile + threadIdx.x;
  const int y = blockIdx.y * kHeatTile + threadIdx.y;
  const int tx = threadIdx.x + 1, ty = threadIdx.y + 1;  // this thread's point in the tile
  const bool inside = x < nx && y < ny;
  if (inside) {
    tile[ty][tx] = u[y * nx + x];
    // The threads on the tile's left and right edges also load the neighbour beyond it.
    if (threadIdx.x == 0) tile[ty][0] = u[y * nx + x - 1];
    if (threadIdx.x == kHeatTile - 1 || x == nx - 1) tile[ty][tx + 1] = u[y * nx + x + 1];
  }
  if (!inside) return;
  const float c = tile[ty][tx];
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
    out[y * nx + x] = c;  // the boundary keeps its value
  } else {
    out[y * nx + x] = c + alpha * (tile[ty][tx - 1] + tile[ty][tx + 1] + tile[ty - 1][tx] + tile[ty + 1][tx] - 4.0f * c);
  }
}

// The field strength as the lesson gives it: right, and slow.
__global__ void field_strength_kernel(const float* phi, float* e, int nx, int ny, float h) {
  // TODO(task 5): this kernel gives the right values, far below the copy bandwidth. Profile the
  // grader's timed call (the lesson gives the command), read the counters, find the one cause and
  // fix it. Any correct kernel passes that reaches the threshold; the verdict shows the counters of
  // this kernel as given beside yours. Lesson sections: "Nsight Compute", "Task 5".
  const int y = blockIdx.x * blockDim.x + threadIdx.x;
  const int x = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const int i = y * nx + x;
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
    e[i] = 0.0f;
    return;
  }
  const float ex = (phi[i + 1] - phi[i - 1]) / (2.0f * h);
  const float ey = (phi[i + nx] - phi[i - nx]) / (2.0f * h);
  e[i] = sqrtf(ex * ex + ey * ey);
}

}  // namespace

void heat_step(const float* u, float* out, int nx, int ny, float alpha, cudaStream_t stream) {
  const dim3 block(kHeatTile, kHeatTile);
  const dim3 grid((nx + kHeatTile - 1) / kHeatTile, (ny + kHeatTile - 1) / kHeatTile);
  heat_step_kernel<<<grid, block, 0, stream>>>(u, out, nx, ny, alpha);
  WORKBOOK_CHECK_LAUNCH();
}

void transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  // TODO(task 2): out = in transposed (out[c * rows + r] = in[r * cols + c]), one thread per element,
  // nothing else: no shared memory yet. rows and cols run from 1 to 40000 (thin matrices too), mostly
  // not multiples of any block size. All work on the given stream; return without waiting. Timed at 8192 x 8192 against
  // the copy bandwidth; the verdict shows the counters of your kernel, which tasks 3 and 4 improve.
  // Lesson sections: "Nsight Compute", "Task 2".
  (void)in, (void)out, (void)rows, (void)cols, (void)stream;
}

void transpose_tiled(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  // TODO(task 3): the same transpose through a tile of shared memory, so that a warp's reads and its
  // writes each go to consecutive addresses. Any rows and cols; no races (./grade --sanitize 06 runs
  // racecheck). Timed against the copy bandwidth; the verdict shows your kernel's counters: global
  // sectors per request and shared-memory wavefronts per instruction. Lesson section: "Task 3".
  (void)in, (void)out, (void)rows, (void)cols, (void)stream;
}

void transpose_padded(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  // TODO(task 4): task 3's transpose with a tile laid out so that neither its writes nor its reads
  // have bank conflicts. Timed against the copy bandwidth, with a higher threshold than task 3's; the
  // figure alone cannot prove the layout, the verdict's counters do (shared wavefronts per load: 1).
  // Lesson sections: "Shared-memory banks", "Task 4".
  (void)in, (void)out, (void)rows, (void)cols, (void)stream;
}

void field_strength(const float* phi, float* e, int nx, int ny, float h, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid((ny + block.x - 1) / block.x, (nx + block.y - 1) / block.y);
  field_strength_kernel<<<grid, block, 0, stream>>>(phi, e, nx, ny, h);
  WORKBOOK_CHECK_LAUNCH();
}

void heat_step_fast(const float* u, float* out, int nx, int ny, float alpha, cudaStream_t stream) {
  // TODO(task 6): optional challenge. heat_step's contract exactly (debugging_profiling.hpp), as fast
  // as you can make it: timed on an 8192 x 8192 grid against the copy bandwidth. Every grid shape of
  // task 1 must give the right values. Lesson section: "Task 6 (challenge, optional)".
  (void)u, (void)out, (void)nx, (void)ny, (void)alpha, (void)stream;
}
