// The sweep of lesson 05: the time of streams::process, the chunked pipeline, against the
// number of streams S (1, 2, 3, 4, 8) and of chunks C (1, 2, 4, ..., 64), at one n (2^26
// floats, clipped to what fits in the GPU), from pinned host memory. What is timed, its axes,
// the calibration of the kernel's `work` and the figure of merit are lesson 05's benchmark
// declaration (grader/05_streams/benchmark.hpp), which the grader's timed tests use too (their
// bound times the two copies together; the sweep's, below, each copy alone): the
// kernel alone takes as long as the pinned copy in alone, so each stage is a third of the
// sequential time, and overlapping them can save up to two thirds. In the CSV a pipeline row
// has grid_mode "pipeline", S in the column streams and C in chunks.
//
// The rows the figures need besides (baselines, once per sweep: --no-transfers leaves them out
// and ./sweep passes it to every run after the first that succeeded):
//   cudaMemcpy h2d_pinned, d2h_pinned   each copy of the n floats alone (CUDA events)
//   baseline transform                  the lesson's kernel alone on the n floats (CUDA events)
//   cudaMemcpy h2d_pageable, d2h_pageable   the same copies from and to pageable memory
//   baseline pageable_sequential        copy in, kernel, copy out one after the other from a
//                                       std::vector, as task 4 is timed against (host clock)
// from which ./plot and ./sweep take the overlap bound max(H2D, kernel, D2H) and the
// sequential time H2D + kernel + D2H. process and process_pageable (task 4, with 8 MiB of
// pinned staging, grid_mode "own") are timed with the host clock, median of the samples: each
// returns when its output is on the host, which is what a caller waits for.
//
// Each function is checked before it is timed: bit for bit against the lesson's kernel run in
// one piece, at awkward sizes and for every S and C of the sweep, and again at the timed n
// before each configuration is timed. A wrong one is named on stderr and not timed; when none
// is right the program exits with bench::kExitIncorrect.
//
// Two lines for ./sweep besides the rows (sweep_cli.py documents them):
//   "# pass --work W"       the calibrated work, which ./sweep passes to the later runs (the
//                           reference after the student), so both are timed with one kernel;
//   "# timeline ..."        at the end, one traced call of process at S = 4, C = 16 at the
//                           largest n: what the GPU did, by the grader's CUPTI tracer (the
//                           kernels and copies with their streams and GPU times), one CSV line
//                           each after a header, which ./sweep writes to
//                           sweep-results/05_streams_timeline.csv (sweep_schema.py's
//                           TIMELINE_COLUMNS). Announced as "# measuring process_timeline ...",
//                           so --skip process_timeline leaves it out.
//
// Lesson 05's own options (the rest are every sweep's; --help lists both):
//   --streams S,...  the numbers of streams (the CSV's streams column; --blocks is refused: lesson
//                    05 has no block size to sweep)
//   --chunks C,...   the numbers of chunks (the CSV's chunks column)
//   --work W         the kernel's work instead of calibrating it
#include "benchmark.hpp"
#include "streams.hpp"
#include "sweep.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <cupti.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

const char* const kLesson = "05_streams";
constexpr int kCheckWork = 8;                             // the checks: a light kernel
constexpr std::size_t kStagingFloats = std::size_t(1) << 21;  // task 4's pinned staging: 8 MiB, as the grader's
constexpr int kTimelineStreams = 4, kTimelineChunks = 16;
constexpr std::size_t kFloat = sizeof(float);
const char* const kPipeline = "pipeline";  // grid_mode of a process row: Row::block = streams, Row::grid = chunks

// What lesson 05 reads from the command line besides bench::Options.
struct LessonOptions {
  std::vector<int> chunks{std::begin(streams_benchmark::kSweepChunks), std::end(streams_benchmark::kSweepChunks)};
  int work = 0;  // 0: calibrate
};

[[noreturn]] void usage_error(const char* program, const std::string& what) {
  std::fprintf(stderr, "%s: %s\nRun %s --help for the options.\n", program, what.c_str(), program);
  std::exit(2);
}

// A whole number from 1 to \p largest, or a usage error naming \p option.
int parse_whole(const char* program, const std::string& option, const std::string& text, long largest) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 1 || value > largest) {
    usage_error(program, option + " wants whole numbers from 1 to " + std::to_string(largest) + ", not '" + text + "'");
  }
  return static_cast<int>(value);
}

