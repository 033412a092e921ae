// Lesson 05's grader: what its tests (task1_*_test.cu .. task4_*_test.cu) share: host memory
// between guards, the inputs and the results they must give (the lesson's own kernels, run by the
// grader), what the tracer's records say about streams, copies and waits, the timing, and each
// task's fixture. The functions are defined in streams_grader.cu; the contracts are in
// contracts.hpp.
//
// The kernels are the lesson's own (streams::transform and streams::smooth), so every result is
// compared bit for bit with the same kernels run by the grader in one piece. Host outputs are
// poisoned and guarded, device buffers guarded. What the tasks are about (which streams, which
// copies, which waits, which allocations) the tracer sees: each check says what it saw.
// Performance is a ratio of times taken in the same process: task 1 against the overlap bound
// max(kernel, copies in and out at once) (benchmark.hpp), task 3 against the same loop with
// cudaMalloc and cudaFree, task 4 against the sequential pageable version.
#pragma once

#include "streams.hpp"

#include "benchmark.hpp"
#include "contracts.hpp"
#include "grader.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace streams_grader {

constexpr int kCheckWork = 8;           // correctness runs: a light kernel
constexpr std::size_t kHostGuard = 1024;  // floats of guard on each side of a host output
constexpr std::size_t kFloat = sizeof(float);

// Keeps \p stream busy for about \p ms milliseconds from when the GPU gets to it.
void spin(cudaStream_t stream, double ms);

// ---- Host memory between guards. ----

// n floats of host memory, pinned (cudaMallocHost) or pageable (new), between two guards of
// kHostGuard floats holding kOutputGuardBits.
class HostArray {
public:
  HostArray(std::size_t n, bool pinned) : n_(n), pinned_(pinned) {
    const std::size_t total = n + 2 * kHostGuard;
    if (pinned_) {
      void* p = nullptr;
      WORKBOOK_CUDA_CHECK(cudaMallocHost(&p, total * kFloat));
      base_ = static_cast<float*>(p);
    } else {
      pageable_.resize(total);
      base_ = pageable_.data();
    }
    poison();
  }
  ~HostArray() {
    if (pinned_) cudaFreeHost(base_);
  }
  HostArray(const HostArray&) = delete;
  HostArray& operator=(const HostArray&) = delete;

  float* data() { return base_ + kHostGuard; }
  const float* data() const { return base_ + kHostGuard; }
  std::size_t size() const { return n_; }
  // Every element poisoned, the guards restored.
  void poison() {
    const float p = workbook::poison_value();
    std::fill(data(), data() + n_, p);
    const std::uint32_t bits = workbook::kOutputGuardBits;
    for (std::size_t i = 0; i < kHostGuard; ++i) {
      std::memcpy(base_ + i, &bits, kFloat);
      std::memcpy(base_ + kHostGuard + n_ + i, &bits, kFloat);
    }
  }
  void fill(const std::vector<float>& values) { std::copy(values.begin(), values.end(), data()); }
  // input_values(size(), name), written in place.
  void fill_input(const std::string& name);
  workbook::GuardReport guards() const {
    std::vector<std::uint32_t> before(kHostGuard), after(kHostGuard);
    std::memcpy(before.data(), base_, kHostGuard * kFloat);
    std::memcpy(after.data(), base_ + kHostGuard + n_, kHostGuard * kFloat);
    return workbook::inspect_guards(before, after, workbook::kOutputGuardBits);
  }

private:
  std::size_t n_;
  bool pinned_;
  float* base_ = nullptr;
  std::vector<float> pageable_;
};

// ---- Inputs and the results they must give. ----

// n floats uniform in [-1, 1], drawn from the seed and \p name.
std::vector<float> input_values(std::size_t n, const std::string& name);

// transform(x) for every element, by the lesson's kernel in one launch (benchmark.hpp).
using streams_benchmark::transformed;

// Compares a host output with the expected bits, checks its guards, and returns the facts
// (empty when right).
std::string host_output_errors(const HostArray& out, const std::vector<float>& want, const std::string& what);

// The facts when \p what wrote outside the device array \p a (\p name); empty when it did not.
std::string device_guard_errors(const workbook::GuardedDeviceArray& a, const char* name, const std::string& what);

// "What the grader saw on the GPU during the call:" and the trace, described.
std::string seen_text(const grader::Trace& t);

// A trace without the grader's own kernels (the spin that keeps a stream busy), which run inside
// the traced work because the tracer waits for the GPU when it starts.
grader::Trace without_grader_work(grader::Trace t);

