// Lesson 04's grader: the checks its tests share (reduction_grader.hpp), with their diagnoses: a
// diagnosis names a cause only where the evidence (reruns, an exact count of ones, probe inputs,
// the trace) proves it. Helpers only this file uses are in the anonymous namespace.
#include "reduction_grader.hpp"

#include "cub_sum.hpp"
#include "diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using grader::HintId;

namespace reduction_grader {

namespace {

// "grader_own_": left unchecked by compute-sanitizer's check of a pass (grader/driver/sanitizer.py).
__global__ void grader_own_fill_input(float* x, std::size_t n, Input input, std::uint64_t seed) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    x[i] = input_value(input, seed, i);
  }
}

}  // namespace

Data::Data(std::size_t n, Input kind, const std::string& name)
    : input(kind),
      device(n, workbook::kInputGuardBits),
      seed_(grader::seed_for(name + " " + std::to_string(n) + " " + input_text(kind))) {
  if (grader::sanitize_mode()) {
    // Under compute-sanitizer the sizes are small and every launch of the grader's own is
    // instrumented too: the input is made and added up on the host, and uploaded.
    if (n > 0) device.upload(host());
    total = sum(0, n);
    total_abs = sum_abs(0, n);
    return;
  }
  if (n > 0) {
    const int blocks = static_cast<int>(std::min<std::size_t>((n + 255) / 256, 1024));
    grader_own_fill_input<<<blocks, 256>>>(device.data(), n, kind, seed_);
    WORKBOOK_CHECK_LAUNCH();
  }
  // On the legacy default stream, after the fill; sum_on_device's copy back waits for both, so
  // the input is there for every stream when the constructor returns.
  total = grader::sum_on_device(device.data(), n, Identity{});
  total_abs = grader::sum_on_device(device.data(), n, Absolute{});
}

double Data::sum_squares() const {
  if (grader::sanitize_mode()) {
    double s = 0;
    for (const float x : host()) s += double(x) * x;
    return s;
  }
  return grader::sum_on_device(device.data(), size(), Square{});
}

const std::vector<float>& Data::host() const {
  if (!made_) {
    host_.resize(size());
    for (std::size_t i = 0; i < host_.size(); ++i) host_[i] = input_value(input, seed_, i);
    made_ = true;
  }
  return host_;
}

