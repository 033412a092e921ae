/// \file
/// A graded host function's contract, and the one checker that holds a trace to it.
///
/// Every function a student writes that is more than a kernel promises, in its lesson header,
/// how it uses the GPU: which streams it may put work on, whether it may wait for the GPU and
/// for what, that it gives back what it creates, which host buffers its copies may touch, and
/// how its work follows its arguments. Each lesson declares those promises once, as a
/// grader::Contract (grader/<lesson>/contracts.hpp), and its tests check every traced call of
/// the function against it, at every shape they try, with require_contract_kept(). A check
/// written for one known mistake misses the next student's; the contract catches both.
///
/// The checker reports facts (what the trace shows, against which clause), and a hint only
/// where the trace itself proves the cause (a cudaDeviceSynchronize call, work on the default
/// stream, a synchronous copy).
#pragma once

#include "tracer.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace grader {

/// Which streams a function may put work on (kernels, copies, memsets, stream-ordered
/// allocations, event records, graph launches). The legacy and per-thread default streams are
/// never among them, except under Streams::Any.
enum class Streams {
  Given,       ///< only the streams it is given (a cuBLAS handle's stream counts as given)
  Own,         ///< only streams it creates itself
  GivenOrOwn,  ///< the streams it is given and streams it creates (joined to them by events)
  Any,         ///< any, the default stream included (lesson 01's synchronous round trip)
};

/// Whether a function may make the host wait for the GPU before it returns.
enum class Waits {
  Never,    ///< "returns without waiting": no synchronisation, no synchronous copy, no cudaFree
  OwnWork,  ///< only for streams and events it created, never the device or the default stream
  Any,      ///< whatever it needs
};

/// A host buffer a call is given, under the name its header uses.
struct HostBuffer {
  std::string name;  ///< "host_in"
  const void* data = nullptr;
  std::size_t bytes = 0;
};

/// One call of a graded function, as the grader made it.
struct ContractCall {
  std::string text;                         ///< "process(n = 4194304, 4 streams, 16 chunks)"
  std::vector<cudaStream_t> streams;        ///< the streams it was given (none, one, or two for lesson 05's task 2)
  std::vector<HostBuffer> host;             ///< every host buffer it was given
  std::map<std::string, double> arguments;  ///< its scalar arguments by name, for the work clause
};

/// The promises of one function.
struct Contract {
  std::string function;  ///< as the header names it
  Streams streams = Streams::Given;
  Waits waits = Waits::Never;
  /// Its results are on the host when it returns: everything it queued has ended by then.
  bool finishes_before_return = false;
  /// Host buffers (by name) that copies to the device may read, and that copies from the
  /// device may write; std::nullopt: no restriction. Host memory outside every buffer the call
  /// was given (a buffer of its own) counts as "a buffer of its own".
  std::optional<std::vector<std::string>> copies_read, copies_write;
  /// Host buffers (by name) it may register with cudaHostRegister (none by default).
  std::vector<std::string> may_register;
  /// How its work follows its arguments: the facts that break it, one per element; empty
  /// when the work is what the arguments ask for. Optional.
  std::function<std::vector<std::string>(const ContractCall&, const Trace&)> work;
};

/// One broken promise: the clause and the facts.
struct Violation {
  std::string clause;  ///< "streams", "waits", "gives back", "copies", "finishes", "work"
  std::string facts;   ///< what the trace shows, with a "Hint [id]: ..." line where it proves the cause
};

/// The contract of a function that only queues work on the stream it is given: no other stream,
/// no wait for the GPU, no copy to or from the host, everything it creates given back (lesson
/// 02's launch_multiply_add, 03's matmul_cublas and matmul_challenge, 04's sums, 05's
/// transform_batches). A lesson adds to it what its function may do besides.
Contract given_stream_contract(const std::string& function);

/// Every way \p trace of \p call breaks \p contract; empty when it keeps it.
std::vector<Violation> contract_violations(const Contract& contract, const ContractCall& call, const Trace& trace);

/// The violations as a student reads them: "<call> broke its contract (lesson header):" then
/// one item per violation, then what the call did on the GPU. Empty when there are none.
std::string contract_report(const Contract& contract, const ContractCall& call, const Trace& trace,
                            const std::vector<Violation>& violations);

/// Fails the current test with contract_report() when \p trace breaks the contract. Does
/// nothing without a trace (under compute-sanitizer, which holds CUPTI itself).
void require_contract(const Contract& contract, const ContractCall& call, const std::optional<Trace>& trace);

/// Runs \p work, the call \p call describes, twice and holds the second run to \p contract with
/// require_contract(): the first runs untraced and is waited for, so what a function makes once
/// and keeps for its later calls (an event, cuBLAS's workspace) is not taken for
/// something every call leaves behind; one made by every call still is. Both runs are reported
/// to the driver as waits for the GPU under call.text (grader::GpuWait), so a call that never
/// returns is named.
void require_contract_kept(const Contract& contract, const ContractCall& call, const std::function<void()>& work);

}  // namespace grader
