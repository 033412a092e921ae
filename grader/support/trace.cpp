// The host-only half of the tracer: questions about a Trace and the text students read.
// Nothing here touches CUPTI or the GPU, so all of it is unit-tested in CI.
#include "tracer.hpp"

#include "grader.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

namespace grader {
namespace {

std::string dims(const dim3& d) {
  if (d.y == 1 && d.z == 1) return std::to_string(d.x);
  std::string text = "(" + std::to_string(d.x) + ", " + std::to_string(d.y);
  if (d.z != 1) text += ", " + std::to_string(d.z);
  return text + ")";
}

bool is_allocation(const std::string& name) {
  return name == "cudaMalloc" || name == "cudaMallocAsync" || name == "cudaMallocFromPoolAsync" ||
         name == "cudaMallocManaged" || name == "cudaMallocPitch";
}

bool is_free(const std::string& name) { return name == "cudaFree" || name == "cudaFreeAsync"; }

// Device allocations of the trace that no free of the trace released: pointer -> bytes.
std::map<const void*, std::size_t> live_allocations(const std::vector<TracedCall>& calls) {
  std::map<const void*, std::size_t> live;
  for (const TracedCall& call : calls) {
    if (call.result != cudaSuccess) continue;
    if (is_allocation(call.name) && call.pointer != nullptr) live[call.pointer] = call.bytes;
    if (is_free(call.name)) live.erase(call.pointer);
  }
  return live;
}

}  // namespace

bool is_kernel_launch(const std::string& call_name) {
  return call_name == "cudaLaunchKernel" || call_name == "cudaLaunchKernelExC" ||
         call_name == "cudaLaunchCooperativeKernel";
}

std::string launch_text(const TracedKernel& kernel) {
  return kernel.name + "<<<" + dims(kernel.grid) + ", " + dims(kernel.block) + ">>>";
}

std::string direction_text(CopyDirection direction) {
  switch (direction) {
    case CopyDirection::HostToDevice: return "host -> device";
    case CopyDirection::DeviceToHost: return "device -> host";
    case CopyDirection::DeviceToDevice: return "device -> device";
    case CopyDirection::HostToHost: return "host -> host";
    default: return "other";
  }
}

std::string memory_text(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::Pageable: return "pageable";
    case MemoryKind::Pinned: return "pinned";
    case MemoryKind::Device: return "device";
    case MemoryKind::Managed: return "managed";
    default: return "other";
  }
}

bool is_default_stream(cudaStream_t stream) {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}

std::string stream_text(cudaStream_t stream) {
  if (stream == cudaStreamPerThread) return "the per-thread default stream";
  if (is_default_stream(stream)) return "the default stream";
  std::ostringstream out;
  out << "stream " << static_cast<const void*>(stream);
  return out.str();
}

std::string plain_call_name(const std::string& callback_name) {
  static const std::regex suffix("(_ptsz|_ptds)?(_v[0-9]+)?(_ptsz|_ptds)?$");
  return std::regex_replace(callback_name, suffix, "");
}

std::string kernel_short_name(const std::string& mangled, std::string* signature) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  std::string full = status == 0 && demangled ? std::string(demangled.get()) : mangled;
  if (signature) *signature = full;
  // Cut the parameter list: the '(' that matches the final ')'. Scanning from the end keeps
  // "(anonymous namespace)::kernel" and template arguments with parentheses intact.
  std::size_t cut = full.size();
  if (!full.empty() && full.back() == ')') {
    int depth = 0;
    for (std::size_t i = full.size(); i-- > 0;) {
      if (full[i] == ')') ++depth;
      if (full[i] == '(' && --depth == 0) {
        cut = i;
        break;
      }
    }
  }
  std::string name = full.substr(0, cut);
  // Template kernels demangle with their return type first ("void cub::...<...>").
  if (name.rfind("void ", 0) == 0) name = name.substr(5);
  const std::string anonymous = "(anonymous namespace)::";
  if (name.rfind(anonymous, 0) == 0) name = name.substr(anonymous.size());
  return name;
}

std::size_t Trace::count_calls(const std::string& name) const {
  return static_cast<std::size_t>(
      std::count_if(calls.begin(), calls.end(), [&](const TracedCall& c) { return c.name == name; }));
}

std::vector<TracedKernel> Trace::kernels_named(const std::string& name) const {
  std::vector<TracedKernel> out;
  for (const auto& k : kernels) {
    if (k.name == name) out.push_back(k);
  }
  return out;
}

std::vector<TracedKernel> Trace::library_kernels() const {
  std::vector<TracedKernel> out;
  for (const auto& k : kernels) {
    if (k.from_library()) out.push_back(k);
  }
  return out;
}

std::vector<TracedKernel> Trace::program_kernels() const {
  std::vector<TracedKernel> out;
  for (const auto& k : kernels) {
    if (k.from_program()) out.push_back(k);
  }
  return out;
}

std::size_t Trace::bytes_copied(CopyDirection direction) const {
  std::size_t total = 0;
  for (const auto& c : copies) {
    if (c.direction == direction) total += c.bytes;
  }
  return total;
}

