// The contract checker: one function that holds a trace to a graded function's promises
// (contract.hpp). Lessons declare contracts; they never re-implement these checks.
#include "contract.hpp"

#include "diagnosis.hpp"
#include "grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <set>
#include <sstream>

namespace grader {
namespace {

bool succeeded(const TracedCall& c) { return c.result == cudaSuccess; }

bool is_stream_creation(const std::string& name) { return name.rfind("cudaStreamCreate", 0) == 0; }
bool is_event_creation(const std::string& name) { return name.rfind("cudaEventCreate", 0) == 0; }

// A copy or memset call that waits for the host: the runtime's synchronous forms.
bool is_synchronous_copy(const std::string& name) {
  return name.rfind("cudaMemcpy", 0) == 0 && name.find("Async") == std::string::npos;
}
bool is_synchronous_memset(const std::string& name) {
  return name.rfind("cudaMemset", 0) == 0 && name.find("Async") == std::string::npos;
}

// Calls that put work on the stream they name (kernels and copies are judged by their records).
bool enqueues_on_its_stream(const std::string& name) {
  static const std::set<std::string> names{"cudaMemsetAsync",    "cudaMallocAsync",          "cudaMallocFromPoolAsync",
                                           "cudaFreeAsync",      "cudaEventRecord",          "cudaEventRecordWithFlags",
                                           "cudaStreamWaitEvent", "cudaGraphLaunch"};
  return names.count(name) > 0;
}

std::string plural(std::size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string join(const std::vector<std::string>& items, const std::string& last = " and ") {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == items.size() ? last : ", ") + items[i];
  }
  return out;
}

// Counts "what" per key, in order of first appearance: "kernel transform x 3".
class Tally {
public:
  void add(const std::string& key) {
    auto it = std::find_if(items_.begin(), items_.end(), [&](const auto& i) { return i.first == key; });
    if (it == items_.end()) {
      items_.emplace_back(key, 1);
    } else {
      ++it->second;
    }
  }
  bool empty() const { return items_.empty(); }
  std::string text() const {
    std::vector<std::string> parts;
    for (const auto& [key, n] : items_) parts.push_back(key + (n > 1 ? " x " + std::to_string(n) : ""));
    return join(parts);
  }

private:
  std::vector<std::pair<std::string, std::size_t>> items_;
};

struct Handles {
  std::set<const void*> streams, events;
};

Handles created_by(const Trace& t) {
  Handles h;
  for (const TracedCall& c : t.calls) {
    if (!succeeded(c) || c.pointer == nullptr) continue;
    if (is_stream_creation(c.name)) h.streams.insert(c.pointer);
    if (is_event_creation(c.name)) h.events.insert(c.pointer);
  }
  return h;
}

bool stream_allowed(const Contract& contract, const ContractCall& call, const Handles& own, cudaStream_t s) {
  const bool given = std::find(call.streams.begin(), call.streams.end(), s) != call.streams.end();
  switch (contract.streams) {
    case Streams::Any: return true;
    case Streams::Given: return given;
    case Streams::Own: return own.streams.count(s) > 0;
    case Streams::GivenOrOwn: return given || own.streams.count(s) > 0;
  }
  return false;
}

std::string allowed_streams_text(const Contract& contract) {
  switch (contract.streams) {
    case Streams::Given: return "the streams it is given";
    case Streams::Own: return "streams it creates";
    case Streams::GivenOrOwn: return "the streams it is given and streams it creates";
    case Streams::Any: return "any stream";
  }
  return "";
}

void check_streams(const Contract& contract, const ContractCall& call, const Trace& t, const Handles& own,
                   std::vector<Violation>& out) {
  if (contract.streams == Streams::Any) return;
  std::map<std::string, Tally> by_stream;  // stream text -> what ran there
  bool on_default = false;
  const auto wrong = [&](cudaStream_t s, const std::string& what) {
    if (stream_allowed(contract, call, own, s)) return;
    on_default = on_default || is_default_stream(s);
    by_stream[stream_text(s)].add(what);
  };
  for (const TracedKernel& k : t.kernels) {
    if (k.stream_known) wrong(k.stream, "kernel " + k.name + (k.from_graph ? " (in a graph)" : ""));
  }
  // Synchronous copies and memsets run on the default stream too, but where the contract limits
  // waiting, the waits clause reports them (with what they cost): one fact, said once.
  const bool synchronous_judged_as_waits = contract.waits != Waits::Any;
  for (const TracedCopy& c : t.copies) {
    if (c.api == "cudaGraphLaunch") continue;  // judged by its cudaGraphLaunch call
    if (c.stream_known) {
      wrong(c.stream, "copy " + direction_text(c.direction));
    } else if (is_synchronous_copy(c.api) && !synchronous_judged_as_waits) {
      wrong(nullptr, "copy " + direction_text(c.direction) + " (" + c.api + ")");
    }
  }
  for (const TracedCall& c : t.calls) {
    if (!succeeded(c)) continue;
    if (c.has_stream && enqueues_on_its_stream(c.name)) wrong(c.stream, c.name);
    if (is_synchronous_memset(c.name) && !synchronous_judged_as_waits) wrong(nullptr, c.name);
  }
  if (by_stream.empty()) return;
  std::ostringstream facts;
  bool first = true;
  for (const auto& [stream, tally] : by_stream) {
    facts << (first ? "" : "; ") << tally.text() << " on " << stream;
    first = false;
  }
  facts << ", where it may use only " << allowed_streams_text(contract) << ".";
  if (on_default) {
    facts << "\n" << hint(HintId::default_stream,
                          "the legacy default stream waits for every blocking stream and they wait for it, so work "
                          "there runs alone and orders the caller's work too. Give every copy, kernel and allocation "
                          "the stream argument of the call (cudaMemcpyAsync, <<<grid, block, shared, stream>>>, "
                          "cudaMallocAsync).");
  }
  out.push_back({"streams", facts.str()});
}

void check_waits(const Contract& contract, const Trace& t, const Handles& own, std::vector<Violation>& out) {
  if (contract.waits == Waits::Any) return;
  const bool never = contract.waits == Waits::Never;
  Tally waits;
  std::vector<std::string> hints;
  const auto add_hint = [&](const std::string& text) {
    if (std::find(hints.begin(), hints.end(), text) == hints.end()) hints.push_back(text);
  };
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    const TracedCall& c = t.calls[i];
    if (c.name == "cudaDeviceSynchronize") {
      waits.add("cudaDeviceSynchronize (which waits for all work on the GPU, the caller's on other streams too)");
      add_hint(hint(HintId::device_synchronize,
                    "cudaDeviceSynchronize waits for everything on the GPU, work the caller queued on other streams "
                    "too. Wait for your own streams (cudaStreamSynchronize) or events instead, or not at all where "
                    "the function returns without waiting."));
    } else if (c.name == "cudaStreamSynchronize") {
      if (never) {
        waits.add("cudaStreamSynchronize on " + stream_text(c.stream));
      } else if (own.streams.count(c.stream) == 0) {
        waits.add("cudaStreamSynchronize on " + stream_text(c.stream) + ", which it did not create" +
                  (is_default_stream(c.stream) ? " (the legacy default stream does not wait for non-blocking "
                                                 "streams, and waits for every blocking one)"
                                               : ""));
      }
    } else if (c.name == "cudaEventSynchronize") {
      if (never) {
        waits.add("cudaEventSynchronize");
      } else if (own.events.count(c.pointer) == 0) {
        waits.add("cudaEventSynchronize on an event it did not create");
      } else if (const auto on = t.last_record(c.pointer, i); on && own.streams.count(on->stream) == 0) {
        waits.add("cudaEventSynchronize on an event last recorded on " + stream_text(on->stream) + ", not on a stream "
                  "it created");
      }
    } else if (is_synchronous_copy(c.name) && succeeded(c)) {
      waits.add(c.name + " (synchronous: it returns when the copy is done, after all earlier work on the "
                         "default stream)");
      add_hint(hint(HintId::synchronous_copy,
                    "cudaMemcpy returns only when the copy is done, and it is ordered with the default stream, so "
                    "the host waits and nothing overlaps it. cudaMemcpyAsync(dst, src, bytes, kind, stream) queues "
                    "the copy on a stream and returns at once."));
    } else if (is_synchronous_memset(c.name) && succeeded(c)) {
      waits.add(c.name + " (synchronous)");
    } else if ((c.name == "cudaFree" || c.name == "cudaFreeHost") && succeeded(c) && c.pointer != nullptr) {
      waits.add(c.name + " (it waits for all work on the GPU before it frees)");
    }
  }
  // Polling is waiting too (Trace::polling_loops): a query loop that ended when the GPU was done.
  for (const Trace::PollingLoop& loop : t.polling_loops()) {
    const TracedCall& c = t.calls[loop.done_call];
    const bool stream_query = c.name == "cudaStreamQuery";
    const bool allowed = !never && (stream_query ? own.streams.count(c.stream) > 0 : own.events.count(c.pointer) > 0);
    if (!allowed) {
      waits.add(c.name + " in a loop until " + (stream_query ? stream_text(c.stream) : std::string("its event")) +
                " was done (" + std::to_string(loop.queries) + " queries): polling is waiting");
    }
  }
  if (waits.empty()) return;
  std::string facts = "it waited for the GPU: " + waits.text() + ", where " +
                      (never ? std::string("it must return without waiting")
                             : std::string("it may wait only for streams and events it created")) +
                      ".";
  for (const std::string& h : hints) facts += "\n" + h;
  out.push_back({"waits", facts});
}

