// Grader tests for lesson 05 (streams: a chunked pipeline, two streams joined by an event,
// stream-ordered temporaries, and the pageable pipeline of the challenge).
//
// The kernels are the lesson's own (streams::transform and streams::smooth), so every result is
// compared bit for bit with the same kernels run by the grader in one piece. Host outputs are
// poisoned and guarded, device buffers guarded. What the tasks are about (which streams, which
// copies, which waits, which allocations) the tracer sees: each check says what it saw.
// Performance is a ratio of times taken in the same process: task 1 against the overlap bound
// max(copy in, kernel, copy out) with each stage timed alone, task 3 against the same loop with
// cudaMalloc and cudaFree, task 4 against the sequential pageable version.
#include "streams.hpp"

#include "contracts.hpp"
#include "diagnosis.hpp"
#include "grader.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using grader::HintId;

// The caller's own work: a kernel that keeps a stream busy for a while. (A kernel in a named
// namespace: nvcc's stubs for kernels in an anonymous namespace clash with Catch2's.)
namespace streams_grader {

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace streams_grader

namespace {

constexpr int kCheckWork = 8;           // correctness runs: a light kernel
constexpr std::size_t kHostGuard = 1024;  // floats of guard on each side of a host output
constexpr std::size_t kFloat = sizeof(float);

// Keeps \p stream busy for about \p ms milliseconds from when the GPU gets to it.
void spin(cudaStream_t stream, double ms) {
  streams_grader::spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(ms * 1e6));
  WORKBOOK_CHECK_LAUNCH();
}

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

std::vector<float> input_values(std::size_t n, const std::string& name) {
  return workbook::random_floats(n, grader::seed_for(name + " " + std::to_string(n)), -1.0f, 1.0f);
}

// transform(x) for every element, by the lesson's kernel in one launch: the bits a right
// answer has.
std::vector<float> transformed(const std::vector<float>& x, int work) {
  if (x.empty()) return {};
  workbook::DeviceBuffer<float> in(x.size()), out(x.size());
  in.copy_from_host(x.data());
  streams::transform(in.data(), out.data(), x.size(), work, nullptr);
  std::vector<float> y(x.size());
  out.copy_to_host(y.data());
  return y;
}

// Compares a host output with the expected bits, checks its guards, and returns the facts
// (empty when right).
std::string host_output_errors(const HostArray& out, const std::vector<float>& want, const std::string& what) {
  std::ostringstream msg;
  const workbook::GuardReport guards = out.guards();
  if (!guards.intact()) msg << what << " wrote outside host_out: " << guards.describe(out.size()) << ".\n";
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

bool is_host_device_copy(const grader::TracedCopy& c) {
  return c.direction == grader::CopyDirection::HostToDevice || c.direction == grader::CopyDirection::DeviceToHost;
}

// A trace without the grader's own kernels (the spin that keeps a stream busy), which run inside
// the traced work because the tracer waits for the GPU when it starts.
grader::Trace without_grader_work(grader::Trace t) {
  t.kernels.erase(std::remove_if(t.kernels.begin(), t.kernels.end(),
                                 [](const grader::TracedKernel& k) { return k.name.find("spin_kernel") != std::string::npos; }),
                  t.kernels.end());
  return t;
}

// The same for an optional trace.
std::optional<grader::Trace> without_grader_work(std::optional<grader::Trace> t) {
  if (t) return without_grader_work(std::move(*t));
  return t;
}

bool did_anything(const grader::Trace& t) { return !t.kernels.empty() || !t.copies.empty() || !t.memsets.empty(); }

// The work that ran on a legacy or per-thread default stream, described; empty when none did.
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

// A synchronous copy between host and device, described; empty when every copy was asynchronous.
std::string synchronous_copy(const grader::Trace& t) {
  for (const auto& c : t.copies) {
    if (is_host_device_copy(c) && !c.asynchronous) {
      return grader::direction_text(c.direction) + " of " + std::to_string(c.bytes) + " bytes" +
             (c.api.empty() ? "" : " by " + c.api);
    }
  }
  return "";
}

// A copy from or to pageable host memory, described; empty when none.
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

bool enqueues_work(const std::string& call) {
  return grader::is_kernel_launch(call) || call.rfind("cudaMemcpy", 0) == 0 || call.rfind("cudaMemset", 0) == 0;
}

// A wait for the GPU (stream, event, device) made after the call had queued work on one of its
// own streams and before it queued the last: a wait inside the loop. Empty when every wait came
// before the call's first work or after its last. (The call's streams are those its kernels and
// copies ran on; the grader's own kernel is not in the trace.)
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

// The latest end of any GPU work in the trace.
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

// ---- Timing. ----

// Median host time of \p work (which waits for its own GPU work) over \p samples runs after one
// untimed run. The host clock is right here: the functions timed return when their result is on
// the host.
workbook::TimingStats host_time(const std::function<void()>& work, int samples = 7) {
  work();
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return workbook::summarize_ms(ms);
}

// Median GPU time of \p work enqueued on a non-blocking stream of the grader's, by events.
double stream_ms(const std::function<void(cudaStream_t)>& work, int samples = 5) {
  workbook::Stream stream(cudaStreamNonBlocking);
  workbook::Event start, stop;
  work(stream.get());
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    start.record(stream.get());
    work(stream.get());
    stop.record(stream.get());
    stop.synchronize();
    ms.push_back(workbook::elapsed_ms(start, stop));
  }
  return workbook::summarize_ms(ms).median_ms;
}

// The `work` at which transform of n floats takes \p target_ms on this GPU: the kernel's time is
// close to a + b * work, measured at two points.
int work_for(const float* in, float* out, std::size_t n, double target_ms) {
  constexpr int kLow = 16, kHigh = 256;
  const double low = stream_ms([&](cudaStream_t s) { streams::transform(in, out, n, kLow, s); });
  const double high = stream_ms([&](cudaStream_t s) { streams::transform(in, out, n, kHigh, s); });
  const double per_step = std::max((high - low) / (kHigh - kLow), 1e-9);
  const double work = kLow + (target_ms - low) / per_step;
  return static_cast<int>(std::clamp(work, 1.0, 1e6));
}

// ============================ Task 1: process ============================

struct Shape {
  std::size_t n;
  int streams, chunks;
};

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
  // and the traced call returned before its last copy to the host ended.
  p.out.poison();
  const auto trace = grader::trace([&] { p.run(); });
  if (trace) {
    const std::uint64_t copied_back = last_copy_end(*trace, grader::CopyDirection::DeviceToHost);
    if (copied_back > trace->returned_ns) {
      return out + grader::hint(HintId::returns_early,
                                "process returned " + std::to_string((copied_back - trace->returned_ns) / 1000) +
                                " us before its last copy to host_out ended, so the caller read a half-written "
                                "host_out. Before returning, wait for each of your streams (cudaStreamSynchronize).") +
             seen_text(*trace);
    }
    return out + seen_text(*trace);
  }
  return out;
}

