// The tracer's host-only half: names, queries and the text students read. Runs in CI.
#include "tracer.hpp"

#include "workbook/device_info.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdint>

using Catch::Matchers::ContainsSubstring;

namespace {

grader::TracedCall call(const std::string& name, const void* pointer = nullptr, std::size_t bytes = 0) {
  grader::TracedCall c;
  c.name = name;
  c.pointer = pointer;
  c.bytes = bytes;
  return c;
}

grader::TracedKernel kernel(const std::string& name, unsigned grid, unsigned block, const std::string& library = "") {
  grader::TracedKernel k;
  k.name = name;
  k.grid = dim3(grid);
  k.block = dim3(block);
  k.launched_by = library;
  k.start_ns = 1000;
  k.end_ns = 3000;
  return k;
}

grader::TracedCopy copy(grader::CopyDirection direction, std::size_t bytes, grader::MemoryKind host) {
  grader::TracedCopy c;
  c.direction = direction;
  c.bytes = bytes;
  if (direction == grader::CopyDirection::DeviceToHost) {
    c.source = grader::MemoryKind::Device;
    c.destination = host;
  } else {
    c.source = host;
    c.destination = grader::MemoryKind::Device;
  }
  return c;
}

}  // namespace

TEST_CASE("runtime callback names lose their version and per-thread suffixes", "[tracer]") {
  CHECK(grader::plain_call_name("cudaMalloc_v3020") == "cudaMalloc");
  CHECK(grader::plain_call_name("cudaEventRecord_ptsz_v7000") == "cudaEventRecord");
  CHECK(grader::plain_call_name("cudaMemcpyAsync_v3020") == "cudaMemcpyAsync");
  CHECK(grader::plain_call_name("cudaFree") == "cudaFree");
}

TEST_CASE("kernel names are demangled and cut before their parameters", "[tracer]") {
  std::string signature;
  CHECK(grader::kernel_short_name("_Z10vector_addPKfS0_Pfi", &signature) == "vector_add");
  CHECK(signature == "vector_add(float const*, float const*, float*, int)");
  CHECK(grader::kernel_short_name("_ZN3cub6detail6reduce6kernelIfEEvPKfPfi") == "cub::detail::reduce::kernel<float>");
  CHECK(grader::kernel_short_name("sm90_xmma_gemm_f32f32_tf32f32") == "sm90_xmma_gemm_f32f32_tf32f32");
  CHECK(grader::kernel_short_name("_ZN12_GLOBAL__N_112probe_kernelEPfi") == "probe_kernel");
}

TEST_CASE("a trace answers what was launched, copied and left allocated", "[tracer]") {
  grader::Trace t;
  int a = 0, b = 0, c = 0;
  t.calls = {call("cudaMalloc", &a, 4000), call("cudaMalloc", &b, 4000), call("cudaMalloc", &c, 4000),
             call("cudaMemcpy"), call("cudaLaunchKernel"), call("cudaFree", &a), call("cudaEventRecord"),
             call("cudaEventRecord"), call("cudaDeviceSynchronize")};
  t.kernels = {kernel("vector_add", 4, 256), kernel("sm90_xmma_gemm", 8, 128, "libcublasLt.so.13")};
  t.copies = {copy(grader::CopyDirection::HostToDevice, 4000, grader::MemoryKind::Pageable),
              copy(grader::CopyDirection::HostToDevice, 4000, grader::MemoryKind::Pageable),
              copy(grader::CopyDirection::DeviceToHost, 4000, grader::MemoryKind::Pinned)};

  CHECK(t.count_calls("cudaEventRecord") == 2);
  CHECK(t.kernels_named("vector_add").size() == 1);
  CHECK(t.program_kernels().size() == 1);
  REQUIRE(t.library_kernels().size() == 1);
  CHECK(t.library_kernels()[0].launched_by == "libcublasLt.so.13");
  CHECK(t.bytes_copied(grader::CopyDirection::HostToDevice) == 8000);
  CHECK(t.bytes_copied(grader::CopyDirection::DeviceToHost) == 4000);
  CHECK(t.device_bytes_not_freed() == 8000);
  CHECK(t.allocations_not_freed() == 2);
  CHECK(t.synchronizations() == std::vector<std::string>{"cudaDeviceSynchronize"});
  CHECK(t.kernels[0].ms() == 0.002);

  const std::string text = t.describe();
  CHECK_THAT(text, ContainsSubstring("kernel vector_add<<<4, 256>>>"));
  CHECK_THAT(text, ContainsSubstring("(launched by libcublasLt.so.13)"));
  CHECK_THAT(text, ContainsSubstring("host -> device, pageable host memory: 2 (8000 bytes)"));
  CHECK_THAT(text, ContainsSubstring("device -> host, pinned host memory: 1 (4000 bytes)"));
  CHECK_THAT(text, ContainsSubstring("not freed: 8000 bytes"));
}