void check_gives_back(const Trace& t, std::vector<Violation>& out) {
  std::map<const void*, std::string> streams, events, registered;
  std::map<const void*, std::size_t> pinned;
  long graphs = 0, executables = 0, pools = 0;
  for (const TracedCall& c : t.calls) {
    if (!succeeded(c)) continue;
    if (is_stream_creation(c.name)) streams[c.pointer] = c.name;
    if (c.name == "cudaStreamDestroy") streams.erase(c.pointer);
    if (is_event_creation(c.name)) events[c.pointer] = c.name;
    if (c.name == "cudaEventDestroy") events.erase(c.pointer);
    if (c.name == "cudaHostRegister") registered[c.pointer] = std::to_string(c.bytes) + " bytes";
    if (c.name == "cudaHostUnregister") registered.erase(c.pointer);
    if ((c.name == "cudaMallocHost" || c.name == "cudaHostAlloc") && c.pointer) pinned[c.pointer] = c.bytes;
    if (c.name == "cudaFreeHost") pinned.erase(c.pointer);
    if (c.name == "cudaStreamEndCapture" || c.name == "cudaGraphCreate") ++graphs;
    if (c.name == "cudaGraphDestroy") --graphs;
    if (c.name.rfind("cudaGraphInstantiate", 0) == 0) ++executables;
    if (c.name == "cudaGraphExecDestroy") --executables;
    if (c.name == "cudaMemPoolCreate") ++pools;
    if (c.name == "cudaMemPoolDestroy") --pools;
  }
  std::vector<std::string> left;
  if (!streams.empty()) left.push_back(plural(streams.size(), "stream", "streams") + " (cudaStreamDestroy)");
  if (!events.empty()) left.push_back(plural(events.size(), "event", "events") + " (cudaEventDestroy)");
  if (t.device_bytes_not_freed() > 0) {
    left.push_back(std::to_string(t.device_bytes_not_freed()) + " bytes of device memory in " +
                   plural(t.allocations_not_freed(), "allocation", "allocations") + " (cudaFree, cudaFreeAsync)");
  }
  std::size_t pinned_bytes = 0;
  for (const auto& [p, bytes] : pinned) pinned_bytes += bytes;
  if (!pinned.empty()) {
    left.push_back(std::to_string(pinned_bytes) + " bytes of pinned host memory in " +
                   plural(pinned.size(), "allocation", "allocations") + " (cudaFreeHost)");
  }
  if (!registered.empty()) {
    left.push_back(plural(registered.size(), "host range", "host ranges") + " registered (cudaHostUnregister)");
  }
  if (graphs > 0) left.push_back(plural(std::size_t(graphs), "graph", "graphs") + " (cudaGraphDestroy)");
  if (executables > 0) {
    left.push_back(plural(std::size_t(executables), "executable graph", "executable graphs") + " (cudaGraphExecDestroy)");
  }
  if (pools > 0) left.push_back(plural(std::size_t(pools), "memory pool", "memory pools") + " (cudaMemPoolDestroy)");
  if (left.empty()) return;
  out.push_back({"gives back", "it returned without giving back " + join(left) +
                                   ": what a function creates it must release before it returns, or every call "
                                   "leaves more behind."});
}

