/// \file
/// What a student's call did on the GPU: the tracer records every kernel it launched (name,
/// grid, block, stream, GPU start and end), every copy (direction, bytes, pageable or pinned
/// host memory, stream, synchronous or not), every memset, and the CUDA runtime calls it made
/// (allocations and frees with their sizes, synchronisations, event records), so the grader
/// can judge host functions by what they did, not only by the numbers they left behind.
///
/// How: CUPTI, which ships with the CUDA Toolkit. Activity records give the GPU side (kernels,
/// copies, memsets, with GPU timestamps); runtime-API callbacks give the calls and their
/// parameters; the launch callbacks tell which binary launched each kernel (the grader
/// program itself, or a library such as cuBLAS). Link-time wrapping (lesson 03's
/// cublas_spy.hpp) covers what CUPTI cannot name: which library function was called.
///
/// Only one tool can hold CUPTI per process: under compute-sanitizer (./grade --sanitize)
/// trace() runs the work untraced and returns nothing, and checks built on it are skipped.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace grader {

/// Which way a copy went.
enum class CopyDirection { HostToDevice, DeviceToHost, DeviceToDevice, HostToHost, Other };

/// Where one side of a copy lived.
enum class MemoryKind { Pageable, Pinned, Device, Managed, Other };

/// One kernel that ran.
struct TracedKernel {
  std::string name;         ///< demangled, without parameters: "vector_add", "cub::...::DeviceReduceKernel"
  std::string signature;    ///< demangled with parameters (or the raw name when it does not demangle)
  dim3 grid, block;         ///< launch configuration
  std::size_t shared_bytes = 0;   ///< shared memory per block, static and dynamic
  cudaStream_t stream = nullptr;  ///< the stream handle given at launch, when the launch was seen
  bool stream_known = false;      ///< false for launches the callbacks did not see (graph replays)
  std::uint32_t stream_id = 0;    ///< CUPTI's id of the stream it ran on
  std::uint64_t start_ns = 0, end_ns = 0;  ///< GPU timestamps
  std::string launched_by;  ///< "" when the grader program (the student's code) launched it, else the library's file name
  bool origin_known = true; ///< false when no launch call was seen for it or its caller was not found
  bool from_graph = false;  ///< a node of a CUDA graph: launched_by and stream are those of its cudaGraphLaunch
  /// True when the program's own code launched it (not a shared library such as cuBLAS).
  bool from_program() const { return origin_known && launched_by.empty(); }
  /// True when a shared library (cuBLAS, ...) launched it.
  bool from_library() const { return origin_known && !launched_by.empty(); }
  /// GPU time in milliseconds.
  double ms() const { return (end_ns - start_ns) * 1e-6; }
};

/// One copy between memories.
struct TracedCopy {
  CopyDirection direction = CopyDirection::Other;
  MemoryKind source = MemoryKind::Other, destination = MemoryKind::Other;
  std::size_t bytes = 0;
  bool asynchronous = false;      ///< issued by an Async call (CUPTI's async flag)
  cudaStream_t stream = nullptr;  ///< the stream handle given, when the call was seen
  bool stream_known = false;
  std::uint32_t stream_id = 0;
  std::string api;                ///< the runtime call that issued it ("cudaMemcpy", "cudaGraphLaunch"), when seen
  const void* source_pointer = nullptr;       ///< the host or device address the call copied from, when seen
  const void* destination_pointer = nullptr;  ///< the address it copied to, when seen
  std::uint64_t start_ns = 0, end_ns = 0;
  /// The memory kind on the host side (pageable or pinned) of a host<->device copy.
  MemoryKind host_side() const { return direction == CopyDirection::DeviceToHost ? destination : source; }
};

/// One memset.
struct TracedMemset {
  std::size_t bytes = 0;
  std::uint32_t stream_id = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
};

/// One CUDA runtime call, as the program made it.
struct TracedCall {
  std::string name;               ///< without version suffixes: "cudaMalloc", "cudaEventRecord"
  cudaError_t result = cudaSuccess;
  cudaStream_t stream = nullptr;  ///< for calls that take a stream (launches, async copies, event records, syncs)
  bool has_stream = false;
  /// allocations: the pointer returned; frees: the pointer freed; events and streams: the handle
  /// created, recorded, waited for or destroyed; cudaHostRegister/Unregister: the host pointer
  const void* pointer = nullptr;
  const void* source = nullptr;       ///< copies: the address copied from
  const void* destination = nullptr;  ///< copies: the address copied to
  unsigned flags = 0;                 ///< stream, event and host-register creation flags
  std::size_t bytes = 0;          ///< allocations, copies and cudaHostRegister: the size asked for
  dim3 grid{0, 0, 0}, block{0, 0, 0};  ///< launches: the configuration asked for (a rejected one too)
  std::uint64_t enter_ns = 0, exit_ns = 0;  ///< host timestamps, on the same clock as the GPU's
};

