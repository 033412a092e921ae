// Lesson 04's grader: what its tests (task1_*_test.cu .. task4_*_test.cu) share: the inputs, the
// sizes and the tolerance every sum is held to, the output and workspace a call writes into, and
// the checks of tasks 2 and 4 (one device-wide sum, checked the same way twice), defined in
// reduction_grader.cu with their diagnoses.
//
// Every sum is checked against a float64 sum (added on the device) of the very floats the GPU read, on
// sizes around warps, blocks and a full wave of threads, a prime near 2^20 and (outside the
// sanitizer) 2^26 and 2^28 as memory allows, on four inputs (under the sanitizer uniform only):
// uniform in [-1, 1], all ones, a cancelling one (sum near 0, sum of |x| large) and a large
// offset (1000 + noise). The tolerance is kC * ceil(log2 n) * u * sum|x| with u = 2^-24: a
// tree's error bound, relative to sum|x| and never to |sum x| alone. Ones must come out exactly (n <= 2^24): every partial
// sum of ones is an integer float32 holds exactly, so any dropped or doubled element shows.
// Outputs are poisoned and guarded; the workspace starts as garbage; calls are repeated
// without resetting anything; the tracer sees which kernels ran, on which stream, and what
// was copied where. Performance is GB/s at 2^26 and 2^28 floats as a fraction of
// cub::DeviceReduce::Sum timed in the same process (the lower of the two counts), and of the
// measured copy bandwidth.
#pragma once

#include "benchmark.hpp"
#include "reduction.hpp"

#include "contract.hpp"
#include "device_check.cuh"
#include "grader.hpp"
#include "output_matcher.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace reduction_grader {

// ---- inputs, sizes and the tolerance -------------------------------------------------------

// The tolerance factor c and the tree's bound: lesson 04's benchmark declaration, whose sweep
// checks with the same rule (benchmark.hpp).
using reduction_benchmark::ceil_log2;
using reduction_benchmark::kC;
using reduction_benchmark::kUnitRoundoff;
using reduction_benchmark::norm_tolerance;
constexpr std::size_t kExactOnesLimit = std::size_t(1) << 24;  // ones sum exactly up to here
// What the workspace holds at first: about 1.03e7 as a float and 1.26e9 as an unsigned, so neither an
// accumulator nor a counter left in it unset can pass.
constexpr unsigned kGarbageBits = 0x4B1D4B1Du;

enum class Input { Uniform, Ones, Cancelling, Offset, Signs };

inline std::string input_text(Input input) {
  switch (input) {
    case Input::Uniform: return "uniform in [-1, 1]";
    case Input::Ones: return "all ones";
    case Input::Cancelling: return "cancelling (x[i] = r[i] - r[i+1], r uniform in [-1000, 1000])";
    case Input::Offset: return "offset (1000 + uniform in [-1, 1])";
    case Input::Signs: return "random signs (+1 or -1)";
  }
  return "?";
}

// Element i of an input (a pure function of the seed and i), the same on the host and the device
// (workbook::random_uniform rounds as the host does).
WORKBOOK_HOST_DEVICE inline float input_value(Input input, std::uint64_t seed, std::size_t i) {
  switch (input) {
    case Input::Uniform: return workbook::random_uniform(seed, i, -1.0f, 1.0f);
    case Input::Ones: return 1.0f;
    case Input::Cancelling:
      return workbook::random_uniform(seed, i, -1000.0f, 1000.0f) - workbook::random_uniform(seed, i + 1, -1000.0f, 1000.0f);
    case Input::Offset: return 1000.0f + workbook::random_uniform(seed, i, -1.0f, 1.0f);
    case Input::Signs: return workbook::random_uniform(seed, i, -1.0f, 1.0f) < 0 ? -1.0f : 1.0f;
  }
  return 0.0f;
}

// What sum_on_device adds up (grader/support/device_check.cuh): x, |x| or x^2, in float64.
struct Identity {
  WORKBOOK_HOST_DEVICE double operator()(float x) const { return x; }
};
struct Absolute {
  WORKBOOK_HOST_DEVICE double operator()(float x) const { return x < 0 ? -double(x) : double(x); }
};
struct Square {
  WORKBOOK_HOST_DEVICE double operator()(float x) const { return double(x) * x; }
};

// n floats filled on the device (guarded by NaN) and their float64 sums, added there
// (sum_on_device) before any call; the same floats on the host only when a check asks for them
// (host()). Under compute-sanitizer all on the host and uploaded (small sizes, and no launches of
// the grader's own to instrument).
struct Data {
  Data(std::size_t n, Input kind, const std::string& name);
  std::size_t size() const { return device.size(); }
  double exact_sum() const { return total; }
  // How far a right sum of the whole input may be from exact_sum().
  double tolerance() const;
  // The floats the GPU was given, made on the host from the seed the first time they are asked
  // for (never copied back: the student's call could have written into them).
  const std::vector<float>& host() const;
  // The float64 sum of x^2.
  double sum_squares() const;
  double sum(std::size_t begin, std::size_t end) const {
    const std::vector<float>& x = host();
    double s = 0;
    for (std::size_t i = begin; i < end; ++i) s += x[i];
    return s;
  }
  double sum_abs(std::size_t begin, std::size_t end) const {
    const std::vector<float>& x = host();
    double s = 0;
    for (std::size_t i = begin; i < end; ++i) s += std::abs(double(x[i]));
    return s;
  }
  std::string text() const { return "n = " + std::to_string(size()) + ", " + input_text(input); }

