// The contract checker on made-up traces: each clause can fail, and a trace that keeps the
// contract passes. Host-only: runs in CI.
#include "contract.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using Catch::Matchers::ContainsSubstring;

namespace {

// Handles that look like the runtime's: any distinct non-null values will do.
const auto kOwn = reinterpret_cast<cudaStream_t>(0x1000);
const auto kOther = reinterpret_cast<cudaStream_t>(0x2000);
const auto kGiven = reinterpret_cast<cudaStream_t>(0x3000);
const auto kEvent = reinterpret_cast<const void*>(0x4000);

grader::TracedCall call(const std::string& name, const void* pointer = nullptr, cudaStream_t stream = nullptr,
                        bool has_stream = false) {
  grader::TracedCall c;
  c.name = name;
  c.pointer = pointer;
  c.stream = stream;
  c.has_stream = has_stream;
  return c;
}

grader::TracedCall on(const std::string& name, cudaStream_t stream, const void* pointer = nullptr) {
  return call(name, pointer, stream, true);
}

grader::TracedKernel kernel(cudaStream_t stream, std::uint64_t end_ns = 2000) {
  grader::TracedKernel k;
  k.name = "transform";
  k.stream = stream;
  k.stream_known = true;
  k.start_ns = 1000;
  k.end_ns = end_ns;
  return k;
}

grader::TracedCopy copy(grader::CopyDirection direction, const void* host, cudaStream_t stream) {
  grader::TracedCopy c;
  c.direction = direction;
  c.bytes = 16;
  c.api = "cudaMemcpyAsync";
  c.stream = stream;
  c.stream_known = true;
  (direction == grader::CopyDirection::HostToDevice ? c.source_pointer : c.destination_pointer) = host;
  c.start_ns = 1000;
  c.end_ns = 2000;
  return c;
}

// A pipeline that keeps the contract of lesson 05's process: one stream of its own, copies from
// host_in and into host_out on it, a wait for it, everything given back.
float host_in[4], host_out[4], elsewhere[4];

grader::ContractCall process_call() {
  return {"process(n = 4)", {}, {{"host_in", host_in, sizeof host_in}, {"host_out", host_out, sizeof host_out}}, {}};
}

grader::Contract process_contract() {
  grader::Contract c;
  c.function = "process";
  c.streams = grader::Streams::Own;
  c.waits = grader::Waits::OwnWork;
  c.finishes_before_return = true;
  c.copies_read = std::vector<std::string>{"host_in"};
  c.copies_write = std::vector<std::string>{"host_out"};
  return c;
}

grader::Trace good_pipeline() {
  grader::Trace t;
  t.calls = {call("cudaStreamCreateWithFlags", kOwn), on("cudaMemcpyAsync", kOwn), on("cudaLaunchKernel", kOwn),
             on("cudaMemcpyAsync", kOwn), on("cudaStreamSynchronize", kOwn), call("cudaStreamDestroy", kOwn)};
  t.kernels = {kernel(kOwn)};
  t.copies = {copy(grader::CopyDirection::HostToDevice, host_in + 1, kOwn),
              copy(grader::CopyDirection::DeviceToHost, host_out, kOwn)};
  t.returned_ns = 5000;
  return t;
}

std::string report(const grader::Contract& c, const grader::ContractCall& k, const grader::Trace& t) {
  return grader::contract_report(c, k, t, grader::contract_violations(c, k, t));
}

}  // namespace

TEST_CASE("a trace that keeps the contract breaks nothing", "[contract]") {
  CHECK(grader::contract_violations(process_contract(), process_call(), good_pipeline()).empty());
  CHECK(report(process_contract(), process_call(), good_pipeline()).empty());
}