// process() once on 1000 floats, 2 streams, 3 chunks, traced: a call that ran nothing on the GPU
// and left host_out as the grader filled it ends the test as "wrote nothing", which the driver
// calls "not implemented yet" only when the task's code is still the skeleton.
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

TEST_CASE("Task 1: process gives every element for any n, number of streams and of chunks", "[task_1]") {
  grader::require_gpu();
  require_process_writes();
  for (const Shape& shape : pipeline_shapes()) {
    CAPTURE(shape_text(shape));
    Pipeline p(shape);
    {
      grader::GpuWait wait("process on " + shape_text(shape));
      p.run();
    }
    const std::string what = "process on " + shape_text(shape);
    std::string facts = host_output_errors(p.out, p.expected, what);
    facts += device_guard_errors(p.device_in, "device_in", what) + device_guard_errors(p.device_out, "device_out", what);
    if (!facts.empty()) FAIL(process_errors(p, facts));
  }
}

TEST_CASE("Task 1: process rejects fewer than one stream or chunk", "[task_1]") {
  grader::require_gpu();
  Pipeline p({1000, 2, 3});
  for (const auto& [streams, chunks] : {std::pair{0, 4}, std::pair{4, 0}, std::pair{-1, 1}}) {
    bool threw = false, threw_other = false;
    std::string what;
    try {
      streams::process(p.in.data(), p.out.data(), p.device_in.data(), p.device_out.data(), p.shape.n, kCheckWork,
                       streams, chunks);
    } catch (const std::invalid_argument&) {
      threw = true;
    } catch (const std::exception& e) {
      threw_other = true;
      what = e.what();
    }
    grader::synchronize("process with " + std::to_string(streams) + " streams and " + std::to_string(chunks) + " chunks");
    if (threw_other) {
      FAIL("process with num_streams = " << streams << " and num_chunks = " << chunks << " threw an exception, but "
           "not a std::invalid_argument (what(): \"" << what << "\"). streams.hpp promises std::invalid_argument "
           "for bad arguments, so a caller can tell them from a CUDA failure (std::runtime_error).");
    }
    if (!threw) {
      FAIL("process with num_streams = " << streams << " and num_chunks = " << chunks << " returned as if all was well. "
           "Bad arguments get an exception that says what was wrong (std::invalid_argument), never a crash, a hang "
           "or a silent nothing.");
    }
  }
}

