// The CUPTI half of the tracer: collects activity records and runtime-API callbacks while a
// Tracer is alive and turns them into a Trace (tracer.hpp).
//
// How the pieces fit:
// - Runtime-API callbacks (the whole runtime domain) record each call the program makes, its
//   stream, sizes and pointers, with host timestamps. Launch calls also say which binary the
//   kernel's host stub lives in (dladdr): the grader program itself, or a shared library.
// - Driver-API launch callbacks catch launches that bypass the runtime (libraries that call
//   cuLaunchKernel); for those, the first caller outside CUDA's own libraries on the stack
//   names the library.
// - Activity records give the GPU side. Each carries a correlation id that matches the call
//   that issued it (kernels: the runtime or the driver call; copies: both ids), which is how
//   a kernel gets its stream handle and its origin.
#include "tracer.hpp"

#include "grader.hpp"

#include "workbook/cuda_check.hpp"
#include "workbook/device_info.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cupti.h>

#include <dlfcn.h>
#include <execinfo.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace grader {
namespace {

// Activity records are versioned structs; CUDA 13's CUPTI delivers these. CUDA 12's has the
// versions before them, whose fields used here sit at the same places. The names also go out
// through cupti_records(); tests/cupti_records_test.cpp checks the fields take_record reads
// against the structs the compiled header documents (a field read here must be listed there).
#if CUPTI_API_VERSION >= 130000
#define WORKBOOK_KERNEL_RECORD CUpti_ActivityKernel10
#define WORKBOOK_MEMCPY_RECORD CUpti_ActivityMemcpy6
#else
#define WORKBOOK_KERNEL_RECORD CUpti_ActivityKernel9
#define WORKBOOK_MEMCPY_RECORD CUpti_ActivityMemcpy5
#endif
#define WORKBOOK_MEMSET_RECORD CUpti_ActivityMemset4
using KernelRecord = WORKBOOK_KERNEL_RECORD;
using MemcpyRecord = WORKBOOK_MEMCPY_RECORD;
using MemsetRecord = WORKBOOK_MEMSET_RECORD;
#define WORKBOOK_NAME_OF(record) WORKBOOK_NAME_OF_EXPANDED(record)
#define WORKBOOK_NAME_OF_EXPANDED(record) #record

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kBufferAlign = 8;

const CUpti_ActivityKind kActivities[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                          CUPTI_ACTIVITY_KIND_MEMSET};

std::string cupti_error(CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  return text ? text : "CUPTI error " + std::to_string(static_cast<int>(result));
}

// Where a launch came from, and on which stream handle.
struct LaunchOrigin {
  std::string launched_by;  // "" = the program's own code, kUnknownCaller when not found
  cudaStream_t stream = nullptr;
  bool stream_known = false;
  bool from_graph = false;  // a node of a graph that cudaGraphLaunch ran
};

// A copy's issuing call.
struct CopyOrigin {
  std::string api;
  cudaStream_t stream = nullptr;
  bool stream_known = false;
  const void* source = nullptr;  // the pointers the call named (not for graph nodes)
  const void* destination = nullptr;
};

struct Collector {
  std::mutex mutex;
  bool active = false;
  Trace trace;
  std::unordered_map<std::uint32_t, LaunchOrigin> launches;  // by correlation id
  std::unordered_map<std::uint32_t, CopyOrigin> copies;      // by the runtime call's correlation id
  CUpti_SubscriberHandle subscriber = nullptr;
  std::string unavailable;  // why tracing cannot work, once known
  const void* program_base = nullptr;
};

// Never destroyed: CUPTI may hand back buffers while the process exits, after static
// destructors have run.
Collector& collector() {
  static Collector* c = new Collector;
  return *c;
}

// WORKBOOK_TRACER_DEBUG=1 prints the raw ids and addresses the tracer matches (for grader developers).
bool debug() {
  static const bool on = std::getenv("WORKBOOK_TRACER_DEBUG") != nullptr;
  return on;
}

// The thread's runtime launch call in progress: driver launches nested in it inherit its
// origin. A copy, not a pointer into the collector, so nothing dangles if a call never exits.
thread_local bool in_runtime_launch = false;
thread_local LaunchOrigin current_runtime_launch;

std::string file_name(const char* path) {
  if (path == nullptr) return "an unknown library";
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

const char* const kUnknownCaller = "?";

// Which binary called into CUDA: "" for the grader program (the student's code and its
// statically linked runtime), else the shared library's file name (libcublasLt.so.13). The
// stack runs from this callback through CUPTI and the driver to the caller; the first frame
// past those is the caller. When the stack cannot be walked that far, \p function (a launch's
// host stub) decides: a stub inside a shared library names it, anything else is the program.
std::string caller_binary(const void* function) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  bool past_tracer = false;
  for (int i = 0; i < n; ++i) {
    Dl_info info{};
    if (dladdr(frames[i], &info) == 0 || info.dli_fname == nullptr) continue;
    const std::string name = file_name(info.dli_fname);
    if (name.rfind("libcuda.so", 0) == 0 || name.rfind("libcupti", 0) == 0) {
      past_tracer = true;
      continue;
    }
    if (!past_tracer) continue;  // the tracer's own frames, before CUDA called it
    return info.dli_fbase == collector().program_base ? std::string() : name;
  }
  // A stub that dladdr places in a shared library names it; anything else is unknown (under
  // CUDA 13 a program kernel's stub pointer is not a code address, so "not found" proves nothing).
  // A launch through the driver API with no runtime launch around it is a library's: the
  // program's own kernels go through its statically linked runtime.
  Dl_info info{};
  if (function == nullptr) return "a library (driver API)";
  if (dladdr(function, &info) != 0) {
    return info.dli_fbase == collector().program_base ? std::string() : file_name(info.dli_fname);
  }
  return kUnknownCaller;
}

MemoryKind memory_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemoryKind::Pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemoryKind::Pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return MemoryKind::Device;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return MemoryKind::Managed;
    default: return MemoryKind::Other;
  }
}