// The name of the given host buffer that holds [p, p + bytes), or "" when none does.
std::string buffer_holding(const ContractCall& call, const void* p) {
  const auto* address = static_cast<const unsigned char*>(p);
  for (const HostBuffer& b : call.host) {
    const auto* begin = static_cast<const unsigned char*>(b.data);
    if (address >= begin && address < begin + b.bytes) return b.name;
  }
  return "";
}

bool overlaps(const HostBuffer& b, const void* p, std::size_t bytes) {
  const auto* begin = static_cast<const unsigned char*>(b.data);
  const auto* q = static_cast<const unsigned char*>(p);
  return q < begin + b.bytes && begin < q + std::max<std::size_t>(bytes, 1);
}

void check_copies(const Contract& contract, const ContractCall& call, const Trace& t, std::vector<Violation>& out) {
  Tally wrong;
  const auto judge = [&](const std::optional<std::vector<std::string>>& allowed, const void* host,
                         const std::string& way) {
    if (!allowed || host == nullptr) return;  // no rule, or a copy whose call the tracer did not see
    std::string name = buffer_holding(call, host);
    if (std::find(allowed->begin(), allowed->end(), name) != allowed->end()) return;
    wrong.add(way + " " + (name.empty() ? std::string("host memory of its own (no buffer the call was given)") : name));
  };
  for (const TracedCopy& c : t.copies) {
    if (c.direction == CopyDirection::HostToDevice) judge(contract.copies_read, c.source_pointer, "copied to the device from");
    if (c.direction == CopyDirection::DeviceToHost) {
      judge(contract.copies_write, c.destination_pointer, "copied from the device into");
    }
  }
  Tally registered;
  for (const TracedCall& c : t.calls) {
    if (c.name != "cudaHostRegister" || !succeeded(c)) continue;
    for (const HostBuffer& b : call.host) {
      if (overlaps(b, c.pointer, c.bytes) &&
          std::find(contract.may_register.begin(), contract.may_register.end(), b.name) == contract.may_register.end()) {
        registered.add("registered " + b.name + " with cudaHostRegister");
      }
    }
  }
  std::vector<std::string> facts;
  if (!wrong.empty()) {
    const auto only = [](const std::vector<std::string>& names) {
      return names.empty() ? std::string("no host memory") : "only " + join(names, " or ");
    };
    std::string allowed;
    if (contract.copies_read) allowed += "copies to the device may read " + only(*contract.copies_read);
    if (contract.copies_write) {
      allowed += std::string(allowed.empty() ? "" : ", and ") + "copies from the device may write " +
                 only(*contract.copies_write);
    }
    facts.push_back(wrong.text() + ", where " + allowed);
  }
  if (!registered.empty()) {
    facts.push_back(registered.text() + ", where the caller's memory is the caller's: " +
                    (contract.may_register.empty() ? std::string("it may register none of it")
                                                   : "it may register only " + join(contract.may_register, " or ")));
  }
  if (!facts.empty()) out.push_back({"copies", join(facts, "; ") + "."});
}