TEST_CASE("Task 1: process copies asynchronously on streams of its own, and waits only for them", "[task_1]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const Shape shape{std::size_t(1) << 22, 4, 16};
  Pipeline p(shape);
  // A kernel as heavy as a chunk's copies, so that overlap can show.
  const std::size_t chunk = shape.n / std::size_t(shape.chunks);
  const double copy_ms = stream_ms([&](cudaStream_t s) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(p.device_in.data(), p.in.data(), chunk * kFloat, cudaMemcpyHostToDevice, s));
  });
  const int work = work_for(p.device_in.data(), p.device_out.data(), chunk, copy_ms);
  p.expected = transformed(std::vector<float>(p.in.data(), p.in.data() + shape.n), work);

  // The caller's own work, on a stream of its own: process must not wait for it.
  workbook::Stream caller(cudaStreamNonBlocking);
  constexpr double kCallerMs = 200;
  std::optional<grader::Trace> trace;
  bool caller_still_running = false;  // asked as soon as process returns (the tracer then waits for the GPU)
  {
    grader::GpuWait wait("process on " + shape_text(shape) + " while the caller's kernel runs");
    trace = grader::trace([&] {
      spin(caller.get(), kCallerMs);
      streams::process(p.in.data(), p.out.data(), p.device_in.data(), p.device_out.data(), shape.n, work,
                       shape.streams, shape.chunks);
      caller_still_running = cudaStreamQuery(caller.get()) == cudaErrorNotReady;
    });
  }
  // When the caller's kernel ended, by the GPU's clock (before its record is filtered out).
  std::uint64_t caller_end = 0;
  if (trace) {
    for (const auto& k : trace->kernels) {
      if (k.name.find("spin_kernel") != std::string::npos) caller_end = std::max(caller_end, k.end_ns);
    }
  }
  trace = without_grader_work(std::move(trace));
  caller.synchronize();
  if (const std::string facts = host_output_errors(p.out, p.expected, "process on " + shape_text(shape)); !facts.empty()) {
    FAIL(facts << (trace ? seen_text(*trace) : ""));
  }
  if (!trace) return;
  const std::string seen = seen_text(*trace);
  const std::string intro = "process on " + shape_text(shape) + " gave the right result, but ";
  // Each hint below: the right result, and the fact in its condition, seen in this trace.
  if (const std::uint64_t copied_back = last_copy_end(*trace, grader::CopyDirection::DeviceToHost);
      copied_back > trace->returned_ns) {
    FAIL(intro << "only because the grader waited for the GPU after it returned.\n"
         << grader::hint(HintId::returns_early,
                         "process returned " + std::to_string((copied_back - trace->returned_ns) / 1000) +
                         " us before its last copy to host_out ended, so a caller that reads host_out at once reads "
                         "it half-written. Before returning, wait for each of your streams (cudaStreamSynchronize).")
         << seen);
  }
  if (trace->count_calls("cudaDeviceSynchronize") > 0) {
    FAIL(intro << "it called cudaDeviceSynchronize.\n"
         << grader::hint(HintId::device_synchronize,
                         "cudaDeviceSynchronize waits for everything on the GPU, the caller's work on other streams "
                         "too: here the grader had a kernel of " + std::to_string(int(kCallerMs)) + " ms running on its "
                         "own stream, and process waited for it. Wait for your own streams "
                         "(cudaStreamSynchronize) or events instead.")
         << seen);
  }
  // Waiting for the caller is proven when all of its own work had ended before the caller's
  // kernel did and it still returned only after that kernel ended. (Its own work ending later,
  // on a GPU shared with other gradings, proves nothing.)
  if (!caller_still_running && caller_end > 0 && last_gpu_end(*trace) < caller_end && trace->returned_ns >= caller_end) {
    FAIL(intro << "it returned only after the caller's own kernel (" << kCallerMs << " ms, on another stream) had "
         "finished, " << (caller_end - last_gpu_end(*trace)) / 1000 << " us after its own work was done: it waited "
         "for work that was not its own. Wait for your own streams only." << seen);
  }
  if (const std::string where = default_stream_work(*trace); !where.empty()) {
    FAIL(intro << "it ran " << where << " on the default stream.\n"
         << grader::hint(HintId::default_stream,
                         "the legacy default stream waits for every blocking stream and they wait for it, so work "
                         "there runs alone: nothing overlaps it. Give every copy and kernel one of your own streams "
                         "(the last argument of cudaMemcpyAsync, the stream argument of transform).")
         << seen);
  }
  if (const std::string copy = synchronous_copy(*trace); !copy.empty()) {
    FAIL(intro << "it copied " << copy << ", a synchronous copy.\n"
         << grader::hint(HintId::synchronous_copy,
                         "cudaMemcpy returns only when the copy is done, and the host queues nothing else meanwhile, "
                         "so nothing overlaps it. cudaMemcpyAsync(dst, src, bytes, kind, stream) queues the copy on "
                         "the stream and returns at once.")
         << seen);
  }
  if (const std::string copy = pageable_copy(*trace); !copy.empty()) {
    FAIL(intro << "it copied " << copy << " through pageable host memory: host_in and host_out are pinned, so the "
         "data went through a buffer of your own. Copy straight from host_in and into host_out." << seen);
  }
  if (const std::string waits = wait_inside_loop(*trace); !waits.empty()) {
    FAIL(intro << "it made " << waits << ".\n"
         << grader::hint(HintId::sync_in_loop,
                         "a wait while chunks are still being queued holds the host until the work it waits for is "
                         "done, so the chunks after it are queued late and cannot overlap that work. Queue every "
                         "chunk first, then wait for your streams once, after the loop.")
         << seen);
  }
  if (kernel_streams(*trace).size() < 2) {
    FAIL(intro << "all its kernels ran on one stream, though it was given " << shape.streams << ".\n"
         << grader::hint(HintId::one_stream,
                         "work on one stream runs strictly in order, so the kernels ran one after another, and a "
                         "copy queued on that stream waits for the kernel before it. Spread the chunks over "
                         "num_streams streams of your own (chunk c on stream c % num_streams).")
         << seen);
  }
  if (kernel_streams(*trace).size() > std::size_t(shape.streams)) {
    FAIL(intro << "its kernels ran on " << kernel_streams(*trace).size() << " streams, more than the "
         << shape.streams << " it was given (num_streams)." << seen);
  }
  // The pipeline asked for: num_chunks chunks, one transform each, every element copied in once
  // and out once. Fewer, bigger chunks also give the right result, but not the overlap the call
  // was asked for (and the timing compares with that one).
  std::size_t transforms = 0;
  for (const auto& k : trace->program_kernels()) transforms += k.name.find("transform_kernel") != std::string::npos;
  const std::size_t want = std::min(shape.n, std::size_t(shape.chunks));
  if (transforms != want) {
    FAIL(intro << "it launched transform " << transforms << " times for num_chunks = " << shape.chunks
         << ": cut the data into num_chunks chunks (as many as there are elements, at most), one transform "
            "each." << seen);
  }
  const std::size_t bytes = shape.n * kFloat;
  const std::size_t in = trace->bytes_copied(grader::CopyDirection::HostToDevice);
  const std::size_t out = trace->bytes_copied(grader::CopyDirection::DeviceToHost);
  if (in != bytes || out != bytes) {
    FAIL(intro << "it copied " << in << " bytes to the device and " << out << " back, for " << bytes
         << " bytes of input: each element goes in once and comes back once." << seen);
  }
  if (trace->device_bytes_not_freed() > 0) {
    FAIL(intro << "it left " << trace->device_bytes_not_freed() << " bytes of device memory allocated." << seen);
  }
}

