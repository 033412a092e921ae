/// \file
/// Lesson 06's interface: the functions you write (or mend) in
/// exercises/06_debugging_profiling/debugging_profiling.cu.
/// The grader calls exactly these, so keep their names and parameters as they are.
///
/// Every function here shares one contract: its arrays are device arrays that do not overlap;
/// everything runs on \p stream, nothing on the default stream; it returns without waiting for the
/// GPU (the caller waits when it needs the result); it copies nothing to or from the host and
/// leaves nothing allocated. Grids are stored row by row: element (x, y) of an nx-by-ny grid is
/// a[y * nx + x], so x is the fast index, as in a C (or NumPy) array a[y][x]. nx * ny < 2^31.
#pragma once

#include <cuda_runtime.h>

/// Task 1: one explicit step of the heat equation on an nx-by-ny grid (nx, ny >= 1).
/// At an interior point,
///   out = u + alpha * (u[x-1] + u[x+1] + u[y-1] + u[y+1] - 4 u)
/// (the four neighbours along x and along y); a point on the boundary (x == 0, x == nx - 1,
/// y == 0 or y == ny - 1) keeps its value: out = u. 0 < alpha <= 0.25. The exercise gives a
/// version with bugs in it; the grader checks the values and runs compute-sanitizer's memcheck,
/// initcheck and racecheck on it.
void heat_step(const float* u, float* out, int nx, int ny, float alpha, cudaStream_t stream);

/// Tasks 2, 3 and 4: out = in transposed. \p in has \p rows rows of \p cols floats
/// (in[r * cols + c]); \p out has cols rows of rows floats: out[c * rows + r] = in[r * cols + c].
/// rows, cols >= 1. Three versions of one function, each timed against the copy bandwidth:
/// task 2, a thread per element and nothing else;
void transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream);
/// task 3, through a tile in shared memory, so that both the reads and the writes are coalesced;
void transpose_tiled(const float* in, float* out, int rows, int cols, cudaStream_t stream);
/// task 4, the tile laid out so that its reads and writes have no bank conflicts.
void transpose_padded(const float* in, float* out, int rows, int cols, cudaStream_t stream);

/// Task 5: the electric field's strength from a potential phi on an nx-by-ny grid of spacing h
/// (nx, ny >= 1, h > 0). At an interior point, with central differences,
///   e = sqrt(ex * ex + ey * ey), ex = (phi[x+1] - phi[x-1]) / (2 h), ey = (phi[y+1] - phi[y-1]) / (2 h);
/// on the boundary e = 0. The exercise gives a version that is right and slow: profile it, find
/// the one cause, fix it.
void field_strength(const float* phi, float* e, int nx, int ny, float h, cudaStream_t stream);

/// Task 6 (challenge, optional): heat_step's contract exactly, as fast as you can make it. Timed
/// against the copy bandwidth on a large grid.
void heat_step_fast(const float* u, float* out, int nx, int ny, float alpha, cudaStream_t stream);