CopyDirection copy_direction(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CopyDirection::HostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CopyDirection::DeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CopyDirection::DeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyDirection::HostToHost;
    default: return CopyDirection::Other;
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void take_record(Collector& c, const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* k = reinterpret_cast<const KernelRecord*>(record);
      TracedKernel kernel;
      kernel.name = kernel_short_name(k->name ? k->name : "?", &kernel.signature);
      kernel.grid = dim3(k->gridX, k->gridY, k->gridZ);
      kernel.block = dim3(k->blockX, k->blockY, k->blockZ);
      kernel.shared_bytes = std::size_t(k->staticSharedMemory) + std::size_t(k->dynamicSharedMemory);
      kernel.stream_id = k->streamId;
      kernel.start_ns = k->start;
      kernel.end_ns = k->end;
      if (debug()) std::fprintf(stderr, "[tracer] kernel %s correlation %u\n", kernel.name.c_str(), k->correlationId);
      const auto origin = c.launches.find(k->correlationId);
      if (origin != c.launches.end() && origin->second.launched_by != kUnknownCaller) {
        kernel.launched_by = origin->second.launched_by;
        kernel.stream = origin->second.stream;
        kernel.stream_known = origin->second.stream_known;
        kernel.from_graph = origin->second.from_graph;
      } else {
        kernel.origin_known = false;  // a graph replay, or a caller the stack did not show
      }
      c.trace.kernels.push_back(std::move(kernel));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const MemcpyRecord*>(record);
      TracedCopy copy;
      copy.direction = copy_direction(m->copyKind);
      copy.source = memory_kind(m->srcKind);
      copy.destination = memory_kind(m->dstKind);
      copy.bytes = m->bytes;
      copy.asynchronous = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
      copy.stream_id = m->streamId;
      copy.start_ns = m->start;
      copy.end_ns = m->end;
      if (debug()) {
        std::fprintf(stderr, "[tracer] copy correlation %u runtime %u\n", m->correlationId, m->runtimeCorrelationId);
      }
      // Runtime copies carry the runtime call's id in correlationId (runtimeCorrelationId is 0
      // on CUDA 13, as seen on an H100); older CUPTIs filled the latter.
      auto origin = c.copies.find(m->correlationId);
      if (origin == c.copies.end()) origin = c.copies.find(m->runtimeCorrelationId);
      if (origin != c.copies.end()) {
        copy.api = origin->second.api;
        copy.stream = origin->second.stream;
        copy.stream_known = origin->second.stream_known;
        copy.source_pointer = origin->second.source;
        copy.destination_pointer = origin->second.destination;
        // A graph's copies never hold the host: cudaGraphLaunch returns at once.
        if (copy.api == "cudaGraphLaunch") copy.asynchronous = true;
      }
      c.trace.copies.push_back(std::move(copy));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const MemsetRecord*>(record);
      c.trace.memsets.push_back({static_cast<std::size_t>(m->bytes), m->streamId, m->start, m->end});
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  Collector& c = collector();
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    CUpti_Activity* record = nullptr;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (c.active) take_record(c, record);
    }
  }
  std::free(buffer);
}