// Takes lesson 05's own options out of argv (the rest go to bench::parse_options); --help first
// prints what they are, then bench::parse_options prints the options every sweep has.
LessonOptions take_lesson_options(int& argc, char** argv) {
  LessonOptions lesson;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--blocks") {
      usage_error(argv[0], "lesson 05 sweeps streams and chunks, not block sizes: --streams S,... sets the numbers "
                           "of streams, --chunks C,... the numbers of chunks");
    }
    if (arg == "--chunks" || arg == "--work") {
      if (i + 1 >= argc) usage_error(argv[0], arg + " needs a value");
      const std::string value = argv[++i];
      if (arg == "--work") {
        lesson.work = parse_whole(argv[0], arg, value, 1000000);
        continue;
      }
      lesson.chunks.clear();
      std::stringstream list(value);
      for (std::string part; std::getline(list, part, ',');) {
        if (!part.empty()) lesson.chunks.push_back(parse_whole(argv[0], arg, part, 4096));
      }
      if (lesson.chunks.empty()) usage_error(argv[0], "--chunks needs at least one value");
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::string chunks;
      for (const int c : streams_benchmark::kSweepChunks) chunks += (chunks.empty() ? "" : ",") + std::to_string(c);
      std::printf(
          "Lesson 05 times streams::process, the pipeline of task 1, from pinned memory for every number of\n"
          "streams x number of chunks (CSV: grid_mode 'pipeline', columns streams and chunks), each stage\n"
          "alone (the overlap bound), process_pageable (task 4), and records one call of process at %d streams\n"
          "and %d chunks with the grader's tracer (the '# timeline' lines, for sweep-results/%s_timeline.csv).\n"
          "Its own options:\n"
          "  --chunks     the numbers of chunks (default %s)\n"
          "  --work W     the kernel's work per element (default: calibrated so that the kernel alone takes as\n"
          "               long as the pinned copy in; printed as '# pass --work W' for the later runs)\n"
          "  --skip process_timeline   no timeline\n\n",
          kTimelineStreams, kTimelineChunks, kLesson, chunks.c_str());
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  return lesson;
}

// A pipeline's configuration, for messages.
std::string shape_text(std::size_t n, int streams, int chunks) {
  return "n = " + std::to_string(n) + ", " + std::to_string(streams) + " stream" + (streams > 1 ? "s" : "") + ", " +
         std::to_string(chunks) + " chunk" + (chunks > 1 ? "s" : "");
}

using bench::csv_field;
using bench::number;
using bench::runs;
using streams_benchmark::transformed;

// Why \p got (n floats) is not \p want: "" when it is, bit for bit.
std::string wrong_output(const float* got, const std::vector<float>& want, std::size_t n) {
  if (std::memcmp(got, want.data(), n * kFloat) == 0) return "";
  const auto report = workbook::compare_to_reference(got, want.data(), n, workbook::Tolerance{});
  if (report.unwritten == n) return "it wrote nothing to host_out";
  return std::to_string(report.wrong) + " of " + std::to_string(n) + " elements are wrong: " + report.describe();
}

// Host memory for one check: pinned (cudaMallocHost) or pageable, poisoned.
struct CheckBuffers {
  CheckBuffers(std::size_t n, bool pinned) : pinned_in(pinned ? n : 0), pinned_out(pinned ? n : 0) {
    if (!pinned) pageable_in.resize(n), pageable_out.resize(n);
    std::fill(out(), out() + n, workbook::poison_value());
  }
  float* in() { return pinned_in.size() ? pinned_in.data() : pageable_in.data(); }
  float* out() { return pinned_out.size() ? pinned_out.data() : pageable_out.data(); }
  workbook::PinnedBuffer<float> pinned_in, pinned_out;
  std::vector<float> pageable_in, pageable_out;
};