void check_finishes(const Contract& contract, const Trace& t, std::vector<Violation>& out) {
  if (!contract.finishes_before_return || t.returned_ns == 0) return;
  std::uint64_t last = 0;
  std::string what;
  for (const TracedKernel& k : t.kernels) {
    if (k.end_ns > last) last = k.end_ns, what = "kernel " + k.name;
  }
  for (const TracedCopy& c : t.copies) {
    if (c.end_ns > last) last = c.end_ns, what = "copy " + direction_text(c.direction);
  }
  if (last <= t.returned_ns) return;
  out.push_back({"finishes",
                 "it returned " + std::to_string((last - t.returned_ns) / 1000) + " us before its last work (" + what +
                     ") ended, so a caller that reads the result at once reads it unfinished; the grader's own "
                     "wait for the GPU made the values right.\n" +
                     hint(HintId::returns_early, "a function whose result is on the host when it returns must wait for "
                                           "its own streams (cudaStreamSynchronize) or events before returning.")});
}

}  // namespace

Contract given_stream_contract(const std::string& function) {
  Contract c;
  c.function = function;
  c.streams = Streams::Given;
  c.waits = Waits::Never;
  c.copies_read = std::vector<std::string>{};
  c.copies_write = std::vector<std::string>{};
  return c;
}

std::vector<Violation> contract_violations(const Contract& contract, const ContractCall& call, const Trace& trace) {
  std::vector<Violation> out;
  const Handles own = created_by(trace);
  check_streams(contract, call, trace, own, out);
  check_waits(contract, trace, own, out);
  check_gives_back(trace, out);
  check_copies(contract, call, trace, out);
  check_finishes(contract, trace, out);
  if (contract.work) {
    for (const std::string& fact : contract.work(call, trace)) out.push_back({"work", fact});
  }
  return out;
}

std::string contract_report(const Contract& contract, const ContractCall& call, const Trace& trace,
                            const std::vector<Violation>& violations) {
  if (violations.empty()) return "";
  std::ostringstream out;
  out << call.text << " broke " << (violations.size() == 1 ? "a promise" : "promises") << " of "
      << contract.function << "'s contract (its header in lessons/ states them):";
  for (const Violation& v : violations) out << "\n- " << v.clause << ": " << v.facts;
  out << "\nWhat the call did on the GPU:\n" << trace.describe();
  return out.str();
}

void require_contract(const Contract& contract, const ContractCall& call, const std::optional<Trace>& trace) {
  if (!trace) return;
  const auto violations = contract_violations(contract, call, *trace);
  if (!violations.empty()) FAIL(contract_report(contract, call, *trace, violations));
}

void require_contract_kept(const Contract& contract, const ContractCall& call, const std::function<void()>& work) {
  {
    const GpuWait wait(call.text + " (untraced)");
    work();
  }
  synchronize(call.text + " (untraced)");
  std::optional<Trace> trace;
  {
    const GpuWait wait(call.text);
    trace = grader::trace(work);
  }
  require_contract(contract, call, trace);
}

}  // namespace grader