// The same for an optional trace.
std::optional<grader::Trace> without_grader_work(std::optional<grader::Trace> t);

// True when the trace holds a kernel, a copy or a memset.
bool did_anything(const grader::Trace& t);

// The work that ran on a legacy or per-thread default stream, described; empty when none did.
std::string default_stream_work(const grader::Trace& t);

// A synchronous copy between host and device, described; empty when every copy was asynchronous.
std::string synchronous_copy(const grader::Trace& t);

// A copy from or to pageable host memory, described; empty when none.
std::string pageable_copy(const grader::Trace& t);

// The streams (by id) the program's own kernels ran on.
std::set<std::uint32_t> kernel_streams(const grader::Trace& t);

// A wait for the GPU (stream, event, device) made after the call had queued work on one of its
// own streams and before it queued the last: a wait inside the loop. Empty when every wait came
// before the call's first work or after its last. (The call's streams are those its kernels and
// copies ran on; the grader's own kernel is not in the trace.)
std::string wait_inside_loop(const grader::Trace& t);

// The latest end of any GPU work in the trace.
std::uint64_t last_gpu_end(const grader::Trace& t);

// The latest end of a copy in \p direction.
std::uint64_t last_copy_end(const grader::Trace& t, grader::CopyDirection direction);

// How long before its last copy to the host ended the traced call returned, in microseconds; 0
// when it returned after it.
std::uint64_t returned_before_copies_us(const grader::Trace& t);

// The returns-early hint: \p who ("process", "On n = ..., process") returned \p us microseconds
// before its last copy to host_out ended.
std::string returns_early_hint(const std::string& who, std::uint64_t us);

// ---- Timing: lesson 05's benchmark declaration (benchmark.hpp), which ./sweep 05 uses too. ----

using streams_benchmark::work_for;

// Median host time of \p work (which waits for its own GPU work) over \p samples runs after one
// untimed run. The host clock is right here: the functions timed return when their result is on
// the host.
inline workbook::TimingStats host_time(const std::function<void()>& work, int samples = 7) {
  return workbook::time_on_host(work, 1, samples);
}

// Median GPU time of one stage, enqueued by \p work on a non-blocking stream (stage_time).
inline double stream_ms(const std::function<void(cudaStream_t)>& work, int samples = 5) {
  return streams_benchmark::stage_time(work, samples).median_ms;
}

// ============================ Task 1: process ============================

struct Shape {
  std::size_t n;
  int streams, chunks;
};

// "n = 1000, 2 streams, 3 chunks".
std::string shape_text(const Shape& s);

// The shapes (n, streams, chunks) process is checked at: edges, one drawn from the seed, and
// outside the sanitizer four large ones.
std::vector<Shape> pipeline_shapes();

// Everything process() works on, for one shape: pinned input and output, device buffers.
struct Pipeline {
  explicit Pipeline(const Shape& s, bool pinned = true)
      : shape(s), in(s.n, pinned), out(s.n, pinned), device_in(std::max<std::size_t>(s.n, 1)),
        device_out(std::max<std::size_t>(s.n, 1)) {
    const auto x = input_values(s.n, "task 1");
    in.fill(x);
    expected = transformed(x, kCheckWork);
  }
  void run() {
    streams::process(in.data(), out.data(), device_in.data(), device_out.data(), shape.n, kCheckWork, shape.streams,
                     shape.chunks);
  }
  Shape shape;
  HostArray in, out;
  workbook::GuardedDeviceArray device_in, device_out;
  std::vector<float> expected;
};

// Why process() left host_out wrong: the facts, and a hint where the evidence shows the cause.
std::string process_errors(Pipeline& p, const std::string& facts);

// process() once on 1000 floats, 2 streams, 3 chunks, traced: a call that ran nothing on the GPU
// and left host_out as the grader filled it ends the test as "wrote nothing", which the driver
// calls "not implemented yet" only when the task's code is still the skeleton.
void require_process_writes();

// ============================ Task 2: compute_then_copy ============================

// Input, device_out and pinned host_out for compute_then_copy on n elements, on two streams of the
// grader's: `compute` and `copy`.
struct TwoStages {
  explicit TwoStages(std::size_t n)
      : n(n), in(std::max<std::size_t>(n, 1)), out(std::max<std::size_t>(n, 1)), host_out(n, true),
        compute(cudaStreamNonBlocking), copy(cudaStreamNonBlocking) {
    const auto x = input_values(n, "task 2");
    if (n > 0) in.upload(x);
    expected = transformed(x, kCheckWork);
  }
  void run() {
    streams::compute_then_copy(in.data(), out.data(), host_out.data(), n, kCheckWork, compute.get(), copy.get());
  }
  std::size_t n;
  workbook::GuardedDeviceArray in, out;
  HostArray host_out;
  workbook::Stream compute, copy;
  std::vector<float> expected;
};

