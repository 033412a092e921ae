// Lesson 05's grader: the functions its tests share (streams_grader.hpp): inputs and expected
// results, what a trace says about streams, copies and waits, the timing, and each task's
// diagnosis. Helpers only this file uses are in the anonymous namespace.
#include "streams_grader.hpp"

#include "diagnosis.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using grader::HintId;

namespace streams_grader {

// The caller's own work: a kernel that keeps a stream busy for a while. (A kernel in a named
// namespace: nvcc's stubs for kernels in an anonymous namespace clash with Catch2's.)
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

namespace {

bool is_host_device_copy(const grader::TracedCopy& c) {
  return c.direction == grader::CopyDirection::HostToDevice || c.direction == grader::CopyDirection::DeviceToHost;
}

bool enqueues_work(const std::string& call) {
  return grader::is_kernel_launch(call) || call.rfind("cudaMemcpy", 0) == 0 || call.rfind("cudaMemset", 0) == 0;
}

}  // namespace

void spin(cudaStream_t stream, double ms) {
  streams_grader::spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(ms * 1e6));
  WORKBOOK_CHECK_LAUNCH();
}

std::uint64_t input_seed(std::size_t n, const std::string& name) {
  return grader::seed_for(name + " " + std::to_string(n));
}

std::vector<float> input_values(std::size_t n, const std::string& name) {
  return workbook::random_floats(n, input_seed(n, name), -1.0f, 1.0f);
}

void HostArray::fill_input(const std::string& name) {
  workbook::fill_random(data(), n_, input_seed(n_, name), -1.0f, 1.0f);
}

std::string host_output_errors(const HostArray& out, const std::vector<float>& want, const std::string& what) {
  std::ostringstream msg;
  const workbook::GuardReport guards = out.guards();
  if (!guards.intact()) msg << what << " wrote outside host_out: " << guards.describe(out.size()) << ".\n";
  // Right elements have exactly the grader's bits: where every one has them (compared on every
  // core), nothing is wrong, and the element-by-element report below is not needed.
  std::atomic<bool> differ{false};
  workbook::parallel_for(want.size(), [&](std::size_t begin, std::size_t end) {
    if (std::memcmp(out.data() + begin, want.data() + begin, (end - begin) * kFloat) != 0) differ = true;
  });
  if (!differ) return msg.str();
  const auto report = workbook::compare_to_reference(out.data(), want.data(), want.size(), workbook::Tolerance{});
  if (!report.ok()) {
    msg << what << ": " << report.wrong << " of " << want.size() << " elements are wrong (the kernel is the "
        << "lesson's, so a right element has exactly the grader's bits).\n" << report.describe();
  }
  return msg.str();
}

std::string device_guard_errors(const workbook::GuardedDeviceArray& a, const char* name, const std::string& what) {
  const workbook::GuardReport guards = a.check_guards();
  if (guards.intact()) return "";
  return what + " wrote outside " + name + ": " + guards.describe(a.size()) + ".\n";
}

std::string seen_text(const grader::Trace& t) { return "\nWhat the grader saw on the GPU during the call:\n" + t.describe(); }

grader::Trace without_grader_work(grader::Trace t) {
  t.kernels.erase(std::remove_if(t.kernels.begin(), t.kernels.end(),
                                 [](const grader::TracedKernel& k) { return k.name.find("spin_kernel") != std::string::npos; }),
                  t.kernels.end());
  return t;
}

std::optional<grader::Trace> without_grader_work(std::optional<grader::Trace> t) {
  if (t) return without_grader_work(std::move(*t));
  return t;
}

bool did_anything(const grader::Trace& t) { return !t.kernels.empty() || !t.copies.empty() || !t.memsets.empty(); }

std::string default_stream_work(const grader::Trace& t) {
  for (const auto& k : t.program_kernels()) {
    if (k.stream_known && grader::is_default_stream(k.stream)) return "kernel " + grader::launch_text(k);
  }
  for (const auto& c : t.copies) {
    if (c.stream_known && grader::is_default_stream(c.stream)) {
      return "a copy " + grader::direction_text(c.direction) + (c.api.empty() ? "" : " (" + c.api + ")");
    }
  }
  return "";
}