// Whether process gives every element bit for bit at awkward sizes, for every number of streams
// and chunks swept, and with more chunks than elements.
bool process_is_right(const std::vector<int>& stream_counts, const std::vector<int>& chunk_counts, std::string& why) {
  struct Case { std::size_t n; int streams, chunks; };
  std::vector<Case> cases{{1, 3, 5}, {2, 1, 64}, {4099, 3, 7}};
  for (const int s : stream_counts) {
    for (const int c : chunk_counts) cases.push_back({100003, s, c});
  }
  for (const Case& k : cases) {
    const std::vector<float> x = workbook::random_floats(k.n, 51);
    const std::vector<float> want = transformed(x, kCheckWork);
    CheckBuffers host(k.n, true);
    std::copy(x.begin(), x.end(), host.in());
    workbook::DeviceBuffer<float> device_in(k.n), device_out(k.n);
    if (!runs([&] {
          streams::process(host.in(), host.out(), device_in.data(), device_out.data(), k.n, kCheckWork, k.streams,
                           k.chunks);
        }, why)) {
      return false;
    }
    if (const std::string wrong = wrong_output(host.out(), want, k.n); !wrong.empty()) {
      why = (wrong.rfind("it wrote nothing", 0) == 0 ? "" : "on " + shape_text(k.n, k.streams, k.chunks) + ": ") + wrong;
      return false;
    }
  }
  return true;
}

// Whether process_pageable gives every element bit for bit, with ample and with scarce staging.
bool process_pageable_is_right(std::string& why) {
  workbook::PinnedBuffer<float> staging(kStagingFloats);
  // A named array, not a braced list in the loop: nvcc 12.4 and 12.5 reject a range-for over a
  // braced list whose later elements do not name their type.
  const std::pair<std::size_t, std::size_t> shapes[] = {{1000003, kStagingFloats}, {4099, 5000}, {1, 4096}};
  for (const auto& shape : shapes) {
    const std::size_t n = shape.first, staging_floats = shape.second;  // named, so the lambda below can use them
    const std::vector<float> x = workbook::random_floats(n, 52);
    const std::vector<float> want = transformed(x, kCheckWork);
    CheckBuffers host(n, false);
    std::copy(x.begin(), x.end(), host.in());
    workbook::DeviceBuffer<float> device_in(n), device_out(n);
    if (!runs([&] {
          streams::process_pageable(host.in(), host.out(), device_in.data(), device_out.data(), n, kCheckWork,
                                    staging.data(), staging_floats);
        }, why)) {
      return false;
    }
    if (const std::string wrong = wrong_output(host.out(), want, n); !wrong.empty()) {
      why = (wrong.rfind("it wrote nothing", 0) == 0 ? "" : "at n = " + std::to_string(n) + " with " +
             std::to_string(staging_floats) + " floats of staging: ") + wrong;
      return false;
    }
  }
  return true;
}

// The columns of the timeline lines; tools/bench/sweep_schema.py's TIMELINE_COLUMNS (a test checks it).
const char* const kTimelineHeader =
    "lesson,implementation,operation,n,streams,chunks,work,kind,name,stream,start_ms,end_ms,bytes,gpu,date";

const char* copy_kind(grader::CopyDirection direction) {
  switch (direction) {
    case grader::CopyDirection::HostToDevice: return "h2d";
    case grader::CopyDirection::DeviceToHost: return "d2h";
    case grader::CopyDirection::DeviceToDevice: return "d2d";
    case grader::CopyDirection::HostToHost: return "h2h";
    default: return "copy";
  }
}

// \p trace without what happened before \p begin_ns (a CUPTI timestamp), which becomes its start.
grader::Trace since(grader::Trace trace, std::uint64_t begin_ns) {
  const auto before = [&](std::uint64_t start_ns) { return start_ns < begin_ns; };
  trace.kernels.erase(std::remove_if(trace.kernels.begin(), trace.kernels.end(),
                                     [&](const grader::TracedKernel& k) { return before(k.start_ns); }),
                      trace.kernels.end());
  trace.copies.erase(std::remove_if(trace.copies.begin(), trace.copies.end(),
                                    [&](const grader::TracedCopy& c) { return before(c.start_ns); }),
                     trace.copies.end());
  trace.memsets.erase(std::remove_if(trace.memsets.begin(), trace.memsets.end(),
                                     [&](const grader::TracedMemset& m) { return before(m.start_ns); }),
                      trace.memsets.end());
  trace.calls.erase(std::remove_if(trace.calls.begin(), trace.calls.end(),
                                   [&](const grader::TracedCall& c) { return before(c.enter_ns); }),
                    trace.calls.end());
  trace.begin_ns = begin_ns;
  return trace;
}

