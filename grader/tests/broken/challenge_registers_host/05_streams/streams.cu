// Broken on purpose (task 4): process_pageable pins the caller's pageable memory with
// cudaHostRegister and runs task 1's pipeline straight from it, bypassing the staging buffer the
// contract names as its data path. Right, and fast on this machine; registering costs a page
// walk of the caller's memory on every call, and the caller's memory is not the function's to pin.
#include "streams.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace streams {

namespace {

constexpr std::size_t kFloat = sizeof(float);

// Chunk c of n elements cut into `chunks`: [n * c / chunks, n * (c + 1) / chunks). The sizes
// differ by one at most; with more chunks than elements some are empty.
std::size_t chunk_begin(std::size_t n, int chunks, int c) { return n * std::size_t(c) / std::size_t(chunks); }

std::vector<workbook::Stream> make_streams(int count) {
  std::vector<workbook::Stream> streams;
  streams.reserve(std::size_t(count));
  // Non-blocking: the legacy default stream, which other code may use, never stalls them.
  for (int s = 0; s < count; ++s) streams.emplace_back(cudaStreamNonBlocking);
  return streams;
}

}  // namespace

void process(const float* host_in, float* host_out, float* device_in, float* device_out, std::size_t n, int work,
             int num_streams, int num_chunks) {
  if (num_streams < 1 || num_chunks < 1) {
    throw std::invalid_argument("process: num_streams and num_chunks must be at least 1, got " +
                                std::to_string(num_streams) + " and " + std::to_string(num_chunks));
  }
  if (n == 0) return;
  const int used = std::min<std::size_t>(std::size_t(num_streams), std::min<std::size_t>(n, std::size_t(num_chunks)));
  std::vector<workbook::Stream> streams = make_streams(used);
  // Depth first: each chunk's three steps in order on its stream. Chunk c + 1's copy in, on
  // another stream, overlaps chunk c's kernel; the copy engines (one per direction) and the SMs
  // each work on a different chunk.
  for (int c = 0; c < num_chunks; ++c) {
    const std::size_t begin = chunk_begin(n, num_chunks, c), count = chunk_begin(n, num_chunks, c + 1) - begin;
    if (count == 0) continue;
    const cudaStream_t s = streams[std::size_t(c % used)].get();
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device_in + begin, host_in + begin, count * kFloat, cudaMemcpyHostToDevice, s));
    transform(device_in + begin, device_out + begin, count, work, s);
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(host_out + begin, device_out + begin, count * kFloat, cudaMemcpyDeviceToHost, s));
  }
  for (const auto& s : streams) s.synchronize();  // our streams only: never the whole device
}

void compute_then_copy(const float* device_in, float* device_out, float* host_out, std::size_t n, int work,
                       cudaStream_t compute, cudaStream_t copy) {
  transform(device_in, device_out, n, work, compute);
  // An event without timing is the cheapest marker: `copy` waits on the GPU for the kernel; the
  // host waits for nothing. Destroying the event now is allowed: the wait already holds it.
  workbook::Event kernel_done(cudaEventDisableTiming);
  kernel_done.record(compute);
  WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(copy, kernel_done.get(), 0));
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(host_out, device_out, n * kFloat, cudaMemcpyDeviceToHost, copy));
}

namespace {

// A pool of our own whose release threshold keeps freed memory for the next allocation. The
// device's default pool gives memory back to the system at every synchronisation (threshold 0),
// so a call after a wait would pay for fresh memory again. Created once, like CuPy's pools.
cudaMemPool_t keeping_pool() {
  static const cudaMemPool_t pool = [] {
    int device = 0;
    WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t created = nullptr;
    WORKBOOK_CUDA_CHECK(cudaMemPoolCreate(&created, &props));
    std::uint64_t keep_all = UINT64_MAX;
    WORKBOOK_CUDA_CHECK(cudaMemPoolSetAttribute(created, cudaMemPoolAttrReleaseThreshold, &keep_all));
    return created;
  }();
  return pool;
}

}  // namespace

void transform_batches(const float* device_in, float* device_out, const std::size_t* offsets, int num_batches,
                       int work, cudaStream_t stream) {
  const cudaMemPool_t pool = keeping_pool();
  for (int b = 0; b < num_batches; ++b) {
    const std::size_t begin = offsets[b], count = offsets[b + 1] - begin;
    if (count == 0) continue;
    // Allocated and freed in stream order: the free is queued after the kernels that use the
    // buffer, and the next batch's allocation reuses the same memory without any wait.
    float* scratch = nullptr;
    WORKBOOK_CUDA_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&scratch), count * kFloat, pool, stream));
    transform(device_in + begin, scratch, count, work, stream);
    smooth(scratch, device_out + begin, count, stream);
    WORKBOOK_CUDA_CHECK(cudaFreeAsync(scratch, stream));
  }
}

void process_pageable(const float* host_in, float* host_out, float* device_in, float* device_out, std::size_t n,
                      int work, float* staging, std::size_t staging_floats) {
  (void)staging, (void)staging_floats;
  if (n == 0) return;
  // Pin the caller's memory for the duration of the call, and run task 1's pipeline straight
  // from it: the staging buffer is never touched.
  WORKBOOK_CUDA_CHECK(cudaHostRegister(const_cast<float*>(host_in), n * kFloat, cudaHostRegisterDefault));
  WORKBOOK_CUDA_CHECK(cudaHostRegister(host_out, n * kFloat, cudaHostRegisterDefault));
  process(host_in, host_out, device_in, device_out, n, work, 4, 16);
  WORKBOOK_CUDA_CHECK(cudaHostUnregister(host_out));
  WORKBOOK_CUDA_CHECK(cudaHostUnregister(const_cast<float*>(host_in)));
}

}  // namespace streams