TEST_CASE("Task 1: process time against the overlap bound max(copy in, kernel, copy out)", "[task_1][perf]") {
  grader::require_gpu();
  const std::size_t n = workbook::fit_in_free_memory(std::size_t(1) << 26, 3);
  const Shape shape{n, 4, 32};  // 8 MiB chunks: copies near full speed, filling and draining 2/32 of the bound
  CAPTURE(shape_text(shape));
  HostArray in(n, true), out(n, true);
  workbook::DeviceBuffer<float> device_in(n), device_out(n);
  in.fill(input_values(n, "task 1 perf"));
  device_in.copy_from_host(in.data());

  // Each stage alone, on the grader's stream; the kernel made as long as the copy in.
  const double h2d_ms = stream_ms([&](cudaStream_t s) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device_in.data(), in.data(), n * kFloat, cudaMemcpyHostToDevice, s));
  });
  const int work = work_for(device_in.data(), device_out.data(), n, h2d_ms);
  // The expected result, from the lesson's kernel and a copy back by the grader.
  streams::transform(device_in.data(), device_out.data(), n, work, nullptr);
  WORKBOOK_CUDA_CHECK(cudaMemcpy(out.data(), device_out.data(), n * kFloat, cudaMemcpyDeviceToHost));
  const std::vector<float> want = [&] {
    std::vector<float> y(n);
    std::memcpy(y.data(), out.data(), n * kFloat);
    return y;
  }();
  out.poison();
  const auto run = [&] {
    grader::GpuWait wait("process on " + shape_text(shape));
    streams::process(in.data(), out.data(), device_in.data(), device_out.data(), n, work, shape.streams, shape.chunks);
  };
  run();
  if (const std::string facts = host_output_errors(out, want, "process on " + shape_text(shape)); !facts.empty()) {
    FAIL(facts << "A wrong result is not timed.");
  }
  // Copies over PCIe vary from moment to moment: with one measurement of each, one H100 run gave
  // the reference 0.78 of the bound and the plain student 1.24, another 0.94 and 0.93. So five
  // rounds, each timing the stages alone and then the pipeline, and the median round's figures.
  struct Round {
    double h2d, kernel, d2h, pipeline;
    double bound() const { return std::max({h2d, kernel, d2h}); }
    double fraction() const { return bound() / pipeline; }
  };
  std::vector<Round> rounds;
  for (int r = 0; r < 5; ++r) {
    Round round{};
    round.h2d = stream_ms([&](cudaStream_t s) {
      WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device_in.data(), in.data(), n * kFloat, cudaMemcpyHostToDevice, s));
    }, 3);
    round.kernel = stream_ms([&](cudaStream_t s) { streams::transform(device_in.data(), device_out.data(), n, work, s); }, 3);
    round.d2h = stream_ms([&](cudaStream_t s) {
      WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(out.data(), device_out.data(), n * kFloat, cudaMemcpyDeviceToHost, s));
    }, 3);
    round.pipeline = host_time(run, 3).median_ms;
    rounds.push_back(round);
  }
  std::sort(rounds.begin(), rounds.end(), [](const Round& a, const Round& b) { return a.fraction() < b.fraction(); });
  const Round& median = rounds[rounds.size() / 2];
  const double sequential = median.h2d + median.kernel + median.d2h;
  grader::record_metric("n", double(n));
  grader::record_metric("streams", shape.streams);
  grader::record_metric("chunks", shape.chunks);
  grader::record_metric("work", work);
  grader::record_metric("h2d_ms", median.h2d);
  grader::record_metric("kernel_ms", median.kernel);
  grader::record_metric("d2h_ms", median.d2h);
  grader::record_metric("bound_ms", median.bound());
  grader::record_metric("sequential_ms", sequential);
  grader::record_metric("median_ms", median.pipeline);
  grader::record_metric("lowest_round_fraction", rounds.front().fraction());
  grader::record_metric("highest_round_fraction", rounds.back().fraction());
  grader::record_metric("speedup_over_sequential", sequential / median.pipeline);
  grader::record_metric("fraction_of_overlap_bound", median.fraction());
  // The bound assumes that the copies in and out run at once, which takes two copy engines or
  // more. With one they take turns, and no pipeline reaches 0.5 of this bound: the figure says
  // which case a grading ran in (grader/README.md, "Thresholds on the students' GPUs").
  int device = 0, copy_engines = 0;
  WORKBOOK_CUDA_CHECK(cudaGetDevice(&device));
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&copy_engines, cudaDevAttrAsyncEngineCount, device));
  grader::record_metric("copy_engines", copy_engines);
}

// ============================ Task 2: compute_then_copy ============================

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

// The stream an event was last recorded on before the i-th call of the trace; false when none.
bool recorded_on(const grader::Trace& t, std::size_t before, const void* event, cudaStream_t* stream) {
  bool found = false;
  for (std::size_t i = 0; i < before && i < t.calls.size(); ++i) {
    const auto& c = t.calls[i];
    if ((c.name == "cudaEventRecord" || c.name == "cudaEventRecordWithFlags") && c.pointer == event) {
      *stream = c.stream;
      found = true;
    }
  }
  return found;
}

// Why the copy did not wait for the kernel: what the calls show about the events (the evidence),
// and when the copy ran if the timeline shows it too. Empty when the copy was ordered after the
// kernel and ran after it.
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
  std::size_t waits_on_copy = 0;
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    const auto& c = t.calls[i];
    if (c.name != "cudaStreamWaitEvent" || c.stream != s.copy.get()) continue;
    ++waits_on_copy;
    cudaStream_t where = nullptr;
    // Evidence: `copy` waits on an event whose last record before the wait was on another stream.
    if (recorded_on(t, i, c.pointer, &where) && where != s.compute.get()) {
      return grader::hint(HintId::event_wrong_stream,
                          when + "`copy` waited on an event recorded on " + grader::stream_text(where) + ", not on "
                          "`compute`. An event marks a point in the stream it is recorded on; record it on `compute`, "
                          "after the kernel, for `copy` to wait for the kernel.");
    }
  }
  if (waits_on_copy == 0) {  // evidence: no cudaStreamWaitEvent on `copy` in the traced call
    return grader::hint(HintId::missing_wait,
                        when + "nothing made `copy` wait for `compute` (no cudaStreamWaitEvent on `copy`): streams "
                        "are independent queues, so the copy may run before the kernel has written device_out. Record "
                        "an event on `compute` after the kernel and make `copy` wait for it before the copy.");
  }
  return early ? when + "was the event recorded on `compute` before the kernel was launched?" : "";
}