/// Everything one traced piece of work did, in the order it happened.
struct Trace {
  std::vector<TracedKernel> kernels;   ///< by GPU start time
  std::vector<TracedCopy> copies;      ///< by GPU start time
  std::vector<TracedMemset> memsets;   ///< by GPU start time
  std::vector<TracedCall> calls;       ///< in call order
  std::uint64_t begin_ns = 0;          ///< when the work was called
  std::uint64_t returned_ns = 0;       ///< when it returned to the host (before the tracer waited for the GPU)

  /// The calls named \p name (e.g. "cudaEventRecord"), counted.
  std::size_t count_calls(const std::string& name) const;
  /// Kernels whose name is \p name.
  std::vector<TracedKernel> kernels_named(const std::string& name) const;
  /// Kernels launched by a shared library (cuBLAS, ...), not by the program's own code.
  /// Kernels whose origin is unknown (a CUDA graph replay) are in neither list.
  std::vector<TracedKernel> library_kernels() const;
  /// Kernels launched by the program's own code.
  std::vector<TracedKernel> program_kernels() const;
  /// Bytes copied in \p direction.
  std::size_t bytes_copied(CopyDirection direction) const;
  /// Device memory allocated during the work and not freed before it returned, in bytes
  /// (cudaMalloc, cudaMallocAsync, cudaMallocManaged, cudaMallocPitch and their frees).
  std::size_t device_bytes_not_freed() const;
  /// How many of those allocations were not freed.
  std::size_t allocations_not_freed() const;
  /// The first launch call whose grid had no blocks (rejected by CUDA), or nullptr.
  const TracedCall* empty_grid_launch() const;
  /// The stream \p event was last recorded on by a successful cudaEventRecord among calls
  /// [0, \p before), and that call's index; nothing when it was not recorded there.
  struct EventRecord {
    cudaStream_t stream = nullptr;
    std::size_t call = 0;
  };
  std::optional<EventRecord> last_record(const void* event, std::size_t before) const;
  /// A loop of cudaStreamQuery or cudaEventQuery calls that ended when the GPU was done: a
  /// query on one stream or event answered "not ready", a later one on it answered "done".
  struct PollingLoop {
    std::size_t done_call = 0;  ///< index in calls of the query that answered "done"
    std::size_t queries = 0;    ///< the loop's queries, that one included
  };
  /// The polling loops the work made, in call order. Polling is waiting: the host stops until
  /// the GPU is done, as a synchronize call would. A single query that answers "done" is none.
  std::vector<PollingLoop> polling_loops() const;
  /// Device-wide or stream/event waits the work made (cudaDeviceSynchronize,
  /// cudaStreamSynchronize, cudaEventSynchronize, polling loops), by name and count:
  /// "cudaDeviceSynchronize x 2", "cudaStreamQuery in a loop until done".
  std::vector<std::string> synchronizations() const;
  /// A few lines a student can read: the kernels launched (with their configuration and
  /// stream), the copies, the allocations and frees, the waits.
  std::string describe() const;
};

/// "kernel<<<grid, block>>>" with the grid and block written as x or (x, y[, z]).
std::string launch_text(const TracedKernel& kernel);
/// "host -> device", "device -> host", ...
std::string direction_text(CopyDirection direction);
/// "pageable", "pinned", "device", ...
std::string memory_text(MemoryKind kind);
/// "the default stream" for the legacy or per-thread default stream, "stream 0x7f..." otherwise.
std::string stream_text(cudaStream_t stream);
/// True for the runtime calls that launch a kernel (cudaLaunchKernel, cudaLaunchKernelExC,
/// cudaLaunchCooperativeKernel), not cudaLaunchHostFunc or cudaLaunchHostFunc-like calls.
bool is_kernel_launch(const std::string& call_name);
/// True for the legacy default stream (0 or cudaStreamLegacy) and the per-thread default stream.
bool is_default_stream(cudaStream_t stream);
/// A runtime callback's name without its version and per-thread suffixes:
/// "cudaMalloc_v3020" -> "cudaMalloc", "cudaEventRecord_ptsz_v7000" -> "cudaEventRecord".
std::string plain_call_name(const std::string& callback_name);
/// A mangled kernel name demangled, without return type and parameters:
/// "_Z10vector_addPKfS0_Pfi" -> "vector_add". \p signature receives the full demangled text.
std::string kernel_short_name(const std::string& mangled, std::string* signature = nullptr);

