// Broken variant (a slow design): vector_add numbers its elements block-minor,
// i = threadIdx.x * gridDim.x + blockIdx.x. Every element still gets exactly one thread, but the
// 32 threads of a warp touch 32 addresses gridDim.x floats apart: 32 sectors of 32 bytes for 128
// useful bytes per access. Resident blocks share those sectors through L2, so DRAM traffic stays
// near the minimum and L2 bandwidth holds it, about a quarter of the copy bandwidth on an H100
// (an estimate: grader/README.md, "Thresholds on the students' GPUs"). Right, and below the
// threshold of task 1.
#include "vector_add.hpp"

#include "workbook/workbook.hpp"

#include <cstdint>

namespace {

__device__ float4 add4(float4 x, float4 y) { return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); }

}  // namespace

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = threadIdx.x * gridDim.x + blockIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vector_add_grid_stride(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ c, int n) {
  const int stride = blockDim.x * gridDim.x;
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  const bool aligned = ((reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) |
                         reinterpret_cast<std::uintptr_t>(c)) % sizeof(float4)) == 0;
  int done = 0;  // elements [0, done) are handled by the vector loop
  if (aligned) {
    const int n4 = n / 4;
    const auto* a4 = reinterpret_cast<const float4*>(a);
    const auto* b4 = reinterpret_cast<const float4*>(b);
    auto* c4 = reinterpret_cast<float4*>(c);
    int i = first;
    for (; i + stride < n4; i += 2 * stride) {  // two independent 16-byte loads per array in flight
      const float4 a0 = a4[i], b0 = b4[i], a1 = a4[i + stride], b1 = b4[i + stride];
      c4[i] = add4(a0, b0);
      c4[i + stride] = add4(a1, b1);
    }
    if (i < n4) c4[i] = add4(a4[i], b4[i]);
    done = 4 * n4;
  }
  for (int i = done + first; i < n; i += stride) c[i] = a[i] + b[i];  // the tail, or everything if unaligned
}

void vector_add_host(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;  // a launch with 0 blocks would be an invalid configuration
  workbook::DeviceBuffer<float> d_a(n), d_b(n), d_c(n);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_a.data(), a, d_a.bytes(), cudaMemcpyHostToDevice));
  WORKBOOK_CUDA_CHECK(cudaMemcpy(d_b.data(), b, d_b.bytes(), cudaMemcpyHostToDevice));
  const int block = 256;
  const int grid = (n + block - 1) / block;
  vector_add<<<grid, block>>>(d_a.data(), d_b.data(), d_c.data(), n);
  WORKBOOK_CHECK_LAUNCH();
  WORKBOOK_CUDA_CHECK(cudaMemcpy(c, d_c.data(), d_c.bytes(), cudaMemcpyDeviceToHost));
}