TEST_CASE("Task 2: compute_then_copy's copy waits for the kernel, for every n", "[task_2]") {
  grader::require_gpu();
  {
    TwoStages probe(1000);
    std::optional<grader::Trace> trace = grader::trace([&] {
      probe.run();
      grader::synchronize("compute_then_copy, the first call");
    });
    const bool untouched = workbook::compare_to_reference(probe.host_out.data(), probe.expected.data(), probe.n,
                                                          workbook::Tolerance{}).unwritten == probe.n;
    if (untouched && !(trace && did_anything(*trace))) {
      grader::wrote_nothing("compute_then_copy(n = 1000) returned and wrote nothing: " +
                                grader::untouched_output("host_out", 1000, false) + "; it ran nothing on the GPU",
                            trace);
    }
  }
  std::vector<std::size_t> sizes{1, 1000, 65537, (std::size_t(1) << 20) + 3};
  if (!grader::sanitize_mode()) sizes.push_back((std::size_t(1) << 22) + 1);
  for (const std::size_t n : sizes) {
    CAPTURE(n);
    TwoStages s(n);
    // The kernel starts late (the compute stream is busy first), so a copy that does not wait
    // for it reads device_out before the kernel wrote it.
    spin(s.compute.get(), 5);
    s.run();
    {
      grader::GpuWait wait("the copy stream after compute_then_copy on n = " + std::to_string(n));
      WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(s.copy.get()));
    }
    std::string facts = host_output_errors(s.host_out, s.expected, "compute_then_copy on n = " + std::to_string(n) +
                                                                       ", read once the copy stream was done");
    grader::synchronize("compute_then_copy on n = " + std::to_string(n));
    facts += device_guard_errors(s.out, "device_out", "compute_then_copy");
    if (facts.empty()) continue;
    // Again under the tracer, to see the order of things.
    s.host_out.poison();
    s.out.poison();
    const auto trace = without_grader_work(grader::trace([&] {
      spin(s.compute.get(), 5);
      s.run();
    }));
    if (trace) FAIL(facts << ordering_errors(s, *trace) << seen_text(*trace));
    FAIL(facts);
  }
}

TEST_CASE("Task 2: compute_then_copy runs on its two streams and returns before the GPU is done", "[task_2]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  TwoStages s((std::size_t(1) << 20) + 3);
  constexpr double kBusyMs = 20;
  std::optional<grader::Trace> trace;
  {
    grader::GpuWait wait("compute_then_copy while the compute stream is busy");
    trace = without_grader_work(grader::trace([&] {
      spin(s.compute.get(), kBusyMs);
      s.run();
    }));
  }
  if (!trace) return;
  const std::string seen = seen_text(*trace);
  const std::string intro = "compute_then_copy (its compute stream busy for " + std::to_string(int(kBusyMs)) +
                            " ms before the call) ";
  // Evidence for host-waits: the call made a stream, event or device wait.
  if (const auto waits = trace->synchronizations(); !waits.empty()) {
    FAIL(intro << "made the host wait (" << waits[0] << ").\n"
         << grader::hint(HintId::host_waits,
                         "the host stopped until the GPU was done, though nothing on the host needed the result: "
                         "the waiting belongs on the GPU. Order the streams with an event (cudaEventRecord on one, "
                         "cudaStreamWaitEvent on the other) and return at once.")
         << seen);
  }
  if (last_gpu_end(*trace) <= trace->returned_ns) {
    FAIL(intro << "returned only after the GPU had finished its work: it must return while the GPU is still busy."
         << seen);
  }
  for (const auto& k : trace->program_kernels()) {
    if (k.stream_known && k.stream != s.compute.get()) {
      FAIL(intro << "ran " << grader::launch_text(k) << " on " << grader::stream_text(k.stream)
           << ", not on `compute` (" << grader::stream_text(s.compute.get()) << ")." << seen);
    }
  }
  if (trace->program_kernels().empty()) FAIL(intro << "launched no kernel." << seen);
  bool copied = false;
  for (const auto& c : trace->copies) {
    if (c.direction != grader::CopyDirection::DeviceToHost) continue;
    copied = true;
    if (c.stream_known && c.stream != s.copy.get()) {
      FAIL(intro << "copied device_out to the host on " << grader::stream_text(c.stream) << ", not on `copy` ("
           << grader::stream_text(s.copy.get()) << ")." << seen);
    }
    if (!c.asynchronous) FAIL(intro << "copied device_out to the host with a synchronous copy." << seen);
  }
  if (!copied) FAIL(intro << "copied nothing to the host." << seen);
  if (const std::string order = ordering_errors(s, *trace); !order.empty()) FAIL(intro << "ran out of order: " << order << seen);
  if (trace->count_calls("cudaStreamWaitEvent") == 0) {
    FAIL(intro << "never called cudaStreamWaitEvent: what orders the copy after the kernel?" << seen);
  }
  // Events created and not destroyed, in a second call: an event made once and kept for every
  // call is not a leak, one more each call is.
  grader::synchronize("compute_then_copy");
  const auto again = grader::trace([&] { s.run(); });
  const grader::Trace& second = again ? *again : *trace;
  const std::size_t created = second.count_calls("cudaEventCreate") + second.count_calls("cudaEventCreateWithFlags");
  const std::size_t destroyed = second.count_calls("cudaEventDestroy");
  if (created > destroyed) {  // evidence: a second call created more events than it destroyed
    FAIL(intro << "created " << created << " event" << (created > 1 ? "s" : "") << " and destroyed " << destroyed
         << " in a second call.\n"
         << grader::hint(HintId::event_leak,
                         "every call leaves an event behind; a program that calls it in a loop runs out. Destroy the "
                         "event before returning: cudaEventDestroy right after cudaStreamWaitEvent is allowed, the "
                         "wait still happens.")
         << seen);
  }
}

// ============================ Task 3: transform_batches ============================

// Batch boundaries: offsets[0] = 0, offsets[b + 1] - offsets[b] = sizes[b].
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

std::vector<std::vector<std::size_t>> batch_layouts() {
  std::vector<std::vector<std::size_t>> layouts{{1}, {2}, {3, 0, 5, 1, 0, 2}, {1000, 1, 999}};
  layouts.push_back(random_sizes(50, 70000, "task 3 layout"));
  if (!grader::sanitize_mode()) layouts.push_back({std::size_t(1) << 22, 12345});
  return layouts;
}

