// The tracer on a real GPU: every kind of record it promises, with the right numbers, and
// cuBLAS's kernels told apart from the program's own. Skipped without a GPU.
#include "grader.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cublas_v2.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <vector>

namespace {

__global__ void probe_kernel(float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) x[i] = 2.0f * x[i] + 1.0f;
}

// Keeps the GPU busy for about \p ns nanoseconds.
__global__ void spin_kernel(long long ns) {
  long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

TEST_CASE("the tracer sees kernels with their configuration, stream and origin", "[tracer][gpu]") {
  grader::require_gpu();
  workbook::DeviceBuffer<float> x(10000);
  workbook::Stream stream(cudaStreamNonBlocking);
  const auto trace = grader::trace([&] {
    probe_kernel<<<3, 64, 0, stream.get()>>>(x.data(), 10000);
    probe_kernel<<<dim3(2, 1, 1), dim3(32, 1, 1)>>>(x.data(), 10000);
  });
  REQUIRE(trace);
  std::cout << "kernels:\n" << trace->describe() << "\n";
  const auto kernels = trace->kernels_named("probe_kernel");
  REQUIRE(kernels.size() == 2);
  const auto on_stream = kernels[0].grid.x == 3 ? kernels[0] : kernels[1];
  const auto on_default = kernels[0].grid.x == 3 ? kernels[1] : kernels[0];
  CHECK(on_stream.block.x == 64);
  CHECK(on_stream.stream_known);
  CHECK(on_stream.stream == stream.get());
  CHECK(grader::is_default_stream(on_default.stream));
  CHECK(on_stream.from_program());
  CHECK(on_stream.end_ns > on_stream.start_ns);
  CHECK(trace->count_calls("cudaLaunchKernel") == 2);
}

TEST_CASE("the tracer sees copies, memsets, allocations, events and waits", "[tracer][gpu]") {
  grader::require_gpu();
  const std::size_t n = 1 << 20;
  std::vector<float> pageable(n, 1.0f);
  workbook::PinnedBuffer<float> pinned(n);
  workbook::Stream stream(cudaStreamNonBlocking);
  void* kept = nullptr;
  workbook::Event e1, e2;
  const auto trace = grader::trace([&] {
    float* d = nullptr;
    WORKBOOK_CUDA_CHECK(cudaMalloc(&d, n * sizeof(float)));
    WORKBOOK_CUDA_CHECK(cudaMalloc(&kept, 1000));
    WORKBOOK_CUDA_CHECK(cudaMemcpy(d, pageable.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    WORKBOOK_CUDA_CHECK(cudaMemset(d, 0, n * sizeof(float)));
    e1.record(stream.get());
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(pinned.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
    e2.record(stream.get());
    WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
    WORKBOOK_CUDA_CHECK(cudaFree(d));
  });
  REQUIRE(trace);
  std::cout << "copies:\n" << trace->describe() << "\n";
  REQUIRE(trace->copies.size() == 2);
  const grader::TracedCopy& h2d = trace->copies[0];
  const grader::TracedCopy& d2h = trace->copies[1];
  CHECK(h2d.direction == grader::CopyDirection::HostToDevice);
  CHECK(h2d.host_side() == grader::MemoryKind::Pageable);
  CHECK(h2d.bytes == n * sizeof(float));
  CHECK(h2d.api == "cudaMemcpy");
  CHECK_FALSE(h2d.asynchronous);
  CHECK(d2h.direction == grader::CopyDirection::DeviceToHost);
  CHECK(d2h.host_side() == grader::MemoryKind::Pinned);
  CHECK(d2h.asynchronous);
  CHECK(d2h.api == "cudaMemcpyAsync");
  CHECK(d2h.stream == stream.get());
  CHECK(trace->memsets.size() == 1);
  CHECK(trace->count_calls("cudaEventRecord") == 2);
  CHECK(trace->device_bytes_not_freed() == 1000);
  CHECK(trace->synchronizations() == std::vector<std::string>{"cudaDeviceSynchronize", "cudaStreamSynchronize"});
  WORKBOOK_CUDA_CHECK(cudaFree(kept));
}

TEST_CASE("the tracer tells cuBLAS's kernels from the program's", "[tracer][gpu]") {
  grader::require_gpu();
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  const int m = 256;
  workbook::DeviceBuffer<float> a(m * m), b(m * m), c(m * m);
  workbook::fill_random_device(a.data(), a.size(), 1);
  workbook::fill_random_device(b.data(), b.size(), 2);
  const float one = 1, zero = 0;
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, a.data(), m, b.data(), m, &zero, c.data(), m);  // warm
  const auto trace = grader::trace([&] {
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, a.data(), m, b.data(), m, &zero, c.data(), m);
  });
  cublasDestroy(handle);
  REQUIRE(trace);
  std::cout << "cuBLAS:\n" << trace->describe() << "\n";
  CHECK_FALSE(trace->library_kernels().empty());
  CHECK(trace->program_kernels().empty());
}

TEST_CASE("the trace shows a call returning before the GPU finished its work", "[tracer][gpu]") {
  grader::require_gpu();
  const auto trace = grader::trace([] { spin_kernel<<<1, 1>>>(20'000'000); });  // 20 ms
  REQUIRE(trace);
  REQUIRE(trace->kernels.size() == 1);
  CHECK(trace->returned_ns < trace->kernels[0].end_ns);
  CHECK(trace->kernels[0].ms() > 15.0);
  CHECK(trace->returned_ns > trace->begin_ns);
}

TEST_CASE("a call that throws inside a trace still returns what it did, and tracing goes on", "[tracer][gpu]") {
  grader::require_gpu();
  workbook::DeviceBuffer<float> x(64);
  std::exception_ptr thrown;
  const auto trace = grader::trace([&] {
    probe_kernel<<<0, 32>>>(x.data(), 64);  // 0 blocks: rejected
    WORKBOOK_CHECK_LAUNCH();
  }, thrown);
  REQUIRE(thrown);
  CHECK_THROWS_AS(std::rethrow_exception(thrown), workbook::CudaError);
  REQUIRE(trace);
  REQUIRE(trace->count_calls("cudaLaunchKernel") == 1);
  const auto& launch = *std::find_if(trace->calls.begin(), trace->calls.end(),
                                     [](const grader::TracedCall& c) { return c.name == "cudaLaunchKernel"; });
  CHECK(launch.grid.x == 0);
  CHECK(launch.block.x == 32);
  CHECK(launch.result != cudaSuccess);
  CHECK(trace->kernels.empty());
  // The plain form rethrows, and the next trace works.
  CHECK_THROWS_AS(grader::trace([&] {
    probe_kernel<<<0, 32>>>(x.data(), 64);
    WORKBOOK_CHECK_LAUNCH();
  }), workbook::CudaError);
  const auto next = grader::trace([&] { probe_kernel<<<1, 32>>>(x.data(), 64); });
  REQUIRE(next);
  CHECK(next->kernels_named("probe_kernel").size() == 1);
}

namespace {
__global__ void write_through_null(float* x) { x[threadIdx.x] = 1.0f; }
}  // namespace

// Last in this file: an illegal address poisons the process (ctest runs each case alone).
TEST_CASE("an illegal address inside a trace is the work's error, not a crash of the tracer", "[tracer][gpu]") {
  grader::require_gpu();
  std::exception_ptr thrown;
  const auto trace = grader::trace([] {
    write_through_null<<<1, 32>>>(nullptr);
    WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  }, thrown);
  REQUIRE(thrown);
  try {
    std::rethrow_exception(thrown);
  } catch (const workbook::CudaError& e) {
    CHECK(e.code() == cudaErrorIllegalAddress);
  }
  CHECK(trace.has_value());
}
