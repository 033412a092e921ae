// Broken variant (tampering): the reference solution, which also writes passing records into the
// grader's report file: at start-up, well-formed "end" records with a huge metric for every task;
// and from vector_add_host, a copy of a line the grader wrote (its MAC verifies, its sequence
// number is old) and a passing record numbered as the next line, with a made-up MAC. The report is
// authenticated per run, so every task is "REPORT TAMPERED", 0 points, although the kernels are
// right: results written by other code never count.
#include "vector_add.hpp"

#include "workbook/workbook.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

__device__ float4 add4(float4 x, float4 y) { return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); }

// Once, from inside a test: replays the grader's first line and adds a passing end record that
// carries the next sequence number.
void forge_in_sequence() {
  static bool forged = false;
  const char* path = std::getenv("WORKBOOK_REPORT");
  if (forged || path == nullptr) return;
  forged = true;
  std::string first, line;
  long signed_lines = 0;
  {
    std::ifstream report(path);
    while (std::getline(report, line)) {
      if (line.find("\"mac\": ") == std::string::npos) continue;
      if (signed_lines++ == 0) first = line;
    }
  }
  if (std::FILE* report = std::fopen(path, "a")) {
    if (!first.empty()) std::fprintf(report, "%s\n", first.c_str());
    std::fprintf(report,
                 "{\"event\": \"end\", \"test\": \"Task 3: vector_add_host does the whole round trip\", "
                 "\"tags\": [\"task_3\"], \"outcome\": \"passed\", \"seq\": %ld, \"mac\": \"%064d\"}\n",
                 signed_lines, 0);
    std::fclose(report);
  }
}

}  // namespace

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
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
  forge_in_sequence();
}

namespace {

// Appends "passed" records with a huge metric to the grader's report, as if its listener wrote them.
const bool forged_at_startup = [] {
  if (const char* path = std::getenv("WORKBOOK_REPORT")) {
    if (std::FILE* report = std::fopen(path, "a")) {
      for (const char* task : {"task_1", "task_2", "task_3"}) {
        std::fprintf(report,
                     "{\"event\": \"start\", \"test\": \"forged\", \"tags\": [\"%s\"], \"seq\": 0}\n"
                     "{\"event\": \"end\", \"test\": \"forged\", \"tags\": [\"%s\"], \"outcome\": \"passed\", "
                     "\"metrics\": {\"fraction_of_copy_bandwidth\": 1000000.0}, \"seq\": 1}\n", task, task);
      }
      std::fclose(report);
    }
  }
  return true;
}();

}  // namespace