namespace {

// Calls \p s on \p d into \p o and returns the result (waits for the GPU).
float call(const Subject& s, Data& d, Output& o, const float* in = nullptr) {
  s.run(in ? in : d.device.data(), d.size(), o.out.data(), o.workspace.data(), kWorkspaceBytes, s.stream);
  grader::synchronize(s.name + " on " + d.text());
  return o.out.download()[0];
}

// Ones on [begin, end) and zeros elsewhere: which elements the function adds.
float sum_of_indicator(const Subject& s, std::size_t n, std::size_t begin, std::size_t end, Output& o) {
  std::vector<float> host(n, 0.0f);
  std::fill(host.begin() + begin, host.begin() + end, 1.0f);
  workbook::GuardedDeviceArray device(n, workbook::kInputGuardBits);
  device.upload(host);
  o.out.poison();
  s.run(device.data(), n, o.out.data(), o.workspace.data(), kWorkspaceBytes, s.stream);
  grader::synchronize(s.name + " on ones at [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
  return o.out.download()[0];
}

std::string count_text(double k, const char* one, const char* many) {
  return std::to_string(static_cast<long long>(k)) + " " + (k == 1 ? one : many);
}

// \p s on \p d with *out set to \p start and the workspace set back to \p workspace, what it
// held before the first call: a rerun starts from the first run's state (only *out may differ).
float sum_from(const Subject& s, Data& d, Output& o, float start, const std::vector<float>& workspace,
               const std::string& what) {
  o.workspace.upload(workspace);
  o.out.upload({start});
  grader::fill_shared_memory(0.25f * float(++o.reruns));  // unwritten shared memory differs every rerun
  s.run(d.device.data(), d.size(), o.out.data(), o.workspace.data(), kWorkspaceBytes, s.stream);
  grader::synchronize(s.name + " " + what);
  return o.out.download()[0];
}

// Why a device-wide sum is wrong: the facts, and a hint only where the evidence shows the cause
// (reruns, an exact count of ones, probe inputs).
std::string sum_errors(const Subject& s, Data& d, Output& o, float got, bool unwritten,
                       const std::vector<float>& workspace) {
  const std::size_t n = d.size();
  const double want = d.exact_sum(), tolerance = d.tolerance();
  std::ostringstream out;
  out << s.name << " on " << d.text() << ": expected " << workbook::format_value(want) << ", got "
      << workbook::format_value(got, unwritten) << " (tolerance " << tolerance << ").\n";
  if (unwritten) {
    // Facts only: what decides that *out is written is not known to the grader.
    return out.str() + "*out was never written, yet the call launched work (it is not \"not implemented\"): "
                       "nothing in this call stored the result. If a counter or flag decides which thread writes "
                       "it, check what it holds at the start of every call and what it is compared with (atomicAdd "
                       "returns the value from before the add).";
  }

  // A race first. Evidence: called again from the first call's state (the same input, the
  // workspace set back to what it held then, *out NaN again: sum_from), a result differs from the
  // first by more than twice the tolerance, or one is finite and the other not.
  for (int again = 0; again < 3; ++again) {
    const float other = sum_from(s, d, o, workbook::poison_value(), workspace, "again, to compare two runs");
    const bool differ = std::isfinite(got) != std::isfinite(other) ||
                        (std::isfinite(got) && !within(other, got, 2 * tolerance));
    if (differ) {
      // A fact, no cause: a race does this, and so does a read of shared memory or workspace
      // nobody wrote, or float atomics adding in another order. The driver asks racecheck.
      return out.str() + grader::results_differ("the same input gave " + workbook::format_value(got) + " and then " +
                                                workbook::format_value(other) + " in two runs from the same state.");
    }
  }
  // The result follows what *out held: start it at 0, then at V, the workspace the same both times.
  // Evidence: right from 0, and V larger (within rounding) from V.
  constexpr float kStart = 1024.0f;
  const float from_zero = sum_from(s, d, o, 0.0f, workspace, "with *out set to 0 first");
  const float from_v = sum_from(s, d, o, kStart, workspace, "with *out set to 1024 first");
  const double rounding_near_v = 4 * kUnitRoundoff * (std::abs(want) + kStart);
  const bool follows_the_start =
      within(from_zero, want, tolerance) && within(from_v, want + kStart, tolerance + rounding_near_v);
  if (follows_the_start) {
    return out.str() + grader::hint(HintId::stale_accumulator,
                                    "with *out set to 0 before the call the result is right, and with *out set to 1024 "
                                    "it comes out 1024 larger: " + s.name + " adds to whatever *out holds. Nobody "
                                    "zeroes it for you, and the next call finds the last result there: zero it on the "
                                    "stream at the start of every call (cudaMemsetAsync), or write the result once "
                                    "instead of adding to it.");
  }
  // Ones: the exact count tells how many were dropped or doubled (a result far outside [0, 2n] is
  // no count at all). Evidence for each hint below: a count of ones n - k or n + k, which the
  // reruns above repeated, and for dropped-tail the two probes.
  if (d.input == Input::Ones && n <= kExactOnesLimit && std::isfinite(got) && got >= 0 && got <= 2.0 * n &&
      got == std::floor(got)) {
    const double k = double(n) - got;
    if (k > 0) {
      const float head = sum_of_indicator(s, n, 0, n - std::size_t(k), o);
      const float tail = sum_of_indicator(s, n, n - std::size_t(k), n, o);
      if (head == float(n - std::size_t(k)) && tail == 0.0f) {  // the head alone counts, the tail alone is 0
        return out.str() + grader::hint(HintId::dropped_tail, "the sum of " + std::to_string(n) + " ones came out " +
                                        workbook::format_value(got) + ", and ones on the last " +
                                        count_text(k, "element", "elements") + " alone sum to 0: the tail past the "
                                        "last whole chunk (float4, block or grid step) is never added. Every element "
                                        "from 0 to n - 1 must be added once.");
      }
      return out.str() + grader::hint(HintId::dropped_elements, "the sum of " + std::to_string(n) + " ones came "
                                      "out " + workbook::format_value(got) + ", short by " +
                                      count_text(k, "one", "ones") + ": " +
                                      count_text(k, "element is", "elements are") + " not counted.");
    }
    if (k < 0) {
      return out.str() + grader::hint(HintId::counted_twice, "the sum of " + std::to_string(n) + " ones came out " +
                                      workbook::format_value(got) + ", " + count_text(-k, "one", "ones") +
                                      " too many: " + count_text(-k, "element is", "elements are") +
                                      " counted twice. Do two parts of "
                                      "the code (the grid-stride loop and a tail, or two threads) cover the same "
                                      "indices?");
    }
  }
  if (!std::isfinite(got)) {
    out << "The input holds only finite numbers, and the grader surrounds it with NaN: a NaN result comes from "
           "reading something this call did not set: outside in[0 .. n-1], shared memory or workspace that was never "
           "written, or *out itself, which the grader fills with NaN.";
  } else if (const double unit = ceil_log2(n) * kUnitRoundoff * d.total_abs; unit == 0) {
    out << (n == 1 ? "The sum of one element is that element, exactly: no rounding error is allowed."
                   : "Every element is 0, so the sum is exactly 0: no rounding error is allowed.");
  } else {
    out << "The error is " << std::abs(got - want) / unit << " times ceil(log2 n) * u * sum|x| (u = 2^-24), the "
        << "error bound of a tree-shaped sum; the grader allows " << kC << " times it.";
  }
  return out.str();
}

// The largest error seen in this test, as a fraction of ceil(log2 n) * u * sum|x| (the tolerance
// divided by kC): recorded as the metric "worst_error_ratio", how the tolerance was calibrated.
double worst_error_ratio = 0;

void note_error(double got, double want, std::size_t n, double sum_abs) {
  const double unit = ceil_log2(n) * kUnitRoundoff * sum_abs;
  if (unit > 0) worst_error_ratio = std::max(worst_error_ratio, std::abs(got - want) / unit);
  grader::record_metric("worst_error_ratio", worst_error_ratio);
}

// Calls \p s on \p d into \p o and fails with the diagnosis when the result or the guards are wrong.
void check_sum(const Subject& s, Data& d, Output& o) {
  // What the workspace holds as the call begins (garbage: a new Output's, or reset's): reruns start there.
  const std::vector<float> workspace = o.workspace.download();
  o.out.poison();
  s.run(d.device.data(), d.size(), o.out.data(), o.workspace.data(), kWorkspaceBytes, s.stream);
  grader::synchronize(s.name + " on " + d.text());
  const grader::DeviceOutput result = grader::read_back(o.out);
  o.check_workspace(s.name + " on " + d.text());
  const float got = result.values[0];
  const bool unwritten = workbook::is_poison(got);
  const double want = d.exact_sum(), tolerance = d.tolerance();
  if (!result.guards.intact()) {
    FAIL(s.name << " on " << d.text() << " wrote outside *out (one float): " << result.guards.describe(1) << ".");
  }
  if (!unwritten && within(got, want, tolerance)) {
    note_error(got, want, d.size(), d.total_abs);
    return;
  }
  FAIL(sum_errors(s, d, o, got, unwritten, workspace));
}
}  // namespace

void require_writes(const Subject& s) {
  Data d(1000, Input::Uniform, "probe");
  Output o;
  const auto trace = grader::trace([&] {
    s.run(d.device.data(), d.size(), o.out.data(), o.workspace.data(), kWorkspaceBytes, s.stream);
    grader::synchronize(s.name + ", the first call");  // inside: a call that never ends is reported as such
  });
  const auto result = grader::read_back(o.out);
  if (trace && (!trace->kernels.empty() || !trace->memsets.empty() || !trace->copies.empty())) return;
  if (result.guards.intact() && workbook::is_poison(result.values[0])) {
    grader::wrote_nothing(s.name + "(in, 1000, out, workspace, " + std::to_string(kWorkspaceBytes) +
                              ", stream) returned and wrote nothing" +
                              (s.name == "reduce_sum_challenge" ? " (task 4 is optional)" : "") + ": " +
                              grader::untouched_output("*out", 1) + "; it ran nothing on the GPU",
                          trace);
  }
}

bool is_cub_kernel(const grader::TracedKernel& k) {
  return k.name.substr(0, k.name.find('<')).find("cub::") != std::string::npos;
}

std::vector<grader::TracedKernel> cub_kernels(const grader::Trace& t) {
  std::vector<grader::TracedKernel> found;
  for (const auto& k : t.kernels) {
    if (is_cub_kernel(k) || k.from_library()) found.push_back(k);
  }
  return found;
}

void check_own_kernels_on_stream(const Subject& s, const char* task) {
  // Under compute-sanitizer the call still runs (untraced): the check of a pass's one large,
  // aligned input (correctness_sizes stops at 4099 there). Keep it running there.
  const std::size_t n = std::size_t(1) << 20;
  Data d(n, Input::Uniform, std::string(task) + " trace");
  Output o;
  o.out.poison();
  const auto trace = grader::trace([&] {
    s.run(d.device.data(), n, o.out.data(), o.workspace.data(), kWorkspaceBytes, s.stream);
  });
  if (!trace) return;  // under compute-sanitizer
  const std::string seen = "\nWhat the grader saw on the GPU during the call:\n" + trace->describe();
  if (const auto cub = cub_kernels(*trace); !cub.empty()) {
    FAIL(s.name << " ran a library's kernels (" << grader::launch_text(cub[0]) << "): " << task
         << " asks for kernels of your own, so it scores nothing. CUB belongs in task 3." << seen);
  }
  const std::size_t to_host = trace->bytes_copied(grader::CopyDirection::DeviceToHost);
  if (to_host >= n * sizeof(float) / 2) {  // evidence: at least half the input's bytes went to the host
    FAIL(s.name << " copied " << to_host << " bytes from the device to the host for " << n << " floats.\n"
         << grader::hint(HintId::sum_on_host, "the data went to the host: a sum computed there is right and slow, and "
                                              "not what the task asks. Reduce on the GPU; only the result (one float) "
                                              "may ever leave it, and the grader reads it from *out itself.")
         << seen);
  }
  const auto own = trace->program_kernels();
  if (own.empty()) {
    FAIL(s.name << " launched no kernel of its own for " << n << " floats: the sum must come from your kernels."
         << seen);
  }
  std::string elsewhere;
  for (const auto& k : own) {
    if (k.stream_known && k.stream != s.stream) elsewhere = grader::launch_text(k) + " on " + grader::stream_text(k.stream);
  }
  for (const auto& c : trace->calls) {
    const bool memset = c.name.rfind("cudaMemset", 0) == 0;
    if (memset && (!c.has_stream || c.stream != s.stream)) {
      elsewhere = c.name + (c.has_stream ? " on " + grader::stream_text(c.stream) : std::string(" (the default stream)"));
    }
  }
  // Evidence: a kernel of its own on another stream, or a memset elsewhere or without a stream.
  if (!elsewhere.empty()) {
    FAIL(s.name << " was given " << grader::stream_text(s.stream) << ", a non-blocking stream, but ran "
         << elsewhere << ".\n"
         << grader::hint(HintId::reduction_stream, "everything a call does belongs on the stream it is given: kernels "
                                                   "with the fourth launch parameter, kernel<<<grid, block, shared, "
                                                   "stream>>>, and memsets with cudaMemsetAsync(..., stream). Work on "
                                                   "another stream is not ordered with the caller's, so the caller may "
                                                   "read *out before it is written.")
         << seen);
  }
}

namespace {

// The same function called again and again, nothing reset in between: the same result each time;
// then on another input: that input's result.
void check_repeated_calls(const Subject& s) {
  // In the check of a pass the tool looked at every launch of the calls above already; what
  // repeated calls add (state kept from one call to the next) is the plain run's to find.
  if (grader::pass_check_mode()) return;
  Data first(100003, Input::Uniform, "repeat A"), second(77777, Input::Offset, "repeat B");
  Output o;
  o.out.poison();
  std::vector<float> results;
  for (int i = 0; i < 3; ++i) results.push_back(call(s, first, o));
  const double want = first.exact_sum(), tolerance = first.tolerance();
  for (int i = 0; i < 3; ++i) {
    if (within(results[i], want, tolerance)) continue;
    std::ostringstream facts;
    facts << s.name << " called 3 times on the same " << first.text() << " without anything reset in between "
          << "returned " << workbook::format_value(results[0]) << ", " << workbook::format_value(results[1]) << ", "
          << workbook::format_value(results[2]) << "; expected " << workbook::format_value(want) << " each time.\n";
    const bool grows = std::isfinite(results[1]) && std::isfinite(results[2]) && i > 0 &&
                       within(results[1], 2 * want, 4 * tolerance + 1e-3 * std::abs(want)) &&
                       within(results[2], 3 * want, 6 * tolerance + 1e-3 * std::abs(want));
    if (grows) {  // evidence: the three calls returned the sum, twice it and three times it
      facts << grader::hint(HintId::stale_accumulator, "call k returned k times the sum: each call adds to what the "
                                                       "last one left in *out (or in the workspace). Zero the "
                                                       "accumulator on the stream at the start of every call "
                                                       "(cudaMemsetAsync), or write the result once instead of adding "
                                                       "to it.");
    }
    FAIL(facts.str());
  }
  const float other = call(s, second, o);
  const double want2 = second.exact_sum();
  if (!within(other, want2, second.tolerance())) {
    FAIL(s.name << " on a second input (" << second.text() << ") right after the first returned "
         << workbook::format_value(other) << "; expected " << workbook::format_value(want2)
         << ". Does something from the previous call survive into the next?");
  }
}

// Pointers 1, 2 and 3 floats past a 16-byte boundary, with n shorter and longer than the
// elements before the next boundary; ones, so a dropped or doubled element shows exactly.
void check_unaligned(const Subject& s) {
  // The check of a pass: a short and a long tail, off by one and by three.
  const bool subset = grader::pass_check_mode();
  const std::vector<std::size_t> sizes =
      subset ? std::vector<std::size_t>{3, 7, 4099} : std::vector<std::size_t>{1, 2, 3, 4, 5, 7, 4099, 65536};
  const std::vector<std::size_t> offsets = subset ? std::vector<std::size_t>{1, 3} : std::vector<std::size_t>{1, 2, 3};
  Output o;  // a new one's state for every call (reset)
  for (const std::size_t n : sizes) {
    Data d(n + 3, Input::Ones, "unaligned");
    for (const std::size_t offset : offsets) {
      o.reset();
      o.out.poison();
      s.run(d.device.data() + offset, n, o.out.data(), o.workspace.data(), kWorkspaceBytes, s.stream);
      grader::synchronize(s.name + " on a pointer " + std::to_string(offset) + " floats past a 16-byte boundary");
      const float got = o.out.download()[0];
      o.check_workspace(s.name + " on an unaligned pointer");
      if (got == float(n)) continue;
      // The same n from an aligned pointer: does the start address matter?
      Output aligned;
      aligned.out.poison();
      s.run(d.device.data(), n, aligned.out.data(), aligned.workspace.data(), kWorkspaceBytes, s.stream);
      grader::synchronize(s.name + " on the same n from an aligned pointer");
      const float from_aligned = aligned.out.download()[0];
      FAIL(s.name << " on n = " << n << " ones starting " << offset << " floats past a 16-byte boundary returned "
           << workbook::format_value(got, workbook::is_poison(got)) << "; expected " << n << "."
           << (from_aligned == float(n)
                   ? "\nThe same n from a 16-byte-aligned pointer gives the right sum, so the result depends on where "
                     "in starts: vector loads such as float4 need a 16-byte-aligned address, so the elements before "
                     "the first boundary (and after the last) are handled one by one."
                   : std::string()));
    }
  }
}

}  // namespace

void check_sizes_and_inputs(const Subject& s) {
  Output o;  // a new one's state for every call (reset)
  for (const std::size_t n : correctness_sizes()) {
    for (const Input input : inputs_for()) {
      Data d(n, input, s.name);
      CAPTURE(d.text());
      check_sum(s, d, o);
      o.reset();
    }
  }
}

void check_special_calls(const Subject& s) {
  Output o;
  o.out.poison();
  s.run(nullptr, 0, o.out.data(), o.workspace.data(), kWorkspaceBytes, s.stream);
  grader::synchronize(s.name + " with n = 0");
  const float got = o.out.download()[0];
  if (got != 0.0f) {
    FAIL(s.name << " with n = 0 left *out = " << workbook::format_value(got, workbook::is_poison(got))
         << ": the sum of no elements is 0, as NumPy's np.sum([]) says. Write it without launching an empty grid.");
  }
  check_repeated_calls(s);
  check_unaligned(s);
}

void check_large(const Subject& s) {
  if (grader::sanitize_mode()) return;
  for (const int log2n : {26, 28}) {
    const std::size_t n = workbook::fit_in_free_memory(std::size_t(1) << log2n, 3);
    for (const Input input : {Input::Signs, Input::Uniform}) {
      Data d(n, input, s.name + " large");
      Output o;
      CAPTURE(d.text());
      check_sum(s, d, o);
    }
  }
}

cudaStream_t student_stream() {
  static workbook::Stream stream(cudaStreamNonBlocking);
  return stream.get();
}

Subject subject(const char* name, SumFunction run) { return {name, run, student_stream()}; }

// ---- performance: GB/s against CUB ---------------------------------------------------------

void measure_against_cub(const std::string& name,
                         const std::function<void(const float*, std::size_t, float*, void*, cudaStream_t)>& run,
                         const std::function<Expected(const float*, std::size_t)>& exact) {
  const double copy_gbps = workbook::copy_bandwidth_gbps_for_run();
  double lowest = 0, lowest_gbps = 0, lowest_n = 0, lowest_ms = 0;
  bool first = true;
  for (const int log2n : reduction_benchmark::kGradedLog2N) {
    const std::size_t n = workbook::fit_in_free_memory(std::size_t(1) << log2n, 2);
    CAPTURE(n);
    workbook::DeviceBuffer<float> in(n), out(1);
    workbook::DeviceBuffer<char> workspace(kWorkspaceBytes);
    workbook::fill_random_device(in.data(), n, grader::seed_for(name + " perf " + std::to_string(n)), 0.0f, 1.0f);
    run(in.data(), n, out.data(), workspace.data(), nullptr);
    grader::synchronize(name + " at n = " + std::to_string(n) + ", before timing");
    float got = 0;
    out.copy_to_host(&got);
    const Expected want = exact(in.data(), n);
    if (!within(got, want.value, want.tolerance)) {
      FAIL(name << " at n = " << n << ": expected " << workbook::format_value(want.value) << ", got "
           << workbook::format_value(got) << ": a wrong result is not timed.");
    }
    workbook::MeasureOptions timing = reduction_benchmark::graded_timing();
    // The student's code at the first size is the call a profiling run profiles; CUB's never is.
    timing.profiled = log2n == reduction_benchmark::kGradedLog2N[0];
    if (timing.profiled) grader::record_metric("profiled_bytes", reduction_benchmark::kBytesPerElement * double(n));
    const auto stats =
        workbook::measure([&](cudaStream_t s) { run(in.data(), n, out.data(), workspace.data(), s); }, timing);
    timing.profiled = false;
    reduction_benchmark::CubSum cub(n);
    workbook::DeviceBuffer<float> cub_out(1);
    const auto cub_stats = workbook::measure([&](cudaStream_t s) { cub(in.data(), n, cub_out.data(), s); }, timing);
    const double bytes = reduction_benchmark::kBytesPerElement * double(n);
    const double gbps = workbook::gigabytes_per_second(bytes, stats.median_ms);
    const double cub_gbps = workbook::gigabytes_per_second(bytes, cub_stats.median_ms);
    const std::string size = "_2^" + std::to_string(log2n);
    grader::record_metric("gbps" + size, gbps);
    grader::record_metric("cub_gbps" + size, cub_gbps);
    grader::record_metric("fraction_of_cub" + size, gbps / cub_gbps);
    if (first || gbps / cub_gbps < lowest) {
      lowest = gbps / cub_gbps, lowest_gbps = gbps, lowest_n = double(n), lowest_ms = stats.median_ms;
    }
    first = false;
  }
  grader::record_metric("n", lowest_n);
  grader::record_metric("median_ms", lowest_ms);
  grader::record_metric("gbps", lowest_gbps);
  grader::record_metric("copy_bandwidth_gbps", copy_gbps);
  grader::record_metric("fraction_of_copy_bandwidth", lowest_gbps / copy_gbps);
  grader::record_metric("fraction_of_cub", lowest);
}

Expected exact_sum(const float* x, std::size_t n) {
  const double s = grader::sum_on_device(x, n, Identity{});  // x >= 0: the sum is also the sum of |x|
  return {s, sum_tolerance(n, s, Input::Uniform)};
}

Expected exact_norm(const float* x, std::size_t n) {
  const double s = grader::sum_on_device(x, n, Square{});
  return {std::sqrt(s), norm_tolerance(n, std::sqrt(s))};
}

// ---- task 1: the block tree ----------------------------------------------------------------

void launch_block(const float* in, std::size_t n, float* sums, int block, cudaStream_t stream) {
  reduction_benchmark::launch_reduce_block(in, n, sums, block, stream);
  WORKBOOK_CHECK_LAUNCH();
}

namespace {

struct BlockErrors {
  std::size_t wrong = 0, nonfinite = 0;
  std::vector<std::size_t> blocks;  // the first few wrong blocks
  bool only_last = false;
  std::string first;                // "block b: expected E, got G" lines
};

BlockErrors compare_blocks(const Data& d, int block, const std::vector<float>& got) {
  BlockErrors e;
  std::ostringstream first;
  const std::size_t n = d.size();
  for (std::size_t b = 0; b < got.size(); ++b) {
    const std::size_t begin = b * block, end = std::min(n, begin + block);
    const double want = d.sum(begin, end), tolerance = sum_tolerance(end - begin, d.sum_abs(begin, end), d.input);
    const bool unset = workbook::is_poison(got[b]);
    if (!unset && within(got[b], want, tolerance)) continue;
    if (e.wrong < 4) {
      first << "\n  block_sums[" << b << "] (elements " << begin << " .. " << end - 1 << "): expected "
            << workbook::format_value(want) << ", got " << workbook::format_value(got[b], unset);
    }
    ++e.wrong;
    e.nonfinite += !unset && !std::isfinite(got[b]);
    e.blocks.push_back(b);
  }
  e.only_last = e.wrong == 1 && e.blocks[0] + 1 == got.size();
  e.first = first.str();
  return e;
}

}  // namespace

void check_blocks(Data& d, int block, const std::string& what) {
  const std::size_t n = d.size(), grid = (n + block - 1) / block;
  workbook::GuardedDeviceArray sums(grid);
  launch_block(d.device.data(), n, sums.data(), block);
  grader::synchronize(what);
  const grader::DeviceOutput out = grader::read_back(sums);
  const BlockErrors e = compare_blocks(d, block, out.values);
  if (e.wrong == 0 && out.guards.intact()) return;
  std::ostringstream msg;
  msg << what << ": " << e.wrong << " of " << grid << " block sums are wrong." << e.first << "\n";
  if (!out.guards.intact()) msg << "It wrote outside block_sums[0 .. " << grid - 1 << "]: " << out.guards.describe(grid) << ".\n";
  if (e.wrong == 0) FAIL(msg.str());

  // The evidence, most specific first. Each rerun finds every SM's shared memory refilled with
  // another value, so a read of shared memory no thread wrote changes the result too.
  for (int again = 0; again < 3; ++again) {
    sums.poison();
    grader::fill_shared_memory(0.5f * float(again + 1));
    launch_block(d.device.data(), n, sums.data(), block);
    grader::synchronize(what + ", again");
    const std::vector<float> other = sums.download();
    std::size_t differ = 0;
    for (std::size_t b = 0; b < grid; ++b) {
      const bool fa = std::isfinite(out.values[b]), fb = std::isfinite(other[b]);
      differ += fa != fb || (fa && !within(other[b], out.values[b], 1e-3 * (std::abs(out.values[b]) + 1)));
    }
    if (differ > 0) {  // evidence: relaunched on the same input into poisoned sums, some block's sum changed
      FAIL(msg.str() << grader::results_differ("the same input gave different block sums in two runs (" +
                                               std::to_string(differ) + " blocks differ)."));
    }
  }
  if (n % block != 0 && (grid == 1 || e.only_last)) {
    // Only the last, partial block wrong? With a single block there is no full one to compare,
    // so the grader also runs a probe with three full blocks and a half one.
    std::string where = "only the last block is wrong, the one whose last " + std::to_string(grid * block - n) +
                        " threads have no element (index >= n)";
    bool nan = e.nonfinite > 0, tail_only = e.only_last;
    if (grid == 1) {
      Data probe(3 * std::size_t(block) + block / 2, d.input, "block tail probe");
      workbook::GuardedDeviceArray probe_sums(4);
      launch_block(probe.device.data(), probe.size(), probe_sums.data(), block);
      grader::synchronize("the probe with three full blocks and a half one");
      const BlockErrors pe = compare_blocks(probe, block, probe_sums.download());
      tail_only = pe.only_last;
      nan = pe.nonfinite > 0;
      where = "this grid has a single block, so the grader also ran n = " + std::to_string(probe.size()) +
              " (three full blocks and a half one): only the half block's sum is wrong";
    }
    if (tail_only) {  // evidence: only the last, partial block wrong (here or on the probe), reruns equal
      FAIL(msg.str() << grader::hint(HintId::block_tail, where + (nan ? std::string(", and it is NaN: the grader "
                                                                                    "surrounds the input with NaN, so "
                                                                                    "threads read past the end")
                                                                      : std::string()) +
                                     ". Threads past n must add nothing (store 0 in shared memory) yet take part in "
                                     "every level and reach every __syncthreads()."));
    }
  }
  if (d.input == Input::Ones && e.nonfinite == 0) {
    // Ones: a full block's sum is exactly its count (a result outside [0, 2 * count] is no count).
    const std::size_t b = e.blocks[0];
    const double count = double(std::min(n, (b + 1) * block) - b * block);
    const float got = out.values[b];
    if (!workbook::is_poison(got) && got >= 0 && got <= 2 * count && got == std::floor(got) && got != count) {
      const double k = count - got;
      const std::string facts = "block " + std::to_string(b) + " summed " + workbook::format_value(count) +
                                " ones to " + workbook::format_value(got);
      if (k < 0) {  // evidence: a block of ones summed to more than its count, reruns equal
        FAIL(msg.str() << grader::hint(HintId::counted_twice, facts + ": " +
                                                              count_text(-k, "element is", "elements are") +
                                                              " counted twice."));
      }
      // Which positions never reach the block's sum: a probe with a single 1 per block, at
      // position p in block p.
      std::vector<float> lone(std::size_t(block) * block, 0.0f);
      for (int q = 0; q < block; ++q) lone[std::size_t(q) * block + q] = 1.0f;
      workbook::GuardedDeviceArray probe(lone.size(), workbook::kInputGuardBits), probe_sums(block);
      probe.upload(lone);
      launch_block(probe.data(), lone.size(), probe_sums.data(), block);
      grader::synchronize("the probe with a single 1 per block");
      const std::vector<float> single = probe_sums.download();
      std::vector<int> lost;
      for (int q = 0; q < block; ++q) {
        if (single[q] != 1.0f) lost.push_back(q);
      }
      if (lost.empty()) {
        // Facts only: no broken variant shows this case, so it makes no claim of a cause.
        FAIL(msg.str() << facts << ", yet a 1 alone at any of the " << block << " positions reaches the block's sum "
             "(a probe with a single 1 per block): sums of several elements are lost when partial sums are added, "
             "the same way every run.");
      }
      std::string positions;
      for (std::size_t q = 0; q < lost.size() && q < 8; ++q) positions += (q ? ", " : "") + std::to_string(lost[q]);
      if (lost.size() > 8) positions += ", ...";
      // Evidence: a block of ones summed short, and the probe names the positions that never count.
      FAIL(msg.str() << grader::hint(HintId::dropped_elements, facts + ": " +
                                     count_text(k, "element is", "elements are") +
                                     " not counted. A probe with a single 1 per block shows which positions never "
                                     "reach the block's sum: " + std::to_string(lost.size()) + " of " +
                                     std::to_string(block) + " (" + positions + ")."));
    }
  }
  FAIL(msg.str());
}

// ---- task 3: the norm through CUB ----------------------------------------------------------

grader::DeviceOutput norm(const float* in, std::size_t n, Output& o) {
  o.out.poison();
  norm_l2_cub(in, n, o.out.data(), o.workspace.data(), kWorkspaceBytes, student_stream());
  grader::synchronize("norm_l2_cub on " + std::to_string(n) + " floats");
  return grader::read_back(o.out);
}

void require_norm_writes() {
  Data probe(1000, Input::Uniform, "probe");
  Output o;
  grader::DeviceOutput out;
  const auto trace = grader::trace([&] { out = norm(probe.device.data(), probe.size(), o); });
  if (out.guards.intact() && workbook::is_poison(out.values[0])) {
    grader::wrote_nothing("norm_l2_cub(in, 1000, out, workspace, " + std::to_string(kWorkspaceBytes) +
                              ", stream) returned and wrote nothing: " + grader::untouched_output("*out", 1),
                          trace);
  }
}

// ---- contracts -----------------------------------------------------------------------------

void check_contract_at_every_size(const grader::Contract& contract, SumFunction run, const std::string& name) {
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const cudaStream_t stream = student_stream();
  Output o;
  for (const std::size_t n : correctness_sizes()) {
    Data d(n, Input::Uniform, name + " contract");
    CAPTURE(d.text());
    const grader::ContractCall call{name + "(in, " + std::to_string(n) + ", out, workspace, " +
                                        std::to_string(kWorkspaceBytes) + ", stream)",
                                    {stream}, {}, {{"n", double(n)}}};
    grader::require_contract_kept(contract, call, [&] {
      run(d.device.data(), d.size(), o.out.data(), o.workspace.data(), kWorkspaceBytes, stream);
    });
  }
}

}  // namespace reduction_grader