TEST_CASE("Task 3: transform_batches gives every batch's result", "[task_3]") {
  grader::require_gpu();
  {
    Batches probe({1000, 2000}, kCheckWork);
    const auto trace = grader::trace([&] {
      probe.run();
      grader::synchronize("transform_batches, the first call");
    });
    const auto got = probe.out.download();
    const bool untouched = workbook::compare_to_reference(got.data(), probe.expected.data(), probe.n,
                                                          workbook::Tolerance{}).unwritten == probe.n;
    if (untouched && !(trace && did_anything(*trace))) {
      grader::wrote_nothing("transform_batches(2 batches of 1000 and 2000 floats) returned and wrote nothing: " +
                                grader::untouched_output("device_out", probe.n, false) + "; it ran nothing on the GPU",
                            trace);
    }
  }
  for (const auto& sizes : batch_layouts()) {
    Batches b(sizes, kCheckWork);
    CAPTURE(b.text());
    b.run();
    grader::synchronize("transform_batches on " + b.text());
    const auto got = b.out.download();
    const auto report = workbook::compare_to_reference(got.data(), b.expected.data(), b.n, workbook::Tolerance{});
    std::string facts = device_guard_errors(b.out, "device_out", "transform_batches on " + b.text());
    if (!report.ok()) {
      facts += "transform_batches on " + b.text() + ": " + std::to_string(report.wrong) + " of " +
               std::to_string(b.n) + " elements are wrong (each batch is smoothed on its own: its first and last "
               "elements repeat themselves, never a neighbour from another batch).\n" + report.describe();
    }
    if (!facts.empty()) FAIL(facts);
  }
}

TEST_CASE("Task 3: transform_batches allocates in stream order, waits for nothing and frees everything", "[task_3]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  Batches b(random_sizes(64, 50000, "task 3 trace"), kCheckWork);
  const auto trace = grader::trace([&] { b.run(); });
  grader::synchronize("transform_batches on " + b.text());
  if (!trace) return;
  const std::string seen = seen_text(*trace);
  const std::string intro = "transform_batches on " + b.text() + " ";
  const std::size_t async_allocations =
      trace->count_calls("cudaMallocAsync") + trace->count_calls("cudaMallocFromPoolAsync");
  const std::size_t frees = trace->count_calls("cudaFree");
  // Evidence for synchronous-free: stream-ordered allocations and cudaFree, and no cudaMalloc: only
  // then can the cudaFree calls have freed stream-ordered memory; with both, the next check's hint
  // (synchronous-malloc: any cudaMalloc or cudaFree) covers them.
  if (async_allocations > 0 && frees > 0 && trace->count_calls("cudaMalloc") == 0) {
    FAIL(intro << "allocated in stream order but freed with cudaFree (" << frees << " calls).\n"
         << grader::hint(HintId::synchronous_free,
                         "cudaFree does not wait for the kernels queued before it when the memory came from "
                         "cudaMallocAsync: the buffer goes back to the pool while they may still use it, and the "
                         "next allocation can hand it out again (a use after free that shows only now and then). "
                         "cudaFreeAsync(p, stream) queues the free behind the kernels that use the buffer.")
         << seen);
  }
  if (trace->count_calls("cudaMalloc") > 0 || frees > 0) {
    FAIL(intro << "called cudaMalloc " << trace->count_calls("cudaMalloc") << " times and cudaFree " << frees
         << " times.\n"
         << grader::hint(HintId::synchronous_malloc,
                         "cudaMalloc and cudaFree are not stream-ordered: cudaFree waits for the whole device, so "
                         "the host and the GPU take turns, batch after batch. cudaMallocAsync and cudaFreeAsync on "
                         "the stream give the temporary from a pool, with no wait.")
         << seen);
  }
  if (const auto waits = trace->synchronizations(); !waits.empty()) {  // a stream, event or device wait
    FAIL(intro << "made the host wait (" << waits[0] << ").\n"
         << grader::hint(HintId::host_waits,
                         "the host stopped until the GPU was done, though nothing on the host needed the result: in "
                         "stream order a buffer is freed after the kernels queued before the free, with no wait.")
         << seen);
  }
  if (async_allocations == 0) {
    FAIL(intro << "allocated no temporary in stream order (cudaMallocAsync or cudaMallocFromPoolAsync): the "
         "task is to give each batch its temporary from a pool, as CuPy does." << seen);
  }
  if (trace->device_bytes_not_freed() > 0) {  // evidence: allocations of the call's own left unfreed
    FAIL(intro << "left " << trace->allocations_not_freed() << " allocation(s), " << trace->device_bytes_not_freed()
         << " bytes, never freed.\n"
         << grader::hint(HintId::batch_leak,
                         "memory from cudaMallocAsync stays taken until cudaFreeAsync (or cudaFree) gives it back; "
                         "each call loses its temporaries, and a program that calls it in a loop runs out of "
                         "memory. Free each temporary on the stream once its last kernel is queued.")
         << seen);
  }
  for (const auto& k : trace->program_kernels()) {
    if (k.stream_known && k.stream != b.stream.get()) {
      FAIL(intro << "ran " << grader::launch_text(k) << " on " << grader::stream_text(k.stream)
           << ", not on the stream it was given." << seen);
    }
  }
  for (const auto& c : trace->calls) {
    if ((c.name == "cudaMallocAsync" || c.name == "cudaMallocFromPoolAsync" || c.name == "cudaFreeAsync") &&
        c.stream != b.stream.get()) {
      FAIL(intro << "called " << c.name << " on " << grader::stream_text(c.stream) << ", not on the stream it was "
           "given: the temporary must come and go in the order of that stream's kernels." << seen);
    }
  }
}

// The loop of task 3 with cudaMalloc and cudaFree for every batch: what the task is timed against.
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

TEST_CASE("Task 3: transform_batches time against cudaMalloc and cudaFree per batch", "[task_3][perf]") {
  grader::require_gpu();
  Batches b(random_sizes(200, 1 << 18, "task 3 perf"), 1);
  b.run();
  grader::synchronize("transform_batches on " + b.text());
  const auto got = b.out.download();
  if (!workbook::compare_to_reference(got.data(), b.expected.data(), b.n, workbook::Tolerance{}).ok()) {
    FAIL("transform_batches on " << b.text() << " gave a wrong result: a wrong result is not timed.");
  }
  // Both waited for at the end of each sample: the whole loop, GPU work included.
  const auto student = host_time([&] {
    grader::GpuWait wait("transform_batches on " + b.text());
    b.run();
    WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(b.stream.get()));
  });
  const auto baseline = host_time([&] {
    batches_with_cudamalloc(b.in.data(), b.out.data(), b.offsets.data(), b.batches(), b.work, b.stream.get());
    WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(b.stream.get()));
  });
  grader::record_metric("batches", b.batches());
  grader::record_metric("n", double(b.n));
  grader::record_metric("median_ms", student.median_ms);
  grader::record_metric("cudamalloc_ms", baseline.median_ms);
  grader::record_metric("speedup_over_cudamalloc", baseline.median_ms / student.median_ms);
}