template <class Params>
const Params& params_of(const CUpti_CallbackData* data) {
  return *static_cast<const Params*>(data->functionParams);
}

// The runtime call's stream, pointer and size, where it has them (read at API exit, so
// allocation results are there).
void decode_call(CUpti_CallbackId id, const CUpti_CallbackData* data, TracedCall& call) {
  const auto with_stream = [&](cudaStream_t s) {
    call.stream = s;
    call.has_stream = true;
  };
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      const auto& p = params_of<cudaMalloc_v3020_params>(data);
      call.pointer = p.devPtr ? *p.devPtr : nullptr;
      call.bytes = p.size;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
      const auto& p = params_of<cudaMallocAsync_v11020_params>(data);
      call.pointer = p.devPtr ? *p.devPtr : nullptr;
      call.bytes = p.size;
      with_stream(p.hStream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
      const auto& p = params_of<cudaMallocFromPoolAsync_v11020_params>(data);
      call.pointer = p.ptr ? *p.ptr : nullptr;
      call.bytes = p.size;
      with_stream(p.stream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      const auto& p = params_of<cudaMallocManaged_v6000_params>(data);
      call.pointer = p.devPtr ? *p.devPtr : nullptr;
      call.bytes = p.size;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
      const auto& p = params_of<cudaMallocPitch_v3020_params>(data);
      call.pointer = p.devPtr ? *p.devPtr : nullptr;
      call.bytes = (p.pitch ? *p.pitch : p.width) * p.height;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
      const auto& p = params_of<cudaMallocHost_v3020_params>(data);
      call.pointer = p.ptr ? *p.ptr : nullptr;
      call.bytes = p.size;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
      const auto& p = params_of<cudaHostAlloc_v3020_params>(data);
      call.pointer = p.pHost ? *p.pHost : nullptr;
      call.bytes = p.size;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      call.pointer = params_of<cudaFree_v3020_params>(data).devPtr;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020: {
      const auto& p = params_of<cudaFreeAsync_v11020_params>(data);
      call.pointer = p.devPtr;
      with_stream(p.hStream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      call.pointer = params_of<cudaFreeHost_v3020_params>(data).ptr;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000: {
      const auto& p = params_of<cudaEventRecord_v3020_params>(data);
      call.pointer = p.event;
      with_stream(p.stream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010: {
      const auto& p = params_of<cudaEventRecordWithFlags_v11010_params>(data);
      call.pointer = p.event;
      with_stream(p.stream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      with_stream(params_of<cudaStreamSynchronize_v3020_params>(data).stream);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000: {
      const auto& p = params_of<cudaStreamWaitEvent_v3020_params>(data);
      call.pointer = p.event;
      with_stream(p.stream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
      const auto& p = params_of<cudaLaunchKernel_v7000_params>(data);
      with_stream(p.stream);
      call.grid = p.gridDim, call.block = p.blockDim;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      const auto& p = params_of<cudaLaunchCooperativeKernel_v9000_params>(data);
      with_stream(p.stream);
      call.grid = p.gridDim, call.block = p.blockDim;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const auto& p = params_of<cudaLaunchKernelExC_v11060_params>(data);
      if (p.config) {
        with_stream(p.config->stream);
        call.grid = p.config->gridDim, call.block = p.config->blockDim;
      }
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020: {
      const auto& p = params_of<cudaMemcpy_v3020_params>(data);
      call.bytes = p.count;
      call.source = p.src, call.destination = p.dst;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
      const auto& p = params_of<cudaMemcpyAsync_v3020_params>(data);
      call.bytes = p.count;
      call.source = p.src, call.destination = p.dst;
      with_stream(p.stream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020: {
      const auto& p = params_of<cudaStreamCreate_v3020_params>(data);
      call.pointer = p.pStream ? *p.pStream : nullptr;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000: {
      const auto& p = params_of<cudaStreamCreateWithFlags_v5000_params>(data);
      call.pointer = p.pStream ? *p.pStream : nullptr;
      call.flags = p.flags;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050: {
      const auto& p = params_of<cudaStreamCreateWithPriority_v5050_params>(data);
      call.pointer = p.pStream ? *p.pStream : nullptr;
      call.flags = p.flags;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050:
      call.pointer = params_of<cudaStreamDestroy_v5050_params>(data).stream;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020: {
      const auto& p = params_of<cudaEventCreate_v3020_params>(data);
      call.pointer = p.event ? *p.event : nullptr;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020: {
      const auto& p = params_of<cudaEventCreateWithFlags_v3020_params>(data);
      call.pointer = p.event ? *p.event : nullptr;
      call.flags = p.flags;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020:
      call.pointer = params_of<cudaEventDestroy_v3020_params>(data).event;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
      call.pointer = params_of<cudaEventSynchronize_v3020_params>(data).event;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020:
      call.pointer = params_of<cudaEventQuery_v3020_params>(data).event;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000:
      with_stream(params_of<cudaStreamQuery_v3020_params>(data).stream);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000: {
      const auto& p = params_of<cudaHostRegister_v4000_params>(data);
      call.pointer = p.ptr;
      call.bytes = p.size;
      call.flags = p.flags;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000:
      call.pointer = params_of<cudaHostUnregister_v4000_params>(data).ptr;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
      with_stream(params_of<cudaGraphLaunch_v10000_params>(data).stream);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000: {
      const auto& p = params_of<cudaMemsetAsync_v3020_params>(data);
      call.bytes = p.count;
      with_stream(p.stream);
      break;
    }
    default:
      break;
  }
}

// The kernel's host stub, for the launch calls: which binary launched it.
const void* launched_function(CUpti_CallbackId id, const CUpti_CallbackData* data) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      return params_of<cudaLaunchKernel_v7000_params>(data).func;
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
      return params_of<cudaLaunchCooperativeKernel_v9000_params>(data).func;
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
      return params_of<cudaLaunchKernelExC_v11060_params>(data).func;
    default:
      return nullptr;
  }
}

bool is_copy_call(const std::string& name) { return name.rfind("cudaMemcpy", 0) == 0; }

bool is_graph_launch(CUpti_CallbackId id) {
  return id == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 || id == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
}

void on_runtime_call(Collector& c, CUpti_CallbackId id, const CUpti_CallbackData* data) {
  const void* function = launched_function(id, data);
  if (data->callbackSite == CUPTI_API_ENTER) {
    std::uint64_t now = 0;
    cuptiGetTimestamp(&now);
    *data->correlationData = now;
    in_runtime_launch = false;
    if (function != nullptr) {
      LaunchOrigin origin;
      origin.launched_by = caller_binary(function);
      if (debug()) {
        std::fprintf(stderr, "[tracer] %s correlation %u launched by '%s'\n", data->functionName,
                     data->correlationId, origin.launched_by.c_str());
      }
      TracedCall probe;
      decode_call(id, data, probe);
      origin.stream = probe.stream;
      origin.stream_known = probe.has_stream;
      current_runtime_launch = origin;
      in_runtime_launch = true;
      const std::lock_guard<std::mutex> lock(c.mutex);
      c.launches[data->correlationId] = origin;
    } else if (is_graph_launch(id)) {
      // The kernels and copies of a graph carry the correlation id of the cudaGraphLaunch that
      // ran them: they belong to whoever launched the graph, on the stream it was launched on.
      TracedCall probe;
      decode_call(id, data, probe);
      LaunchOrigin origin;
      origin.launched_by = caller_binary(nullptr);
      origin.stream = probe.stream;
      origin.stream_known = true;
      origin.from_graph = true;
      if (debug()) {
        std::fprintf(stderr, "[tracer] cudaGraphLaunch correlation %u launched by '%s'\n", data->correlationId,
                     origin.launched_by.c_str());
      }
      const std::lock_guard<std::mutex> lock(c.mutex);
      c.launches[data->correlationId] = origin;
      c.copies[data->correlationId] = {"cudaGraphLaunch", probe.stream, true, nullptr, nullptr};
    }
    return;
  }
  in_runtime_launch = false;
  TracedCall call;
  call.name = plain_call_name(data->functionName ? data->functionName : "?");
  // Only calls that return a cudaError_t have one to read: cudaGetErrorName and
  // cudaGetErrorString return text, and CUPTI gives them no return value (reading it crashed
  // every trace in which a CudaError was built, as seen on an H100).
  const bool returns_error_code = call.name.rfind("cudaGetError", 0) != 0;
  call.result = returns_error_code && data->functionReturnValue != nullptr
                    ? *static_cast<const cudaError_t*>(data->functionReturnValue)
                    : cudaSuccess;
  call.enter_ns = *data->correlationData;
  cuptiGetTimestamp(&call.exit_ns);
  decode_call(id, data, call);
  const std::lock_guard<std::mutex> lock(c.mutex);
  if (debug() && is_copy_call(call.name)) {
    std::fprintf(stderr, "[tracer] %s correlation %u\n", call.name.c_str(), data->correlationId);
  }
  if (is_copy_call(call.name)) {
    c.copies[data->correlationId] = {call.name, call.stream, call.has_stream, call.source, call.destination};
  }
  c.trace.calls.push_back(std::move(call));
}

void on_driver_launch(Collector& c, CUpti_CallbackId id, const CUpti_CallbackData* data) {
  if (data->callbackSite != CUPTI_API_ENTER) return;
  LaunchOrigin origin;
  if (debug()) {
    std::fprintf(stderr, "[tracer] driver %s correlation %u inside a runtime launch: %d\n", data->functionName,
                 data->correlationId, static_cast<int>(in_runtime_launch));
  }
  if (in_runtime_launch) {
    origin = current_runtime_launch;
  } else {
    origin.launched_by = caller_binary(nullptr);
    if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
      origin.stream = reinterpret_cast<cudaStream_t>(params_of<cuLaunchKernel_params>(data).hStream);
      origin.stream_known = true;
    } else if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
      const CUlaunchConfig* config = params_of<cuLaunchKernelEx_params>(data).config;
      if (config) {
        origin.stream = reinterpret_cast<cudaStream_t>(config->hStream);
        origin.stream_known = true;
      }
    }
  }
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.launches[data->correlationId] = origin;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* raw) {
  Collector& c = collector();
  const auto* data = static_cast<const CUpti_CallbackData*>(raw);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    on_runtime_call(c, id, data);
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    on_driver_launch(c, id, data);
  }
}

const CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};

// Turns callbacks and activity collection on or off; returns the first error.
CUptiResult enable(Collector& c, bool on) {
  const std::uint32_t flag = on ? 1 : 0;
  CUptiResult result = cuptiEnableDomain(flag, c.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  for (const CUpti_CallbackId id : kDriverLaunches) {
    const CUptiResult r = cuptiEnableCallback(flag, c.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (result == CUPTI_SUCCESS) result = r;
  }
  for (const CUpti_ActivityKind kind : kActivities) {
    const CUptiResult r = on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
    if (result == CUPTI_SUCCESS) result = r;
  }
  return result;
}

// Subscribes once per process; returns "" or why tracing cannot work here.
const std::string& initialise() {
  static const std::string why = [] {
    if (workbook::cuda_device_count() == 0) return std::string("no GPU: ") + workbook::no_gpu_reason();
    Collector& c = collector();
    Dl_info self{};
    if (dladdr(reinterpret_cast<const void*>(&initialise), &self) != 0) c.program_base = self.dli_fbase;
    if (debug()) std::fprintf(stderr, "[tracer] program %s base %p\n", self.dli_fname, c.program_base);
    CUptiResult result = cuptiSubscribe(&c.subscriber, &on_callback, nullptr);
    if (result != CUPTI_SUCCESS) {
      return "CUPTI would not let the grader subscribe (" + cupti_error(result) +
             "): another tool, such as compute-sanitizer or a profiler, is using it";
    }
    result = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
    if (result != CUPTI_SUCCESS) return "CUPTI activity buffers: " + cupti_error(result);
    return std::string();
  }();
  return why;
}

}  // namespace

CuptiRecords cupti_records() {
  return {CUPTI_API_VERSION, WORKBOOK_NAME_OF(WORKBOOK_KERNEL_RECORD), WORKBOOK_NAME_OF(WORKBOOK_MEMCPY_RECORD),
          WORKBOOK_NAME_OF(WORKBOOK_MEMSET_RECORD)};
}

bool Tracer::available(std::string* why) {
  const std::string& reason = initialise();
  if (why) *why = reason;
  return reason.empty();
}

Tracer::Tracer() {
  std::string why;
  if (!available(&why)) throw TracerUnavailable("the grader cannot trace GPU work here: " + why);
  Collector& c = collector();
  // Whatever ran before belongs to nobody's trace: wait for it and drop its records.
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  cuptiActivityFlushAll(1);
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    if (c.active) throw TracerUnavailable("a Tracer is already recording in this process");
    c.trace = Trace{};
    c.launches.clear();
    c.copies.clear();
    c.active = true;
  }
  const CUptiResult result = enable(c, true);
  if (result != CUPTI_SUCCESS) {
    enable(c, false);
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.active = false;
    throw TracerUnavailable("CUPTI would not record GPU activity: " + cupti_error(result));
  }
  cuptiGetTimestamp(&c.trace.begin_ns);
}

// Stops recording in the one order CUPTI is happy with: callbacks off (so the grader's own
// wait is not traced), wait for the GPU, collect the records, activity off. After a sticky
// CUDA error (a crashed kernel) the records are left uncollected: they would not be read.
cudaError_t stop_recording(Collector& c) {
  cuptiEnableDomain(0, c.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  for (const CUpti_CallbackId id : kDriverLaunches) cuptiEnableCallback(0, c.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  const cudaError_t waited = cudaDeviceSynchronize();
  if (waited == cudaSuccess) cuptiActivityFlushAll(1);
  for (const CUpti_ActivityKind kind : kActivities) cuptiActivityDisable(kind);
  in_runtime_launch = false;
  return waited;
}

Trace Tracer::finish() {
  Collector& c = collector();
  std::uint64_t returned = 0;
  cuptiGetTimestamp(&returned);
  const cudaError_t waited = stop_recording(c);
  finished_ = true;
  Trace trace;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.active = false;
    trace = std::move(c.trace);
    c.trace = Trace{};
  }
  trace.returned_ns = returned;
  const auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
  std::sort(trace.kernels.begin(), trace.kernels.end(), by_start);
  std::sort(trace.copies.begin(), trace.copies.end(), by_start);
  std::sort(trace.memsets.begin(), trace.memsets.end(), by_start);
  WORKBOOK_CUDA_CHECK(waited);
  return trace;
}

Trace Tracer::finish_quietly() noexcept {
  try {
    return finish();
  } catch (...) {
    return Trace{};  // the GPU failed while waiting: the work's own error says more
  }
}

Tracer::~Tracer() {
  if (finished_) return;
  Collector& c = collector();
  (void)stop_recording(c);
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.active = false;
}

bool tracing_possible() {
  std::string why;
  if (Tracer::available(&why)) return true;
  if (sanitize_mode()) return false;
  FAIL("The grader could not watch what your code does on the GPU, so this check cannot be made: " << why
       << ".\nThis is a problem of the grading machine, not of your code: run ./grade again without other "
          "profiling tools attached.");
  return false;
}

}  // namespace grader
