// Broken on purpose (task 2): the copy stops one float short of n, so host_out's last element is
// never written. Its ordering is right, with one wait too many: `copy` also waits on an event
// recorded on `copy` itself, which orders nothing and harms nothing. The verdict must state the
// unwritten element and claim no cause about events (the old event-wrong-stream evidence fired
// on the extra wait).
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
  workbook::Event kernel_done(cudaEventDisableTiming), copy_ready(cudaEventDisableTiming);
  kernel_done.record(compute);
  copy_ready.record(copy);
  WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(copy, copy_ready.get(), 0));  // an extra wait: harmless
  WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(copy, kernel_done.get(), 0));
  if (n > 1) {  // broken: one float short
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(host_out, device_out, (n - 1) * kFloat, cudaMemcpyDeviceToHost, copy));
  }
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

namespace {

// How far the two host threads of process_pageable have got: chunks queued on the GPU by the
// filling thread, chunks moved out of their slot by the draining thread.
class Progress {
public:
  void advance(std::size_t& counter) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      ++counter;
    }
    changed_.notify_all();
  }
  // Waits until \p counter exceeds \p value (or the other thread failed).
  void wait_past(const std::size_t& counter, std::size_t value) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return counter > value || failed_; });
  }
  void fail() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      failed_ = true;
    }
    changed_.notify_all();
  }
  bool failed() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return failed_;
  }
  std::size_t queued = 0, drained = 0;

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool failed_ = false;
};

}  // namespace

void process_pageable(const float* host_in, float* host_out, float* device_in, float* device_out, std::size_t n,
                      int work, float* staging, std::size_t staging_floats) {
  // The staging memory is cut into kSlots pairs of slots (one in, one out), one stream each;
  // chunk c uses slot c % kSlots. Two host threads share the work the driver would do for a
  // pageable copy, so that both directions overlap each other and the kernels:
  // - this thread fills: it copies chunk c into its in-slot (once the slot's last copy in is
  //   done), and queues the copy in, the kernel and (once the slot's last result was moved out)
  //   the copy out, then an event;
  // - a second thread drains: it waits for chunk c's event and moves the result from the
  //   out-slot to host_out.
  constexpr int kSlots = 4;
  const std::size_t slot = staging_floats / (2 * kSlots);
  if (slot == 0) {
    throw std::invalid_argument("process_pageable: " + std::to_string(staging_floats) + " floats of staging memory "
                                "cannot hold " + std::to_string(2 * kSlots) + " slots");
  }
  if (n == 0) return;
  std::vector<workbook::Stream> streams = make_streams(kSlots);
  std::vector<workbook::Event> copied_in, copied_out;
  for (int k = 0; k < kSlots; ++k) {
    copied_in.emplace_back(cudaEventDisableTiming);
    copied_out.emplace_back(cudaEventDisableTiming);
  }
  const std::size_t chunks = (n + slot - 1) / slot;
  const auto in_slot = [&](std::size_t c) { return staging + 2 * (c % kSlots) * slot; };
  const auto out_slot = [&](std::size_t c) { return in_slot(c) + slot; };
  Progress progress;

  std::exception_ptr drain_error;
  std::thread drain([&] {
    try {
      for (std::size_t c = 0; c < chunks; ++c) {
        progress.wait_past(progress.queued, c);  // chunk c's event is recorded
        if (progress.failed()) return;
        copied_out[c % kSlots].synchronize();
        const std::size_t begin = c * slot;
        std::memcpy(host_out + begin, out_slot(c), std::min(slot, n - begin) * kFloat);
        progress.advance(progress.drained);
      }
    } catch (...) {
      drain_error = std::current_exception();
      progress.fail();
    }
  });
  try {
    for (std::size_t c = 0; c < chunks && !progress.failed(); ++c) {
      const std::size_t k = c % kSlots, begin = c * slot, bytes = std::min(slot, n - begin) * kFloat;
      if (c >= kSlots) copied_in[k].synchronize();  // chunk c - kSlots has left the in-slot
      std::memcpy(in_slot(c), host_in + begin, bytes);
      const cudaStream_t s = streams[k].get();
      WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device_in + begin, in_slot(c), bytes, cudaMemcpyHostToDevice, s));
      copied_in[k].record(s);
      transform(device_in + begin, device_out + begin, bytes / kFloat, work, s);
      if (c >= kSlots) progress.wait_past(progress.drained, c - kSlots);  // the out-slot is free again
      WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(out_slot(c), device_out + begin, bytes, cudaMemcpyDeviceToHost, s));
      copied_out[k].record(s);
      progress.advance(progress.queued);
    }
  } catch (...) {
    progress.fail();
    drain.join();
    throw;
  }
  drain.join();
  if (drain_error) std::rethrow_exception(drain_error);
}

}  // namespace streams