TEST_CASE("streams: work on the default stream or someone else's stream breaks the contract", "[contract]") {
  grader::Trace t = good_pipeline();
  t.kernels.push_back(kernel(nullptr));
  const std::string text = report(process_contract(), process_call(), t);
  CHECK_THAT(text, ContainsSubstring("- streams: kernel transform on the default stream"));
  CHECK_THAT(text, ContainsSubstring("Hint [default-stream]"));
  CHECK_THAT(text, ContainsSubstring("What the call did on the GPU"));

  grader::Trace foreign = good_pipeline();
  foreign.copies.push_back(copy(grader::CopyDirection::HostToDevice, host_in, kOther));
  const auto v = grader::contract_violations(process_contract(), process_call(), foreign);
  REQUIRE(v.size() == 1);
  CHECK(v[0].clause == "streams");
  CHECK_THAT(v[0].facts, ContainsSubstring("copy host -> device on stream"));
  CHECK_THAT(v[0].facts, !ContainsSubstring("Hint ["));  // no proof of a cause beyond the fact itself

  // A function given a stream may use it, and only it.
  grader::Contract given = process_contract();
  given.streams = grader::Streams::Given;
  grader::ContractCall with_stream = process_call();
  with_stream.streams = {kGiven};
  grader::Trace t2;
  t2.kernels = {kernel(kGiven)};
  CHECK(grader::contract_violations(given, with_stream, t2).empty());
  t2.calls = {on("cudaMallocAsync", kOther)};
  CHECK_THAT(report(given, with_stream, t2), ContainsSubstring("cudaMallocAsync on stream"));
}

TEST_CASE("graph nodes count on the stream their graph was launched on", "[contract]") {
  grader::Trace t = good_pipeline();
  grader::TracedKernel node = kernel(kOwn);
  node.from_graph = true;
  t.kernels.push_back(node);
  t.calls.push_back(on("cudaGraphLaunch", kOwn));
  CHECK(grader::contract_violations(process_contract(), process_call(), t).empty());
  t.calls.push_back(on("cudaGraphLaunch", nullptr));
  CHECK_THAT(report(process_contract(), process_call(), t), ContainsSubstring("cudaGraphLaunch on the default stream"));
}

TEST_CASE("waits: what a function may wait for", "[contract]") {
  grader::Contract never = process_contract();
  never.waits = grader::Waits::Never;
  never.finishes_before_return = false;
  // Its own stream is fine for OwnWork, not for Never.
  CHECK(grader::contract_violations(process_contract(), process_call(), good_pipeline()).empty());
  CHECK_THAT(report(never, process_call(), good_pipeline()), ContainsSubstring("must return without waiting"));

  grader::Trace device = good_pipeline();
  device.calls.push_back(call("cudaDeviceSynchronize"));
  CHECK_THAT(report(process_contract(), process_call(), device), ContainsSubstring("Hint [device-synchronize]"));

  grader::Trace legacy = good_pipeline();
  legacy.calls.push_back(on("cudaStreamSynchronize", nullptr));
  const std::string text = report(process_contract(), process_call(), legacy);
  CHECK_THAT(text, ContainsSubstring("cudaStreamSynchronize on the default stream, which it did not create"));
  CHECK_THAT(text, !ContainsSubstring("Hint ["));

  grader::Trace synchronous = good_pipeline();
  grader::TracedCall memcpy_call = call("cudaMemcpy");
  synchronous.calls.push_back(memcpy_call);
  CHECK_THAT(report(never, process_call(), synchronous), ContainsSubstring("Hint [synchronous-copy]"));

  grader::Trace frees = good_pipeline();
  frees.calls.push_back(call("cudaFree", kEvent));
  CHECK_THAT(report(never, process_call(), frees), ContainsSubstring("cudaFree (it waits for all work on the GPU"));
}