std::string synchronous_copy(const grader::Trace& t) {
  for (const auto& c : t.copies) {
    if (is_host_device_copy(c) && !c.asynchronous) {
      return grader::direction_text(c.direction) + " of " + std::to_string(c.bytes) + " bytes" +
             (c.api.empty() ? "" : " by " + c.api);
    }
  }
  return "";
}

std::string pageable_copy(const grader::Trace& t) {
  for (const auto& c : t.copies) {
    if (is_host_device_copy(c) && c.host_side() == grader::MemoryKind::Pageable) {
      return grader::direction_text(c.direction) + " of " + std::to_string(c.bytes) + " bytes" +
             (c.api.empty() ? "" : " by " + c.api);
    }
  }
  return "";
}

std::set<std::uint32_t> kernel_streams(const grader::Trace& t) {
  std::set<std::uint32_t> ids;
  for (const auto& k : t.program_kernels()) ids.insert(k.stream_id);
  return ids;
}

std::string wait_inside_loop(const grader::Trace& t) {
  std::set<cudaStream_t> own;
  for (const auto& k : t.kernels) {
    if (k.stream_known) own.insert(k.stream);
  }
  for (const auto& c : t.copies) {
    if (c.stream_known) own.insert(c.stream);
  }
  const auto own_work = [&](const grader::TracedCall& c) {
    return enqueues_work(c.name) && (!c.has_stream || own.count(c.stream) > 0);
  };
  std::size_t first = t.calls.size(), last = 0;
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    if (!own_work(t.calls[i])) continue;
    first = std::min(first, i);
    last = i;
  }
  std::size_t waits = 0;
  std::string name;
  for (std::size_t i = first + 1; i < last; ++i) {
    const std::string& c = t.calls[i].name;
    if (c == "cudaStreamSynchronize" || c == "cudaEventSynchronize" || c == "cudaDeviceSynchronize") {
      ++waits;
      name = c;
    }
  }
  if (waits == 0) return "";
  return std::to_string(waits) + " call" + (waits > 1 ? "s" : "") + " to " + name + " while work was still being "
         "queued";
}

std::uint64_t last_gpu_end(const grader::Trace& t) {
  std::uint64_t end = 0;
  for (const auto& k : t.kernels) end = std::max(end, k.end_ns);
  for (const auto& c : t.copies) end = std::max(end, c.end_ns);
  for (const auto& m : t.memsets) end = std::max(end, m.end_ns);
  return end;
}

std::uint64_t last_copy_end(const grader::Trace& t, grader::CopyDirection direction) {
  std::uint64_t end = 0;
  for (const auto& c : t.copies) {
    if (c.direction == direction) end = std::max(end, c.end_ns);
  }
  return end;
}

std::uint64_t returned_before_copies_us(const grader::Trace& t) {
  const std::uint64_t copied_back = last_copy_end(t, grader::CopyDirection::DeviceToHost);
  return copied_back > t.returned_ns ? (copied_back - t.returned_ns) / 1000 : 0;
}

std::string returns_early_hint(const std::string& who, std::uint64_t us) {
  return grader::hint(HintId::returns_early,
                      who + " returned " + std::to_string(us) + " us before its last copy to host_out ended, so a "
                      "caller that reads host_out at once reads it half-written. Before returning, wait for each of "
                      "your streams (cudaStreamSynchronize).");
}

// ============================ Task 1: process ============================

std::string shape_text(const Shape& s) {
  return "n = " + std::to_string(s.n) + ", " + std::to_string(s.streams) + " stream" + (s.streams > 1 ? "s" : "") +
         ", " + std::to_string(s.chunks) + " chunk" + (s.chunks > 1 ? "s" : "");
}

std::vector<Shape> pipeline_shapes() {
  std::vector<Shape> shapes{{1, 1, 1}, {1, 3, 5}, {2, 1, 64}, {1000, 1, 1}, {1000, 2, 3}, {4099, 3, 7},
                            {65536, 4, 16}, {100003, 7, 10}};
  const std::uint64_t r = grader::seed_for("task 1 shape");
  shapes.push_back({1 + r % 300000, int(1 + (r >> 20) % 8), int(1 + (r >> 30) % 40)});
  if (grader::sanitize_mode()) return shapes;
  for (const Shape& s : {Shape{1000003, 4, 16}, Shape{777777, 8, 13}, Shape{(1u << 20) + 5, 5, 1},
                         Shape{(1u << 22) + 1, 4, 33}}) {
    shapes.push_back(s);
  }
  return shapes;
}

