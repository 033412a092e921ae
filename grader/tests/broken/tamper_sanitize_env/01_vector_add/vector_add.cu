// Broken variant (tampering): no_bounds_check's kernel, which writes past c, and a static
// initialiser that sets WORKBOOK_SANITIZE, the switch ./grade --sanitize uses: were the grader to
// read it then, the output would lose its guard regions (compute-sanitizer checks bounds in their
// place, but none runs here), sizes would shrink and checks that need the tracer would be left
// out, so the overrun would go unseen. The grader reads the switch from the environment the
// program started with, so this gets exactly no_bounds_check's verdicts. Tasks 2 and 3 are left
// unimplemented, as there.
#include "vector_add.hpp"

#include <cstdlib>

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float*, const float*, float*, int) {}
void vector_add_host(const float*, const float*, float*, int) {}

namespace {

const bool sanitizer_claimed = (setenv("WORKBOOK_SANITIZE", "1", 1), true);

}  // namespace