TEST_CASE("waits: polling until the GPU is done is waiting", "[contract]") {
  grader::Contract never = process_contract();
  never.waits = grader::Waits::Never;
  never.finishes_before_return = false;
  const auto query = [](cudaStream_t s, cudaError_t result) {
    grader::TracedCall c = on("cudaStreamQuery", s);
    c.result = result;
    return c;
  };
  grader::Trace polled = good_pipeline();
  for (int i = 0; i < 3; ++i) polled.calls.push_back(query(kOwn, cudaErrorNotReady));
  polled.calls.push_back(query(kOwn, cudaSuccess));
  CHECK_THAT(report(never, process_call(), polled),
             ContainsSubstring("cudaStreamQuery in a loop until stream 0x1000 was done (4 queries): polling is waiting"));
  // Its own stream is fine where it may wait for its own work; another's is not.
  CHECK(grader::contract_violations(process_contract(), process_call(), polled).empty());
  grader::Trace others = good_pipeline();
  others.calls.push_back(query(kOther, cudaErrorNotReady));
  others.calls.push_back(query(kOther, cudaSuccess));
  CHECK_THAT(report(process_contract(), process_call(), others), ContainsSubstring("polling is waiting"));
  // One look that found the work not done, and no more on that stream: no wait, though another
  // stream answered "done" after it.
  grader::Trace glance = good_pipeline();
  glance.calls.push_back(query(kOther, cudaErrorNotReady));
  glance.calls.push_back(query(kGiven, cudaSuccess));
  CHECK(grader::contract_violations(process_contract(), process_call(), glance).empty());
}

TEST_CASE("waits: an event wait is its own only on its own event, recorded on its own stream", "[contract]") {
  grader::Trace t = good_pipeline();
  t.calls.insert(t.calls.begin(), call("cudaEventCreate", kEvent));
  t.calls.push_back(on("cudaEventRecord", kOwn, kEvent));
  t.calls.push_back(call("cudaEventSynchronize", kEvent));
  t.calls.push_back(call("cudaEventDestroy", kEvent));
  CHECK(grader::contract_violations(process_contract(), process_call(), t).empty());

  grader::Trace on_default = good_pipeline();
  on_default.calls.insert(on_default.calls.begin(), call("cudaEventCreate", kEvent));
  on_default.calls.push_back(on("cudaEventRecord", nullptr, kEvent));
  on_default.calls.push_back(call("cudaEventSynchronize", kEvent));
  on_default.calls.push_back(call("cudaEventDestroy", kEvent));
  CHECK_THAT(report(process_contract(), process_call(), on_default), ContainsSubstring("last recorded on the default stream"));
}

TEST_CASE("gives back: streams, events, memory, registrations and graphs", "[contract]") {
  grader::Trace t = good_pipeline();
  t.calls.pop_back();  // no cudaStreamDestroy
  t.calls.push_back(call("cudaEventCreateWithFlags", kEvent));
  grader::TracedCall registration = call("cudaHostRegister", elsewhere);
  registration.bytes = sizeof elsewhere;
  t.calls.push_back(registration);
  t.calls.push_back(call("cudaGraphInstantiate"));
  const auto v = grader::contract_violations(process_contract(), process_call(), t);
  REQUIRE(v.size() == 1);
  CHECK(v[0].clause == "gives back");
  CHECK_THAT(v[0].facts, ContainsSubstring("1 stream (cudaStreamDestroy)"));
  CHECK_THAT(v[0].facts, ContainsSubstring("1 event (cudaEventDestroy)"));
  CHECK_THAT(v[0].facts, ContainsSubstring("1 host range registered"));
  CHECK_THAT(v[0].facts, ContainsSubstring("1 executable graph"));

  grader::Trace memory = good_pipeline();
  grader::TracedCall allocation = call("cudaMallocAsync", kEvent, kOwn, true);
  allocation.bytes = 4096;
  memory.calls.push_back(allocation);
  CHECK_THAT(report(process_contract(), process_call(), memory), ContainsSubstring("4096 bytes of device memory"));
}

