// Lesson 05's contracts: what lessons/05_streams/streams.hpp promises of each function, in the
// terms of grader::Contract (grader/support/contract.hpp). The tests hold every traced call of a
// function to its contract, at every shape they try; nothing here is checked anywhere else.
#pragma once

#include "contract.hpp"

#include <string>
#include <vector>

namespace streams_grader {

// Bytes each way, and the kernels a call of n elements must run: "each element goes in once and
// comes back once", through \p transforms transform kernels (-1: any number).
inline std::vector<std::string> moves_each_element_once(const grader::ContractCall& call, const grader::Trace& t,
                                                        long transforms) {
  std::vector<std::string> facts;
  const auto n = static_cast<std::size_t>(call.arguments.at("n"));
  const std::size_t in = t.bytes_copied(grader::CopyDirection::HostToDevice);
  const std::size_t out = t.bytes_copied(grader::CopyDirection::DeviceToHost);
  if (in != n * sizeof(float) || out != n * sizeof(float)) {
    facts.push_back("it copied " + std::to_string(in) + " bytes to the device and " + std::to_string(out) +
                    " back, for " + std::to_string(n * sizeof(float)) + " bytes of input: each element goes in once "
                    "and comes back once");
  }
  if (transforms >= 0) {
    long launched = 0;
    for (const auto& k : t.program_kernels()) launched += k.name.find("transform_kernel") != std::string::npos;
    if (launched != transforms) {
      facts.push_back("it launched transform " + std::to_string(launched) + " times for n = " + std::to_string(n) +
                      " and num_chunks = " + std::to_string(long(call.arguments.at("num_chunks"))) +
                      ": one transform per chunk, num_chunks chunks (as many as there are elements, at most)");
    }
  }
  return facts;
}

// Task 1: streams of its own, waits only for them, host_out complete on return, copies straight
// between host_in/host_out and the device, num_chunks chunks.
inline grader::Contract process_contract() {
  grader::Contract c;
  c.function = "process";
  c.streams = grader::Streams::Own;
  c.waits = grader::Waits::OwnWork;
  c.finishes_before_return = true;
  c.copies_read = std::vector<std::string>{"host_in"};
  c.copies_write = std::vector<std::string>{"host_out"};
  c.work = [](const grader::ContractCall& call, const grader::Trace& t) {
    const double n = call.arguments.at("n"), chunks = call.arguments.at("num_chunks");
    return moves_each_element_once(call, t, long(n < chunks ? n : chunks));
  };
  return c;
}

// Task 2: its two given streams, no wait (it returns before the GPU is done), one transform,
// device_out copied into host_out once.
inline grader::Contract compute_then_copy_contract() {
  grader::Contract c = grader::given_stream_contract("compute_then_copy");
  c.copies_write = std::vector<std::string>{"host_out"};
  c.work = [](const grader::ContractCall& call, const grader::Trace& t) {
    std::vector<std::string> facts;
    const auto n = static_cast<std::size_t>(call.arguments.at("n"));
    if (t.bytes_copied(grader::CopyDirection::DeviceToHost) != n * sizeof(float)) {
      facts.push_back("it copied " + std::to_string(t.bytes_copied(grader::CopyDirection::DeviceToHost)) +
                      " bytes to the host for n = " + std::to_string(n) + ": device_out is copied once, whole");
    }
    return facts;
  };
  return c;
}

// Task 3: the stream it is given, no wait, every temporary freed in stream order; no host copies.
inline grader::Contract transform_batches_contract() { return grader::given_stream_contract("transform_batches"); }

// Task 4: streams of its own, waits only for its own streams and events, host_out complete on
// return, and the data path through `staging`: host_in and host_out are pageable and the
// caller's, so copies read and write staging only, and neither is registered.
inline grader::Contract process_pageable_contract() {
  grader::Contract c;
  c.function = "process_pageable";
  c.streams = grader::Streams::Own;
  c.waits = grader::Waits::OwnWork;
  c.finishes_before_return = true;
  c.copies_read = std::vector<std::string>{"staging"};
  c.copies_write = std::vector<std::string>{"staging"};
  c.work = [](const grader::ContractCall& call, const grader::Trace& t) { return moves_each_element_once(call, t, -1); };
  return c;
}

}  // namespace streams_grader