// ============================ Task 4: process_pageable ============================

struct Staged {
  Staged(std::size_t n, std::size_t staging_floats, int work, const std::string& name)
      : n(n), work(work), in(n, false), out(n, false), staging(staging_floats, true),
        device_in(std::max<std::size_t>(n, 1)), device_out(std::max<std::size_t>(n, 1)) {
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

TEST_CASE("Task 4: process_pageable gives every element for any n and staging size", "[task_4]") {
  grader::require_gpu();
  {
    Staged probe(1000, 4096, kCheckWork, "task 4");
    std::optional<grader::Trace> trace;
    {
      grader::GpuWait wait("process_pageable, the first call");
      trace = grader::trace([&] { probe.run(); });
    }
    const bool untouched = workbook::compare_to_reference(probe.out.data(), probe.expected.data(), probe.n,
                                                          workbook::Tolerance{}).unwritten == probe.n;
    if (untouched && !(trace && did_anything(*trace))) {
      grader::wrote_nothing("process_pageable(n = 1000, 4096 staging floats) returned and wrote nothing: " +
                                grader::untouched_output("host_out", 1000, false) + "; it ran nothing on the GPU",
                            trace);
    }
  }
  struct StagedShape {
    std::size_t n, staging;
    int work;
  };
  // The last shapes run a heavy kernel, so the GPU falls behind the host: a slot the host refills
  // (or reads) before the GPU is done with it shows.
  std::vector<StagedShape> shapes{{1, 4096, kCheckWork}, {1000, 4096, kCheckWork}, {4099, 5000, kCheckWork},
                                  {70001, 4096, kCheckWork}, {(std::size_t(1) << 20) + 3, std::size_t(1) << 16, kCheckWork},
                                  {(std::size_t(1) << 18) + 5, 4096, 20000}};
  if (!grader::sanitize_mode()) {
    shapes.push_back({std::size_t(3) << 21, std::size_t(1) << 20, kCheckWork});
    shapes.push_back({(std::size_t(1) << 20) + 3, std::size_t(1) << 16, 20000});
  }
  for (const auto& [n, staging, work] : shapes) {
    Staged s(n, staging, work, "task 4");
    CAPTURE(s.text());
    {
      grader::GpuWait wait("process_pageable on " + s.text());
      s.run();
    }
    std::string facts = host_output_errors(s.out, s.expected, "process_pageable on " + s.text());
    const workbook::GuardReport staging_guards = s.staging.guards();
    if (!staging_guards.intact()) {
      facts += "process_pageable wrote outside `staging`: " + staging_guards.describe(s.staging.size()) + ".\n";
    }
    facts += device_guard_errors(s.device_out, "device_out", "process_pageable on " + s.text());
    if (!facts.empty()) FAIL(facts);
  }
}

TEST_CASE("Task 4: process_pageable copies through pinned staging, on streams of its own", "[task_4]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  Staged s(std::size_t(1) << 22, std::size_t(1) << 18, kCheckWork, "task 4 trace");
  // Kernels four times as long as the pageable copy in, in all: whatever the chunk size, a chunk's
  // kernel outlasts the host's memcpy of the next chunk, so a pipeline shows overlap.
  const double copy_ms = stream_ms([&](cudaStream_t st) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(s.device_in.data(), s.in.data(), s.n * kFloat, cudaMemcpyHostToDevice, st));
  }, 3);
  s.work = work_for(s.device_in.data(), s.device_out.data(), s.n, 4 * copy_ms);
  s.expected = transformed(std::vector<float>(s.in.data(), s.in.data() + s.n), s.work);
  std::optional<grader::Trace> trace;
  {
    grader::GpuWait wait("process_pageable on " + s.text());
    trace = grader::trace([&] { s.run(); });
  }
  if (const std::string facts = host_output_errors(s.out, s.expected, "process_pageable on " + s.text()); !facts.empty()) {
    FAIL(facts << (trace ? seen_text(*trace) : ""));
  }
  if (!trace) return;
  const std::string seen = seen_text(*trace);
  const std::string intro = "process_pageable on " + s.text() + " gave the right result, but ";
  // Each hint below: the right result, and the fact in its condition, seen in this trace.
  if (const std::string copy = pageable_copy(*trace); !copy.empty()) {
    FAIL(intro << "it copied " << copy << " from pageable memory.\n"
         << grader::hint(HintId::pageable_copy,
                         "a copy from pageable memory is not asynchronous, even through cudaMemcpyAsync: the "
                         "driver copies it through a pinned buffer of its own and the call returns only when the "
                         "host side is done, so the host queues nothing meanwhile. Copy each chunk into the pinned "
                         "`staging` buffer yourself (memcpy) and copy from there.")
         << seen);
  }
  if (trace->count_calls("cudaDeviceSynchronize") > 0) {
    FAIL(intro << "it called cudaDeviceSynchronize.\n"
         << grader::hint(HintId::device_synchronize,
                         "cudaDeviceSynchronize waits for everything on the GPU, other streams' work too. Wait for "
                         "the event of the slot you are about to reuse (cudaEventSynchronize), no more.")
         << seen);
  }
  if (const std::string where = default_stream_work(*trace); !where.empty()) {
    FAIL(intro << "it ran " << where << " on the default stream.\n"
         << grader::hint(HintId::default_stream,
                         "the legacy default stream waits for every blocking stream and they wait for it, so work "
                         "there runs alone: nothing overlaps it. Give every copy and kernel one of your own streams.")
         << seen);
  }
  if (const std::string copy = synchronous_copy(*trace); !copy.empty()) {
    FAIL(intro << "it copied " << copy << ", a synchronous copy: nothing overlaps it. Use cudaMemcpyAsync on your "
         "streams." << seen);
  }
}