TEST_CASE("copies: which host buffers copies may read and write, and registrations", "[contract]") {
  grader::Trace t = good_pipeline();
  t.copies.push_back(copy(grader::CopyDirection::HostToDevice, elsewhere, kOwn));
  t.copies.push_back(copy(grader::CopyDirection::DeviceToHost, host_in, kOwn));
  const std::string text = report(process_contract(), process_call(), t);
  CHECK_THAT(text, ContainsSubstring("copied to the device from host memory of its own"));
  CHECK_THAT(text, ContainsSubstring("copied from the device into host_in"));

  grader::Trace registered = good_pipeline();
  grader::TracedCall r = call("cudaHostRegister", host_in);
  r.bytes = sizeof host_in;
  registered.calls.push_back(r);
  registered.calls.push_back(call("cudaHostUnregister", host_in));
  CHECK_THAT(report(process_contract(), process_call(), registered), ContainsSubstring("registered host_in with cudaHostRegister"));
  grader::Contract may = process_contract();
  may.may_register = {"host_in"};
  CHECK(grader::contract_violations(may, process_call(), registered).empty());
}

TEST_CASE("finishes: a result on the host needs the work done before the return", "[contract]") {
  grader::Trace t = good_pipeline();
  t.returned_ns = 1500;
  const std::string text = report(process_contract(), process_call(), t);
  CHECK_THAT(text, ContainsSubstring("- finishes: it returned 0 us before its last work"));
  CHECK_THAT(text, ContainsSubstring("Hint [returns-early]"));
  grader::Contract later = process_contract();
  later.finishes_before_return = false;
  CHECK(grader::contract_violations(later, process_call(), t).empty());
}

TEST_CASE("work: the lesson's own property of the call joins the report", "[contract]") {
  grader::Contract c = process_contract();
  c.work = [](const grader::ContractCall& k, const grader::Trace& t) {
    std::vector<std::string> facts;
    if (t.kernels.size() != static_cast<std::size_t>(k.arguments.at("num_chunks"))) facts.push_back("wrong chunks");
    return facts;
  };
  grader::ContractCall k = process_call();
  k.arguments["num_chunks"] = 1;
  CHECK(grader::contract_violations(c, k, good_pipeline()).empty());
  k.arguments["num_chunks"] = 3;
  CHECK_THAT(report(c, k, good_pipeline()), ContainsSubstring("- work: wrong chunks"));
}

TEST_CASE("given_stream_contract: the given stream only, no wait, no host copies, everything given back",
          "[contract]") {
  const grader::Contract c = grader::given_stream_contract("scale");
  CHECK(c.function == "scale");
  const grader::ContractCall k{"scale(n = 4, stream)", {kGiven}, {{"host_in", host_in, sizeof host_in}}, {}};
  grader::Trace kept;
  kept.calls = {on("cudaMemsetAsync", kGiven), on("cudaLaunchKernel", kGiven)};
  kept.kernels = {kernel(kGiven)};
  kept.returned_ns = 5000;
  CHECK(grader::contract_violations(c, k, kept).empty());

  grader::Trace elsewhere = kept;  // a stream of its own: not the one it was given
  elsewhere.calls.insert(elsewhere.calls.begin(), call("cudaStreamCreateWithFlags", kOwn));
  elsewhere.calls.push_back(call("cudaStreamDestroy", kOwn));
  elsewhere.kernels.push_back(kernel(kOwn));
  CHECK_THAT(report(c, k, elsewhere), ContainsSubstring("- streams:"));

  grader::Trace waits = kept;
  waits.calls.push_back(on("cudaStreamSynchronize", kGiven));
  CHECK_THAT(report(c, k, waits), ContainsSubstring("- waits:"));

  grader::Trace copies = kept;  // even from a host buffer it was given
  copies.copies = {copy(grader::CopyDirection::HostToDevice, host_in, kGiven)};
  CHECK_THAT(report(c, k, copies), ContainsSubstring("- copies:"));

  grader::Trace leaks = kept;
  leaks.calls.push_back(call("cudaEventCreate", kEvent));
  CHECK_THAT(report(c, k, leaks), ContainsSubstring("- gives back:"));
}