  Input input;
  workbook::GuardedDeviceArray device;
  double total = 0, total_abs = 0;  // the exact sum and sum of |x|, computed once

private:
  std::uint64_t seed_;
  mutable std::vector<float> host_;
  mutable bool made_ = false;
};

// How far a float32 sum of \p count elements whose |x| add up to \p sum_abs may be from the exact
// sum; 0 (exact) for ones within float32's integers.
inline double sum_tolerance(std::size_t count, double sum_abs, Input input) {
  if (input == Input::Ones && count <= kExactOnesLimit) return 0.0;
  // Random signs: every partial sum is an integer far below 2^24 (they wander like sqrt(n)), so
  // any order is exact, and at 2^28 a single dropped element shows.
  if (input == Input::Signs) return 0.0;
  return reduction_benchmark::tree_sum_tolerance(count, sum_abs);
}

inline double Data::tolerance() const { return sum_tolerance(size(), total_abs, input); }

inline bool within(double got, double want, double tolerance) {
  return std::isfinite(got) && std::abs(got - want) <= tolerance;
}

// The sizes every correctness test covers: around a warp, the common blocks, one wave of the
// GPU's threads, a prime near 2^20, one drawn from the seed; outside the sanitizer also 2^22.
inline std::vector<std::size_t> correctness_sizes() {
  const auto device = workbook::query_device();
  const std::size_t wave = std::size_t(device.sm_count) * device.max_threads_per_sm;
  if (grader::pass_check_mode()) {
    // The check of a pass: a subset of the sanitizer mode's sizes below (./grade --sanitize runs
    // them all): below a warp, a warp and one more, whole blocks of any size up to 1024 and a
    // ragged one after them, multiples of 4 (a vectorised path) and tails of 1, 2 and 3 past them,
    // several blocks. Not the random size of up to 100000, which alone costs racecheck more than
    // the rest together. Large aligned inputs come from check_own_kernels_on_stream's call of 2^20
    // (run, untraced, under the sanitizer).
    return {1, 2, 31, 33, 256, 257, 1024, 1025, 4 * 1024 + 3};
  }
  std::vector<std::size_t> sizes{1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4 * 1024 + 3};
  sizes.push_back(1 + grader::seed_for("size") % 100000);
  if (grader::sanitize_mode()) return sizes;
  for (const std::size_t n : {wave - 1, wave, wave + 1, wave * 4 + 1, std::size_t(1048573), std::size_t(1) << 22}) {
    sizes.push_back(n);
  }
  return sizes;
}

// The inputs of every correctness size (2^22 at most). Ones first: their exact sum tells how many
// elements were dropped or doubled. Under compute-sanitizer uniform only: its tools look at the
// addresses, barriers and shared-memory accesses of a call, which the values do not change (a
// sum reads every element whatever it holds), and a pass is checked there only once its tests
// passed on every input. In a class on an H100 the check took 17.7 s a submission with four
// inputs (4 gradings at once), 10.2 s with one (8 at once).
inline std::vector<Input> inputs_for() {
  if (grader::sanitize_mode()) return {Input::Uniform};
  return {Input::Ones, Input::Uniform, Input::Cancelling, Input::Offset};
}

// ---- the call under test -------------------------------------------------------------------

// One float of output on the device, guarded, and a workspace that starts as garbage.
// The workspace is guarded like an output: a call that writes past workspace_bytes is caught.
struct Output {
  workbook::GuardedDeviceArray out{1};
  workbook::GuardedDeviceArray workspace{kWorkspaceBytes / sizeof(float)};
  int reruns = 0;  // reruns made from this output; each refills shared memory with another value
  Output() { fill_garbage(); }
  void fill_garbage() { workbook::fill_words_device(workspace.data(), kWorkspaceBytes / 4, kGarbageBits); }
  // Back to a new Output's state (*out poisoned, the workspace garbage, every guard intact), for the
  // next call of a loop: enqueued on the legacy default stream, without a wait. The caller's
  // out.poison() before the call (which waits for the device) puts it before the student's work on
  // any stream. One Output for a loop of calls saves its allocations, frees and waits on every
  // call: round trips to the GPU, each about a millisecond where gradings share it.
  void reset() {
    out.enqueue_poison();
    workspace.enqueue_fill(kGarbageBits);
    reruns = 0;
  }
  // Fails the test when the last call wrote outside its workspace.
  void check_workspace(const std::string& what) const {
    const workbook::GuardReport guards = workspace.check_guards();
    if (!guards.intact()) {
      FAIL(what << " wrote outside its workspace (" << kWorkspaceBytes << " bytes): "
           << guards.describe(kWorkspaceBytes / sizeof(float)) << " (counting in floats). Everything the call "
           "keeps on the device must fit in workspace_bytes: one partial per block of a few hundred elements "
           "does not fit at 2^28 floats.");
    }
  }
};