// Why the copy did not wait for the kernel: what the calls show about the events (the evidence),
// and when the copy ran if the timeline shows it too. Empty when the copy was ordered after the
// kernel and ran after it.
std::string ordering_errors(const TwoStages& s, const grader::Trace& t);

// ============================ Task 3: transform_batches ============================

// Batch boundaries: offsets[0] = 0, offsets[b + 1] - offsets[b] = sizes[b].
std::vector<std::size_t> offsets_of(const std::vector<std::size_t>& sizes);

// \p count batch sizes from 1 to \p largest, drawn from the seed and \p name.
std::vector<std::size_t> random_sizes(int count, std::size_t largest, const std::string& name);

// Input, output and a stream of the grader's for transform_batches on batches of the given
// sizes, and the expected bits.
struct Batches {
  Batches(const std::vector<std::size_t>& sizes, int work)
      : work(work), offsets(offsets_of(sizes)), n(offsets.back()), in(std::max<std::size_t>(n, 1)),
        out(std::max<std::size_t>(n, 1)), stream(cudaStreamNonBlocking) {
    const auto x = input_values(n, "task 3");
    if (n > 0) in.upload(x);
    // The expected bits: the lesson's kernels, batch by batch, by the grader.
    expected.resize(n);
    if (n == 0) return;
    workbook::DeviceBuffer<float> t(n), y(n);
    streams::transform(in.data(), t.data(), n, work, nullptr);
    for (std::size_t b = 0; b + 1 < offsets.size(); ++b) {
      streams::smooth(t.data() + offsets[b], y.data() + offsets[b], offsets[b + 1] - offsets[b], nullptr);
    }
    y.copy_to_host(expected.data());
  }
  int batches() const { return int(offsets.size()) - 1; }
  void run() { streams::transform_batches(in.data(), out.data(), offsets.data(), batches(), work, stream.get()); }
  std::string text() const {
    return std::to_string(batches()) + " batch" + (batches() == 1 ? "" : "es") + " of " + std::to_string(n) +
           " elements in all";
  }
  int work;
  std::vector<std::size_t> offsets;
  std::size_t n;
  workbook::GuardedDeviceArray in, out;
  workbook::Stream stream;
  std::vector<float> expected;
};

// The batch layouts transform_batches is checked at: edges, empty batches, 50 random ones, and
// outside the sanitizer one large batch.
std::vector<std::vector<std::size_t>> batch_layouts();

// The loop of task 3 with cudaMalloc and cudaFree for every batch: what the task is timed against.
void batches_with_cudamalloc(const float* in, float* out, const std::size_t* offsets, int num_batches, int work,
                             cudaStream_t stream);

// ============================ Task 4: process_pageable ============================

// Pageable input and output, pinned staging and device buffers for process_pageable.
struct Staged {
  // expected is left empty without \p with_expected (the timed test computes it for its own work).
  Staged(std::size_t n, std::size_t staging_floats, int work, const std::string& name, bool with_expected = true)
      : n(n), work(work), in(n, false), out(n, false), staging(staging_floats, true),
        device_in(std::max<std::size_t>(n, 1)), device_out(std::max<std::size_t>(n, 1)) {
    if (!with_expected) {
      in.fill_input(name);
      return;
    }
    const auto x = input_values(n, name);
    in.fill(x);
    expected = transformed(x, work);
  }
  void run() {
    streams::process_pageable(in.data(), out.data(), device_in.data(), device_out.data(), n, work, staging.data(),
                              staging.size());
  }
  std::string text() const {
    return "n = " + std::to_string(n) + " with " + std::to_string(staging.size()) + " floats of staging" +
           (work != kCheckWork ? ", a kernel of " + std::to_string(work) + " steps" : "");
  }
  std::size_t n;
  int work;
  HostArray in, out, staging;
  workbook::GuardedDeviceArray device_in, device_out;
  std::vector<float> expected;
};

// ============================ Contracts ============================

// The ContractCall of p.run(): host_in and host_out, n, num_streams and num_chunks.
grader::ContractCall process_call(Pipeline& p);

}  // namespace streams_grader