/// Ends the current test with the outcome "wrote nothing" (grader.hpp): \p what says which call
/// left which output untouched, and \p trace, when there is one, what the call did on the GPU
/// (the kernels it launched, its copies, allocations and waits).
[[noreturn]] void wrote_nothing(const std::string& what, const std::optional<Trace>& trace);

/// The CUPTI activity record structs the tracer reads each record as. They are chosen when
/// tracer.cpp is compiled, by the CUPTI_API_VERSION of its cupti.h: with CUDA 13's CUPTI
/// (130000 and up) CUpti_ActivityKernel10 and CUpti_ActivityMemcpy6, with CUDA 12's (22 in
/// 12.4 to 28 in 12.9) CUpti_ActivityKernel9 and CUpti_ActivityMemcpy5. grader_support_tests
/// checks that every field the tracer reads sits where the header's documented struct has it.
struct CuptiRecords {
  std::uint32_t api_version = 0;   ///< CUPTI_API_VERSION of the cupti.h tracer.cpp was compiled with
  const char* kernel_record = "";  ///< read for CUPTI_ACTIVITY_KIND_(CONCURRENT_)KERNEL: "CUpti_ActivityKernel10"
  const char* memcpy_record = "";  ///< read for CUPTI_ACTIVITY_KIND_MEMCPY: "CUpti_ActivityMemcpy6"
  const char* memset_record = "";  ///< read for CUPTI_ACTIVITY_KIND_MEMSET: "CUpti_ActivityMemset4"
};
/// Which record structs this build's tracer reads, and for which CUPTI headers.
CuptiRecords cupti_records();

/// Thrown when the tracer cannot start (no CUPTI, another tool holds it).
class TracerUnavailable : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Records GPU activity from construction to finish(). One at a time per process.
class Tracer {
public:
  /// Starts recording. Throws TracerUnavailable when CUPTI cannot be used here.
  Tracer();
  /// Stops recording, waits for the GPU to finish what was recorded, and returns it. Throws
  /// workbook::CudaError when that wait fails (a kernel of the work crashed).
  Trace finish();
  /// finish() for when the work itself failed: what was recorded, or an empty trace when the
  /// GPU cannot be waited for; never throws.
  Trace finish_quietly() noexcept;
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  /// True when a Tracer can start in this process; otherwise \p why says why.
  static bool available(std::string* why = nullptr);

private:
  bool finished_ = false;
};

/// Runs \p work under the tracer and returns what it did on the GPU. Under compute-sanitizer
/// (which holds CUPTI itself) \p work runs untraced and nothing is returned, so the checks
/// built on the trace are skipped there; anywhere else a tracer that cannot start fails the
/// test with the reason.
template <class Work>
std::optional<Trace> trace(Work&& work);

/// The same, for work that may throw: the exception is stored in \p thrown (not rethrown) and
/// the trace of what happened up to it is returned, so a verdict can say what the failing
/// call did on the GPU.
template <class Work>
std::optional<Trace> trace(Work&& work, std::exception_ptr& thrown);

/// Implementation detail of trace(): false (work untraced) under the sanitizer, true when a
/// Tracer can start; fails the current test otherwise.
bool tracing_possible();

template <class Work>
std::optional<Trace> trace(Work&& work, std::exception_ptr& thrown) {
  thrown = nullptr;
  if (!tracing_possible()) {
    try {
      work();
    } catch (...) {
      thrown = std::current_exception();
    }
    return std::nullopt;
  }
  Tracer tracer;
  try {
    work();
  } catch (...) {
    thrown = std::current_exception();
    return tracer.finish_quietly();
  }
  return tracer.finish();
}

template <class Work>
std::optional<Trace> trace(Work&& work) {
  std::exception_ptr thrown;
  std::optional<Trace> result = trace(std::forward<Work>(work), thrown);
  if (thrown) std::rethrow_exception(thrown);
  return result;
}

}  // namespace grader