std::size_t Trace::device_bytes_not_freed() const {
  std::size_t total = 0;
  for (const auto& [pointer, bytes] : live_allocations(calls)) total += bytes;
  return total;
}

std::size_t Trace::allocations_not_freed() const { return live_allocations(calls).size(); }

const TracedCall* Trace::empty_grid_launch() const {
  for (const TracedCall& c : calls) {
    if (is_kernel_launch(c.name) && 1ull * c.grid.x * c.grid.y * c.grid.z == 0) return &c;
  }
  return nullptr;
}

std::optional<Trace::EventRecord> Trace::last_record(const void* event, std::size_t before) const {
  std::optional<EventRecord> found;
  for (std::size_t i = 0; i < before && i < calls.size(); ++i) {
    const TracedCall& c = calls[i];
    if (c.result == cudaSuccess && c.pointer == event &&
        (c.name == "cudaEventRecord" || c.name == "cudaEventRecordWithFlags")) {
      found = EventRecord{c.stream, i};
    }
  }
  return found;
}

std::vector<Trace::PollingLoop> Trace::polling_loops() const {
  std::vector<PollingLoop> loops;
  std::map<const void*, std::size_t> not_ready;  // stream or event -> queries that answered "not ready"
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const TracedCall& c = calls[i];
    const bool stream_query = c.name == "cudaStreamQuery";
    if (!stream_query && c.name != "cudaEventQuery") continue;
    const void* handle = stream_query ? static_cast<const void*>(c.stream) : c.pointer;
    if (c.result == cudaErrorNotReady) {
      ++not_ready[handle];
      continue;
    }
    const auto polled = not_ready.find(handle);
    if (c.result != cudaSuccess || polled == not_ready.end()) continue;
    loops.push_back({i, polled->second + 1});
    not_ready.erase(polled);
  }
  return loops;
}

std::vector<std::string> Trace::synchronizations() const {
  std::vector<std::string> out;
  for (const char* name : {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize"}) {
    const std::size_t n = count_calls(name);
    if (n > 0) out.push_back(std::string(name) + (n > 1 ? " x " + std::to_string(n) : ""));
  }
  std::map<std::string, std::size_t> polls;
  for (const PollingLoop& loop : polling_loops()) ++polls[calls[loop.done_call].name];
  for (const auto& [name, n] : polls) {
    out.push_back(name + " in a loop until done" + (n > 1 ? " x " + std::to_string(n) : ""));
  }
  return out;
}

std::string Trace::describe() const {
  std::ostringstream out;
  // Kernels, grouped by launch text and stream, in order of first appearance.
  std::vector<std::pair<std::string, int>> launches;
  for (const auto& k : kernels) {
    std::string text = launch_text(k);
    if (k.stream_known) text += " on " + stream_text(k.stream);
    if (k.from_library()) text += " (launched by " + k.launched_by + ")";
    if (!k.origin_known) text += " (launched from where the grader could not see)";
    auto it = std::find_if(launches.begin(), launches.end(), [&](const auto& l) { return l.first == text; });
    if (it == launches.end()) {
      launches.emplace_back(text, 1);
    } else {
      ++it->second;
    }
  }
  if (launches.empty()) out << "  kernels launched: none\n";
  for (const auto& [text, n] : launches) out << "  kernel " << text << (n > 1 ? " x " + std::to_string(n) : "") << "\n";

  std::map<std::string, std::pair<int, std::size_t>> copies_by_kind;
  for (const auto& c : copies) {
    std::string kind = direction_text(c.direction);
    if (c.direction == CopyDirection::HostToDevice || c.direction == CopyDirection::DeviceToHost) {
      kind += ", " + memory_text(c.host_side()) + " host memory";
    }
    kind += c.asynchronous ? ", asynchronous" : "";
    auto& [count, bytes] = copies_by_kind[kind];
    ++count;
    bytes += c.bytes;
  }
  if (copies_by_kind.empty()) out << "  copies: none\n";
  for (const auto& [kind, cb] : copies_by_kind) {
    out << "  copies " << kind << ": " << cb.first << " (" << cb.second << " bytes)\n";
  }
  if (!memsets.empty()) out << "  memsets: " << memsets.size() << "\n";

  std::size_t allocations = 0, allocated = 0, frees = 0;
  for (const auto& c : calls) {
    if (c.result != cudaSuccess) continue;
    if (is_allocation(c.name)) ++allocations, allocated += c.bytes;
    if (is_free(c.name)) ++frees;
  }
  out << "  device allocations: " << allocations << " (" << allocated << " bytes), frees: " << frees;
  if (device_bytes_not_freed() > 0) out << ", not freed: " << device_bytes_not_freed() << " bytes";
  out << "\n";
  const auto waits = synchronizations();
  if (!waits.empty()) {
    out << "  waits:";
    for (std::size_t i = 0; i < waits.size(); ++i) out << (i ? ", " : " ") << waits[i];
    out << "\n";
  }
  std::string text = out.str();
  if (!text.empty()) text.pop_back();
  return text;
}

void wrote_nothing(const std::string& what, const std::optional<Trace>& trace) {
  wrote_nothing(trace ? what + ".\nWhat the call did on the GPU:\n" + trace->describe() : what + ".");
}

}  // namespace grader