// A shape whose copies back take milliseconds: returning before they end shows on the GPU's clock.
const Shape kReturnsEarlyProbe{std::size_t(1) << 22, 2, 8};

std::string process_errors(Pipeline& p, const std::string& facts) {
  const std::size_t n = p.shape.n, c = std::size_t(p.shape.chunks);
  std::string out = facts;
  const auto report = workbook::compare_to_reference(p.out.data(), p.expected.data(), n, workbook::Tolerance{});
  // Evidence: exactly the last n mod C elements never written, every other one right: chunks of
  // n / C rounded down.
  const std::size_t covered = (n / c) * c;
  if (n % c != 0 && n / c > 0 && report.unwritten == n - covered && report.unwritten_is_tail() &&
      report.first_unwritten == covered && report.wrong == report.unwritten) {
    return out + grader::hint(HintId::chunk_remainder,
                              "the elements never written are exactly the last " + std::to_string(n - covered) +
                              " (n mod num_chunks): chunks of n / num_chunks elements, rounded down, leave the rest "
                              "out. Let the chunk boundaries come from the element count (chunk c starts at "
                              "n * c / num_chunks), or give the last chunk what remains.");
  }
  // Returned before the copies back were done: watch a second call. Evidence: host_out was wrong,
  // and the traced call returned before its last copy to the host ended. At a small shape the
  // GPU may finish its few bytes before the traced call returns (tracing slows the host), so a
  // shape whose copies take milliseconds is watched too.
  p.out.poison();
  const auto trace = grader::trace([&] { p.run(); });
  if (!trace) return out;
  std::uint64_t early_us = returned_before_copies_us(*trace);
  std::string where = "process", seen = seen_text(*trace);
  if (early_us == 0 && n < kReturnsEarlyProbe.n) {
    Pipeline probe(kReturnsEarlyProbe);
    if (const auto probed = grader::trace([&] { probe.run(); }); probed && returned_before_copies_us(*probed) > 0) {
      early_us = returned_before_copies_us(*probed);
      where = "On " + shape_text(kReturnsEarlyProbe) + ", process";
      seen += "\nWhat the grader saw on the GPU during the call on " + shape_text(kReturnsEarlyProbe) + ":\n" +
              probed->describe();
    }
  }
  if (early_us > 0) {
    return out + returns_early_hint(where, early_us) + seen;
  }
  return out + seen;
}

void require_process_writes() {
  Pipeline p({1000, 2, 3});
  std::optional<grader::Trace> trace;
  {
    grader::GpuWait wait("process, the first call");
    trace = grader::trace([&] { p.run(); });
  }
  if (trace && did_anything(*trace)) return;
  if (workbook::compare_to_reference(p.out.data(), p.expected.data(), p.shape.n, workbook::Tolerance{}).unwritten ==
      p.shape.n) {
    grader::wrote_nothing("process(n = 1000, 2 streams, 3 chunks) returned and wrote nothing: " +
                              grader::untouched_output("host_out", 1000, false) + "; it ran nothing on the GPU",
                          trace);
  }
}

// ============================ Task 2: compute_then_copy ============================