// Prints \p trace as timeline lines: a header, then the call itself (kind "call": when process
// was called and when it returned) and each kernel, copy and memset, times in ms since the call,
// streams numbered 1, 2, ... in the order their first work started.
void print_timeline(const grader::Trace& trace, const bench::RunInfo& info, const std::string& implementation,
                    std::size_t n, int work) {
  struct Record { std::uint64_t start_ns, end_ns; std::string kind, name; std::uint32_t stream_id; double bytes; };
  std::vector<Record> records;
  for (const auto& k : trace.kernels) records.push_back({k.start_ns, k.end_ns, "kernel", k.name, k.stream_id, 0});
  for (const auto& c : trace.copies) {
    records.push_back({c.start_ns, c.end_ns, copy_kind(c.direction), c.api, c.stream_id, double(c.bytes)});
  }
  for (const auto& m : trace.memsets) {
    records.push_back({m.start_ns, m.end_ns, "memset", "", m.stream_id, double(m.bytes)});
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const Record& a, const Record& b) { return a.start_ns < b.start_ns; });
  std::map<std::uint32_t, int> stream_number;
  for (const Record& r : records) stream_number.emplace(r.stream_id, int(stream_number.size()) + 1);

  const auto ms_since_call = [&](std::uint64_t ns) { return (double(ns) - double(trace.begin_ns)) * 1e-6; };
  const std::string common = std::string(kLesson) + "," + csv_field(implementation) + ",process," + std::to_string(n) +
                             "," + std::to_string(kTimelineStreams) + "," + std::to_string(kTimelineChunks) + "," +
                             std::to_string(work) + ",";
  const std::string run = "," + csv_field(info.gpu) + "," + info.date;
  std::printf("# timeline %s\n", kTimelineHeader);
  std::printf("# timeline %scall,process,,0,%s,0%s\n", common.c_str(), number(ms_since_call(trace.returned_ns)).c_str(),
              run.c_str());
  for (const Record& r : records) {
    std::printf("# timeline %s%s,%s,%d,%s,%s,%s%s\n", common.c_str(), r.kind.c_str(), csv_field(r.name).c_str(),
                stream_number[r.stream_id], number(ms_since_call(r.start_ns)).c_str(),
                number(ms_since_call(r.end_ns)).c_str(), number(r.bytes).c_str(), run.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const LessonOptions lesson = take_lesson_options(argc, argv);
  bench::Defaults defaults;
  defaults.sizes = {streams_benchmark::kTimedN};
  defaults.blocks.assign(std::begin(streams_benchmark::kSweepStreams), std::end(streams_benchmark::kSweepStreams));
  defaults.blocks_option = "--streams";
  defaults.blocks_meaning = "number of streams";
  defaults.block_column = "streams";
  defaults.grid_column = "chunks";
  defaults.grid_modes = {kPipeline};
  const bench::Options options = bench::parse_options(argc, argv, kLesson, defaults);
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  const std::vector<int>& stream_counts = options.blocks;
  try {
    // Only what computes the right result is timed; the rest is named and left out.
    bool process_right = false, pageable_right = false, checked = false;
    for (const char* operation : {"process", "process_pageable"}) {
      if (options.skips(operation)) continue;
      bench::announce_check(operation);
      checked = true;
      std::string why;
      const bool right = std::string(operation) == "process"
                             ? process_is_right(stream_counts, lesson.chunks, why)
                             : process_pageable_is_right(why);
      (std::string(operation) == "process" ? process_right : pageable_right) = right;
      if (!right) {
        std::fprintf(stderr, "%s: %s (%s) is not timed: %s\n", argv[0], operation, options.implementation.c_str(),
                     why.c_str());
      }
    }
    if (checked && !process_right && !pageable_right) {
      std::fprintf(stderr, "%s: neither process nor process_pageable gives the right result (%s), so nothing was "
                           "timed.\n./grade 05 tells what is wrong.\n", argv[0], options.implementation.c_str());
      return bench::kExitIncorrect;
    }
    const bench::RunInfo info = bench::run_info();

    // Device: input and output. Host: pinned input and output, and for task 4 pageable ones and
    // the staging; the expected output.
    std::vector<std::size_t> sizes;
    for (const std::size_t n : options.sizes) {
      const std::size_t clipped = workbook::fit_in_free_memory(n, 3);
      if (clipped < n) {
        std::fprintf(stderr, "%s: n = %zu does not fit in a third of the free GPU memory; using %zu\n", argv[0], n,
                     clipped);
      }
      if (std::find(sizes.begin(), sizes.end(), clipped) == sizes.end()) sizes.push_back(clipped);
    }
    const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
    const std::vector<float> x = workbook::random_floats(largest, 53);
    workbook::DeviceBuffer<float> device_in(largest), device_out(largest);
    workbook::PinnedBuffer<float> pinned_in(largest), pinned_out(largest);
    std::copy(x.begin(), x.end(), pinned_in.data());
    device_in.copy_from_host(pinned_in.data());

    // The kernel made as long as the copy in, at the largest n (both grow linearly with n).
    int work = lesson.work;
    if (work == 0) {
      const double h2d_ms = streams_benchmark::stage_time([&](cudaStream_t s) {
        WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device_in.data(), pinned_in.data(), largest * kFloat,
                                            cudaMemcpyHostToDevice, s));
      }).median_ms;
      work = streams_benchmark::work_for(device_in.data(), device_out.data(), largest, h2d_ms);
      std::fprintf(stderr, "%s: work = %d makes the kernel as long as the pinned copy in of n = %zu (%.3g ms)\n",
                   argv[0], work, largest, h2d_ms);
      std::printf("# pass --work %d\n", work);
    }
    // The right output, by the lesson's kernel in one launch on the same buffers.
    std::vector<float> want(largest);
    streams::transform(device_in.data(), device_out.data(), largest, work, nullptr);
    device_out.copy_to_host(want.data());

    const bool pageable = pageable_right || options.transfers;
    std::vector<float> pageable_in(pageable ? largest : 0), pageable_out(pageable ? largest : 0);
    std::copy(x.begin(), x.begin() + pageable_in.size(), pageable_in.begin());
    workbook::PinnedBuffer<float> staging(pageable_right ? kStagingFloats : 0);

    std::vector<std::string> baselines;  // see the top of this file
    if (options.transfers) {
      for (const char* operation : {"h2d_pinned", "transform", "d2h_pinned", "h2d_pageable", "d2h_pageable",
                                    "pageable_sequential"}) {
        if (!options.skips(operation)) baselines.emplace_back(operation);
      }
    }
    const std::size_t pipelines = process_right ? stream_counts.size() * lesson.chunks.size() : 0;
    bench::begin_output(sizes.size() * (baselines.size() + pipelines + (pageable_right ? 1 : 0)), options);

    for (const std::size_t n : sizes) {
      const auto row_for = [&](const std::string& implementation, const std::string& operation, int block,
                               const std::string& mode, long long grid, double bytes) {
        bench::Row row{kLesson, implementation, operation, n, block, mode, grid};
        row.bytes = bytes;
        // One FMA per step of work per element; the copies compute nothing.
        row.flops = operation.rfind("h2d", 0) == 0 || operation.rfind("d2h", 0) == 0 ? 0.0 : 2.0 * work * n;
        bench::announce(row, options);  // first: what follows may be where a crash shows
        return row;
      };
      for (const std::string& operation : baselines) {
        const bool copy = operation != "transform" && operation != "pageable_sequential";
        bench::Row row = row_for(copy ? "cudaMemcpy" : "baseline", operation, 0, copy ? "" : "own", 0,
                                 (copy ? 1.0 : 2.0) * n * kFloat);
        const int samples = std::max(3, std::min(options.samples, 10));
        if (operation == "h2d_pinned" || operation == "h2d_pageable") {
          const float* from = operation == "h2d_pinned" ? pinned_in.data() : pageable_in.data();
          row.stats = streams_benchmark::stage_time([&](cudaStream_t s) {
            WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device_in.data(), from, n * kFloat, cudaMemcpyHostToDevice, s));
          }, samples);
        } else if (operation == "d2h_pinned" || operation == "d2h_pageable") {
          float* to = operation == "d2h_pinned" ? pinned_out.data() : pageable_out.data();
          row.stats = streams_benchmark::stage_time([&](cudaStream_t s) {
            WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(to, device_out.data(), n * kFloat, cudaMemcpyDeviceToHost, s));
          }, samples);
        } else if (operation == "transform") {
          row.stats = streams_benchmark::stage_time([&](cudaStream_t s) {
            streams::transform(device_in.data(), device_out.data(), n, work, s);
          }, samples);
        } else {  // pageable_sequential: task 4's yardstick, as the grader times it
          workbook::Stream stream(cudaStreamNonBlocking);
          row.stats = workbook::time_on_host([&] {
            WORKBOOK_CUDA_CHECK(cudaMemcpy(device_in.data(), pageable_in.data(), n * kFloat, cudaMemcpyHostToDevice));
            streams::transform(device_in.data(), device_out.data(), n, work, stream.get());
            WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
            WORKBOOK_CUDA_CHECK(cudaMemcpy(pageable_out.data(), device_out.data(), n * kFloat,
                                           cudaMemcpyDeviceToHost));
          }, options.warmup, options.samples);
        }
        bench::emit(row, info);
      }

      if (process_right) {
        for (const int s : stream_counts) {
          for (const int c : lesson.chunks) {
            bench::Row row = row_for(options.implementation, "process", s, kPipeline, c, 2.0 * n * kFloat);
            const auto run = [&] {
              streams::process(pinned_in.data(), pinned_out.data(), device_in.data(), device_out.data(), n, work, s, c);
            };
            std::fill(pinned_out.data(), pinned_out.data() + n, workbook::poison_value());
            run();
            if (const std::string wrong = wrong_output(pinned_out.data(), want, n); !wrong.empty()) {
              std::fprintf(stderr, "%s: process (%s) on %s gave a wrong result, so it is not timed: %s\n", argv[0],
                           options.implementation.c_str(), shape_text(n, s, c).c_str(), wrong.c_str());
              continue;
            }
            row.stats = workbook::time_on_host(run, options.warmup, options.samples);
            bench::emit(row, info);
          }
        }
      }

      if (pageable_right) {
        bench::Row row = row_for(options.implementation, "process_pageable", 0, "own", 0, 2.0 * n * kFloat);
        const auto run = [&] {
          streams::process_pageable(pageable_in.data(), pageable_out.data(), device_in.data(), device_out.data(), n,
                                    work, staging.data(), staging.size());
        };
        std::fill(pageable_out.begin(), pageable_out.begin() + n, workbook::poison_value());
        run();
        if (const std::string wrong = wrong_output(pageable_out.data(), want, n); !wrong.empty()) {
          std::fprintf(stderr, "%s: process_pageable (%s) at n = %zu gave a wrong result, so it is not timed: %s\n",
                       argv[0], options.implementation.c_str(), n, wrong.c_str());
        } else {
          row.stats = workbook::time_on_host(run, options.warmup, options.samples);
          bench::emit(row, info);
        }
      }
    }

    // One call of process, traced: what ran where and when, for the timeline figure.
    if (process_right && !options.skips("process_timeline")) {
      bench::Row marker;
      marker.operation = "process_timeline";
      marker.n = largest;
      marker.block = kTimelineStreams;
      marker.grid_mode = kPipeline;
      bench::announce(marker, options);
      std::optional<grader::Tracer> tracer;
      try {
        tracer.emplace();
      } catch (const grader::TracerUnavailable& e) {  // a profiler holds CUPTI, say: the rest stands
        std::fprintf(stderr, "%s: no timeline: %s\n", argv[0], e.what());
        return 0;
      }
      // Two calls under one tracer, and the second one drawn: in a call traced alone the first
      // kernel started about 4.5 ms after the first copy on an H100, in two sweeps of two
      // different trees, a delay no untraced call shows (the tracer's start, not the pipeline).
      const auto call = [&] {
        streams::process(pinned_in.data(), pinned_out.data(), device_in.data(), device_out.data(), largest, work,
                         kTimelineStreams, kTimelineChunks);
      };
      call();
      std::uint64_t second_call = 0;
      cuptiGetTimestamp(&second_call);
      call();
      print_timeline(since(tracer->finish(), second_call), info, options.implementation, largest, work);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