// A device-wide sum under test: reduce_sum or reduce_sum_challenge.
using SumFunction = void (*)(const float*, std::size_t, float*, void*, std::size_t, cudaStream_t);

// What the grader knows about the function that produced a result, for the diagnosis.
struct Subject {
  std::string name;         // "reduce_sum"
  SumFunction run = nullptr;
  cudaStream_t stream = nullptr;
};

// A non-blocking stream for the student's calls, made once.
cudaStream_t student_stream();

// The device-wide sum \p run under the name \p name, called on student_stream().
Subject subject(const char* name, SumFunction run);

// ---- tasks 2 and 4: a device-wide sum of the student's own kernels ---------------------------

// True when \p s wrote nothing into *out for a small input: the untouched skeleton.
// A call that launched work or copied something is implemented, whatever it left in *out (a
// last-block counter stuck on the workspace's garbage leaves *out unwritten): the checks say so.
// Calls \p s once on 1000 floats, traced: a call that ran nothing on the GPU and left *out as the
// grader filled it ends the test as "wrote nothing", which the driver calls "not implemented
// yet" only when the task's code is still the skeleton.
void require_writes(const Subject& s);

// A device-wide sum (tasks 2 and 4) on every size and input of the correctness list.
void check_sizes_and_inputs(const Subject& s);

// n = 0, repeated calls, an unaligned input.
void check_special_calls(const Subject& s);

// What a hand-written sum did on the GPU, traced on 2^20 floats: its own kernels, on its stream,
// no CUB, no detour through the host.
void check_own_kernels_on_stream(const Subject& s, const char* task);

// 2^26 and 2^28 floats, as memory allows (not under the sanitizer).
void check_large(const Subject& s);

// CUB's kernels live in the cub:: namespace (compiled into the program, not a shared library).
// The kernel's own qualified name (before its template arguments) is in cub::, so a student's
// kernel templated on a CUB type is not taken for CUB's.
bool is_cub_kernel(const grader::TracedKernel& k);

// The kernels of \p t that are CUB's or a library's.
std::vector<grader::TracedKernel> cub_kernels(const grader::Trace& t);

// ---- task 1: the block tree ----------------------------------------------------------------

// reduce_block<<<ceil(n / block), block, block floats of shared memory, stream>>>(in, n, sums).
void launch_block(const float* in, std::size_t n, float* sums, int block, cudaStream_t stream = nullptr);

// reduce_block with blocks of \p block on \p d, every block's sum checked; on a wrong one, fails
// with the diagnosis (reruns, the last block, probes with ones).
void check_blocks(Data& d, int block, const std::string& what);

// ---- task 3: the norm through CUB ----------------------------------------------------------

// norm_l2_cub on \p n floats at \p in into \p o, waited for and read back.
grader::DeviceOutput norm(const float* in, std::size_t n, Output& o);

// norm_l2_cub once on 1000 floats, traced: see require_writes.
void require_norm_writes();

// ---- performance: GB/s against CUB ---------------------------------------------------------

// The right result of a timed call and its tolerance.
struct Expected {
  double value, tolerance;
};

// GB/s of \p run at 2^26 and 2^28 floats (as memory allows) against CUB's Sum on the same data;
// the lower fraction is the task's metric. \p exact gives the right result and its tolerance
// for the input; a wrong result is never timed. The input is uniform in [0, 1): no cancellation,
// so a dropped part of it is far outside the tolerance.
void measure_against_cub(const std::string& name,
                         const std::function<void(const float*, std::size_t, float*, void*, cudaStream_t)>& run,
                         const std::function<Expected(const float* x, std::size_t n)>& exact);

// The sum of the \p n floats at device address \p x (x >= 0) and its tolerance.
Expected exact_sum(const float* x, std::size_t n);

// The L2 norm of the \p n floats at device address \p x and its tolerance.
Expected exact_norm(const float* x, std::size_t n);

// ---- contracts -----------------------------------------------------------------------------

// What reduction.hpp promises of reduce_sum, norm_l2_cub and reduce_sum_challenge is
// grader::given_stream_contract: everything on the stream it is given, no wait for the GPU, no copy
// to or from the host (the result stays on the device, in *out), nothing left behind (the
// workspace is the caller's: no allocation of its own outlives the call).

// \p contract held to a call of \p run (named \p name) at every size the correctness tests use,
// by grader::require_contract_kept.
void check_contract_at_every_size(const grader::Contract& contract, SumFunction run, const std::string& name);

}  // namespace reduction_grader
