// Task 5's kernel as the lesson gives it (exercises/06_debugging_profiling/debugging_profiling.cu),
// under a name of its own: the timed test runs it first inside the profiled range, so that the
// counters of the student's kernel are shown beside those of the kernel they started from.
// grader/driver/counters.py knows it by its name's ending, "_as_given", and diagnoses it never.
#include "field_strength_as_given.hpp"

#include "workbook/workbook.hpp"

namespace {

__global__ void field_strength_as_given(const float* phi, float* e, int nx, int ny, float h) {
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

void field_strength_given(const float* phi, float* e, int nx, int ny, float h, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid((ny + block.x - 1) / block.x, (nx + block.y - 1) / block.y);
  field_strength_as_given<<<grid, block, 0, stream>>>(phi, e, nx, ny, h);
  WORKBOOK_CHECK_LAUNCH();
}