TEST_CASE("Task 4: process_pageable time against the sequential pageable version", "[task_4][perf]") {
  grader::require_gpu();
  const std::size_t n = workbook::fit_in_free_memory(std::size_t(1) << 25, 3);
  const std::size_t staging_floats = std::size_t(1) << 21;  // 8 MiB
  Staged s(n, staging_floats, 1, "task 4 perf");
  // The kernel made as long as a pageable copy in: then the sequential version spends a third
  // of its time in each stage, and overlapping them can save up to two thirds.
  const double h2d_ms = stream_ms([&](cudaStream_t st) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(s.device_in.data(), s.in.data(), n * kFloat, cudaMemcpyHostToDevice, st));
  }, 3);
  s.work = work_for(s.device_in.data(), s.device_out.data(), n, h2d_ms);
  s.expected = transformed(std::vector<float>(s.in.data(), s.in.data() + n), s.work);
  const auto run = [&] {
    grader::GpuWait wait("process_pageable on " + s.text());
    s.run();
  };
  run();
  if (const std::string facts = host_output_errors(s.out, s.expected, "process_pageable on " + s.text()); !facts.empty()) {
    FAIL(facts << "A wrong result is not timed.");
  }
  const auto student = host_time(run, 5);
  // The sequential version: copy in, kernel, copy out, from and to the same pageable memory.
  workbook::Stream stream(cudaStreamNonBlocking);
  const auto sequential = host_time([&] {
    WORKBOOK_CUDA_CHECK(cudaMemcpy(s.device_in.data(), s.in.data(), n * kFloat, cudaMemcpyHostToDevice));
    streams::transform(s.device_in.data(), s.device_out.data(), n, s.work, stream.get());
    WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    WORKBOOK_CUDA_CHECK(cudaMemcpy(s.out.data(), s.device_out.data(), n * kFloat, cudaMemcpyDeviceToHost));
  }, 5);
  grader::record_metric("n", double(n));
  grader::record_metric("staging_floats", double(staging_floats));
  grader::record_metric("work", s.work);
  grader::record_metric("h2d_pageable_ms", h2d_ms);
  grader::record_metric("median_ms", student.median_ms);
  grader::record_metric("sequential_ms", sequential.median_ms);
  grader::record_metric("speedup_over_pageable_sequential", sequential.median_ms / student.median_ms);
}

}  // namespace

// ============================ Contracts, at every shape ============================
// Each function's contract (contracts.hpp) held against a traced call at every shape the
// correctness tests use. One untraced call comes first: a stream or event made once and kept for
// later calls is not left behind by each call; one made by every call is. These run after the
// tests above, whose verdicts say more where they apply.

namespace {

grader::ContractCall process_call(Pipeline& p) {
  return {"process(" + shape_text(p.shape) + ")",
          {},
          {{"host_in", p.in.data(), p.shape.n * kFloat}, {"host_out", p.out.data(), p.shape.n * kFloat}},
          {{"n", double(p.shape.n)}, {"num_streams", p.shape.streams}, {"num_chunks", p.shape.chunks}}};
}

// Runs \p work once untraced, then traced, and holds the second call to \p contract.
template <class Work>
void require_contract_kept(const grader::Contract& contract, const grader::ContractCall& call, const std::string& wait,
                           Work work) {
  {
    grader::GpuWait w(wait + " (untraced)");
    work();
  }
  grader::synchronize(wait + " (untraced)");
  std::optional<grader::Trace> trace;
  {
    grader::GpuWait w(wait);
    trace = grader::trace(work);
  }
  grader::require_contract(contract, call, trace);
}

}  // namespace

TEST_CASE("Task 1: process keeps its contract for any n, number of streams and of chunks", "[task_1]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = streams_grader::process_contract();
  for (const Shape& shape : pipeline_shapes()) {
    CAPTURE(shape_text(shape));
    Pipeline p(shape);
    require_contract_kept(contract, process_call(p), "process on " + shape_text(shape), [&] { p.run(); });
  }
}

TEST_CASE("Task 2: compute_then_copy keeps its contract for every n", "[task_2]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = streams_grader::compute_then_copy_contract();
  for (const std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(65537), (std::size_t(1) << 20) + 3}) {
    CAPTURE(n);
    TwoStages s(n);
    const grader::ContractCall call{"compute_then_copy(n = " + std::to_string(n) + ")",
                                    {s.compute.get(), s.copy.get()},
                                    {{"host_out", s.host_out.data(), n * kFloat}},
                                    {{"n", double(n)}}};
    require_contract_kept(contract, call, "compute_then_copy on n = " + std::to_string(n), [&] { s.run(); });
  }
}

TEST_CASE("Task 3: transform_batches keeps its contract for every batch layout", "[task_3]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = streams_grader::transform_batches_contract();
  for (const auto& sizes : batch_layouts()) {
    Batches b(sizes, kCheckWork);
    CAPTURE(b.text());
    const grader::ContractCall call{"transform_batches(" + b.text() + ")", {b.stream.get()}, {}, {{"n", double(b.n)}}};
    require_contract_kept(contract, call, "transform_batches on " + b.text(), [&] { b.run(); });
  }
}

TEST_CASE("Task 4: process_pageable keeps its contract for any n and staging size", "[task_4]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = streams_grader::process_pageable_contract();
  for (const auto& [n, staging] : {std::pair{std::size_t(1), std::size_t(4096)}, std::pair{std::size_t(4099), std::size_t(5000)},
                                   std::pair{std::size_t(70001), std::size_t(4096)},
                                   std::pair{(std::size_t(1) << 20) + 3, std::size_t(1) << 16}}) {
    Staged s(n, staging, kCheckWork, "task 4 contract");
    CAPTURE(s.text());
    const grader::ContractCall call{"process_pageable(" + s.text() + ")",
                                    {},
                                    {{"host_in", s.in.data(), n * kFloat},
                                     {"host_out", s.out.data(), n * kFloat},
                                     {"staging", s.staging.data(), s.staging.size() * kFloat}},
                                    {{"n", double(n)}}};
    require_contract_kept(contract, call, "process_pageable on " + s.text(), [&] { s.run(); });
  }
}