std::string ordering_errors(const TwoStages& s, const grader::Trace& t) {
  std::uint64_t kernel_end = 0, copy_start = UINT64_MAX;
  for (const auto& k : t.program_kernels()) kernel_end = std::max(kernel_end, k.end_ns);
  for (const auto& c : t.copies) {
    if (c.direction == grader::CopyDirection::DeviceToHost) copy_start = std::min(copy_start, c.start_ns);
  }
  const bool early = kernel_end > 0 && copy_start < kernel_end;
  const std::string when = early ? "the copy to host_out started " + std::to_string((kernel_end - copy_start) / 1000) +
                                       " us before the kernel ended; "
                                 : "";
  // Every wait queued on `copy`, and where its event was last recorded before it. The launch of
  // the kernel on `compute` is the point a right wait follows.
  std::size_t waits_on_copy = 0, launch = t.calls.size();
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    if (grader::is_kernel_launch(t.calls[i].name) && t.calls[i].stream == s.compute.get()) launch = std::min(launch, i);
  }
  bool waits_after_kernel = false, waits_before_kernel = false;
  cudaStream_t elsewhere = nullptr;
  bool waits_elsewhere = false;
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    const auto& c = t.calls[i];
    if (c.name != "cudaStreamWaitEvent" || c.stream != s.copy.get()) continue;
    ++waits_on_copy;
    const auto record = t.last_record(c.pointer, i);
    if (!record) continue;
    if (record->stream == s.compute.get()) {
      (record->call > launch ? waits_after_kernel : waits_before_kernel) = true;
    } else {
      waits_elsewhere = true;
      elsewhere = record->stream;
    }
  }
  // Evidence: `copy` waited on events, and none of them was recorded on `compute` (an extra wait
  // beside a right one proves nothing).
  if (waits_elsewhere && !waits_after_kernel && !waits_before_kernel) {
    return grader::hint(HintId::event_wrong_stream,
                        when + "`copy` waited on an event recorded on " + grader::stream_text(elsewhere) + ", and on "
                        "none recorded on `compute`. An event marks a point in the stream it is recorded on; record "
                        "it on `compute`, after the kernel, for `copy` to wait for the kernel.");
  }
  // A fact of the call order: the only events `copy` waited on from `compute` were recorded there
  // before the kernel was launched, so those waits could end before the kernel began.
  if (waits_before_kernel && !waits_after_kernel) {
    return when + "`copy` waited on an event recorded on `compute` before the kernel was launched there, so the "
                  "wait could end before the kernel began: record the event after the kernel.";
  }
  if (waits_on_copy == 0) {  // evidence: no cudaStreamWaitEvent on `copy` in the traced call
    return grader::hint(HintId::missing_wait,
                        when + "nothing made `copy` wait for `compute` (no cudaStreamWaitEvent on `copy`): streams "
                        "are independent queues, so the copy may run before the kernel has written device_out. Record "
                        "an event on `compute` after the kernel and make `copy` wait for it before the copy.");
  }
  return when;
}

// ============================ Task 3: transform_batches ============================

std::vector<std::size_t> offsets_of(const std::vector<std::size_t>& sizes) {
  std::vector<std::size_t> offsets{0};
  for (const std::size_t s : sizes) offsets.push_back(offsets.back() + s);
  return offsets;
}

std::vector<std::size_t> random_sizes(int count, std::size_t largest, const std::string& name) {
  std::vector<std::size_t> sizes;
  const std::uint64_t seed = grader::seed_for(name);
  for (int b = 0; b < count; ++b) sizes.push_back(1 + workbook::mix64(seed + std::uint64_t(b)) % largest);
  return sizes;
}

std::vector<std::vector<std::size_t>> batch_layouts() {
  std::vector<std::vector<std::size_t>> layouts{{1}, {2}, {3, 0, 5, 1, 0, 2}, {1000, 1, 999}};
  layouts.push_back(random_sizes(50, 70000, "task 3 layout"));
  if (!grader::sanitize_mode()) layouts.push_back({std::size_t(1) << 22, 12345});
  return layouts;
}

void batches_with_cudamalloc(const float* in, float* out, const std::size_t* offsets, int num_batches, int work,
                             cudaStream_t stream) {
  for (int b = 0; b < num_batches; ++b) {
    const std::size_t begin = offsets[b], count = offsets[b + 1] - begin;
    if (count == 0) continue;
    float* scratch = nullptr;
    WORKBOOK_CUDA_CHECK(cudaMalloc(&scratch, count * kFloat));
    streams::transform(in + begin, scratch, count, work, stream);
    streams::smooth(scratch, out + begin, count, stream);
    WORKBOOK_CUDA_CHECK(cudaFree(scratch));
  }
}

// ============================ Contracts ============================

grader::ContractCall process_call(Pipeline& p) {
  return {"process(" + shape_text(p.shape) + ")",
          {},
          {{"host_in", p.in.data(), p.shape.n * kFloat}, {"host_out", p.out.data(), p.shape.n * kFloat}},
          {{"n", double(p.shape.n)}, {"num_streams", p.shape.streams}, {"num_chunks", p.shape.chunks}}};
}

}  // namespace streams_grader