TEST_CASE("an event's last record before a call names its stream", "[tracer]") {
  int e = 0, other = 0;
  cudaStream_t s1 = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x1000});
  cudaStream_t s2 = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x2000});
  const auto record = [&](const void* event, cudaStream_t s, cudaError_t result = cudaSuccess) {
    grader::TracedCall c = call("cudaEventRecord", event);
    c.stream = s;
    c.result = result;
    return c;
  };
  grader::Trace t;
  t.calls = {record(&e, s1), record(&other, s2), record(&e, s2, cudaErrorInvalidResourceHandle), record(&e, s2),
             call("cudaStreamWaitEvent", &e)};
  CHECK_FALSE(t.last_record(&e, 0));
  REQUIRE(t.last_record(&e, 3));
  CHECK(t.last_record(&e, 3)->stream == s1);  // the failed record does not count
  CHECK(t.last_record(&e, 3)->call == 0);
  REQUIRE(t.last_record(&e, 4));
  CHECK(t.last_record(&e, 4)->stream == s2);
  CHECK(t.last_record(&e, 4)->call == 3);
  CHECK_FALSE(t.last_record(&s1, 5));
}

TEST_CASE("a query loop that ends when the GPU is done is a wait; one glance is not", "[tracer]") {
  int s1 = 0, s2 = 0, e = 0;
  const auto query = [](const std::string& name, const void* handle, cudaError_t result) {
    grader::TracedCall c = call(name, handle);
    if (name == "cudaStreamQuery") c.stream = static_cast<cudaStream_t>(const_cast<void*>(handle)), c.pointer = nullptr;
    c.result = result;
    return c;
  };
  grader::Trace t;
  t.calls = {query("cudaStreamQuery", &s1, cudaErrorNotReady), query("cudaStreamQuery", &s2, cudaSuccess),
             query("cudaStreamQuery", &s1, cudaErrorNotReady), query("cudaStreamQuery", &s1, cudaSuccess),
             query("cudaEventQuery", &e, cudaErrorNotReady), query("cudaEventQuery", &e, cudaSuccess),
             query("cudaEventQuery", &e, cudaSuccess)};
  const auto loops = t.polling_loops();
  REQUIRE(loops.size() == 2);
  CHECK(loops[0].done_call == 3);
  CHECK(loops[0].queries == 3);
  CHECK(loops[1].done_call == 5);
  CHECK(loops[1].queries == 2);
  CHECK(t.synchronizations() ==
        std::vector<std::string>{"cudaEventQuery in a loop until done", "cudaStreamQuery in a loop until done"});

  grader::Trace glance;  // "not ready" once on s1, then "done" on another stream only
  glance.calls = {query("cudaStreamQuery", &s1, cudaErrorNotReady), query("cudaStreamQuery", &s2, cudaSuccess)};
  CHECK(glance.polling_loops().empty());
  CHECK(glance.synchronizations().empty());
}

TEST_CASE("a failed allocation or a freed one is not left allocated", "[tracer]") {
  grader::Trace t;
  int a = 0;
  grader::TracedCall failed = call("cudaMalloc", &a, 1 << 20);
  failed.result = cudaErrorMemoryAllocation;
  t.calls = {failed, call("cudaMallocAsync", &a, 64), call("cudaFreeAsync", &a)};
  CHECK(t.device_bytes_not_freed() == 0);
  CHECK_THAT(t.describe(), ContainsSubstring("kernels launched: none"));
}

TEST_CASE("launch and stream texts", "[tracer]") {
  grader::TracedKernel k = kernel("matmul_tiled", 1, 1);
  k.grid = dim3(4, 3);
  k.block = dim3(32, 32);
  CHECK(grader::launch_text(k) == "matmul_tiled<<<(4, 3), (32, 32)>>>");
  CHECK(grader::stream_text(nullptr) == "the default stream");
  CHECK(grader::stream_text(cudaStreamPerThread) == "the per-thread default stream");
  CHECK(grader::is_default_stream(cudaStreamLegacy));
}

TEST_CASE("without a GPU the tracer says why it cannot start, and does not crash", "[tracer]") {
  if (workbook::cuda_device_count() > 0) SKIP("a GPU is present: tracer_gpu_test covers the real thing");
  std::string why;
  CHECK_FALSE(grader::Tracer::available(&why));
  CHECK_THAT(why, ContainsSubstring("no GPU"));
  CHECK_THROWS_AS(grader::Tracer(), grader::TracerUnavailable);
}
