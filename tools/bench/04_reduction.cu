// The sweep of lesson 04: the time to sum n floats, and the GB/s it reaches, against n from
// 10^3 to 10^9 (clipped to what fits in the GPU), for each of the lesson's functions
// (reduce_block, reduce_sum, norm_l2_cub, reduce_sum_challenge) and, as the baselines:
//   cub_sum            cub::DeviceReduce::Sum on the same data: the library's kernels alone;
//   gpu_with_transfer  what a program holding its data in host memory waits for: copy the n
//                      floats from a std::vector (pageable, as NumPy's arrays are) to the GPU,
//                      cub::DeviceReduce::Sum, copy the one float back;
//   cpu_one_thread     a plain loop with a float64 accumulator, on one core;
//   cpu_all_threads    the same loop on hardware_concurrency threads, a chunk each, the
//                      partial sums added at the end.
// What is timed, the sizes, the bytes and flops per element and the check's tolerance are lesson
// 04's benchmark declaration (grader/04_reduction/benchmark.hpp), which the grader uses too.
// Where the GPU rows overtake the fastest CPU row is the crossover ./plot marks. The GPU
// kernels are timed with CUDA events, L2 flushed before each sample (bench::time_measurement);
// the CPU rows and gpu_with_transfer with the host clock around the whole synchronous work
// (time_repeated_on_host below), as a user of the result waits for it. The CPU rows read from warm
// caches where n fits in them, as a program that has just produced its data would; they stop
// at n = kCpuLargestN so that each takes about a second at most.
//
// --blocks sets reduce_block's threads per block (powers of two, 32 to 1024; default 256): it
// is launched as the lesson says, ceil(n / B) blocks ("cover") with B floats of shared memory.
// Tasks 2 to 4 choose their own launch (grid_mode "own", block and grid empty) and are given a
// workspace of kWorkspaceBytes. The baselines do not depend on the code swept, so, like lesson
// 02's transfers, --no-transfers leaves them out and ./sweep passes it to every run after the
// first that succeeded: they appear once in the CSV. Every row counts n * 4 bytes (the input
// read once) and n flops.
//
// Each function is announced ("# checking OP", "# measuring OP n=N ...") before it runs. One
// that crashes takes the process with it (an illegal address breaks the CUDA context for good),
// so ./sweep names it from the last announcement and runs this again with --skip OP.
#include "benchmark.hpp"
#include "cub_sum.hpp"
#include "reduction.hpp"
#include "sweep.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* const kLesson = "04_reduction";
// The CPU rows stop here: one thread adds about one float per nanosecond (see sum_one_thread),
// so a pass takes about 0.1 s and a measurement (time_repeated_on_host) about a second.
constexpr std::size_t kCpuLargestN = 100000000;
// time_repeated_on_host: a sample lasts at least this long, and the samples of one row about this long in all.
constexpr double kShortestSampleS = 1e-4;
constexpr double kHostBudgetS = 1.0;

volatile double g_sink = 0;  // where the host-timed work leaves its result, so none is optimised away

using SumFunction = void (*)(const float*, std::size_t, float*, void*, std::size_t, cudaStream_t);

// One of the lesson's functions.
struct LessonFunction {
  std::string operation;      // the CSV's operation column
  int block = 0;              // reduce_block: threads per block; 0 for tasks 2 to 4 (their own launch)
  SumFunction sum = nullptr;  // tasks 2 to 4
  bool norm = false;          // norm_l2_cub: the square root of the sum of squares

  long long grid(std::size_t n) const { return block > 0 ? static_cast<long long>((n + block - 1) / block) : 0; }
};

std::vector<LessonFunction> lesson_functions(const std::vector<int>& blocks) {
  std::vector<LessonFunction> functions;
  for (const int block : blocks) functions.push_back({"reduce_block", block});
  functions.push_back({"reduce_sum", 0, reduce_sum});
  functions.push_back({"norm_l2_cub", 0, norm_l2_cub, true});
  functions.push_back({"reduce_sum_challenge", 0, reduce_sum_challenge});
  return functions;
}

namespace declared = reduction_benchmark;

using bench::runs;

// Whether reduce_block with \p block threads writes each block's sum, at an awkward n (the last
// block partly filled) and a small one.
bool block_sums_are_right(int block, std::string& why) {
  for (const std::size_t n : {std::size_t(1000), std::size_t(1000003)}) {
    const std::size_t blocks = (n + block - 1) / block;
    const std::vector<float> x = workbook::random_floats(n, 41);
    workbook::DeviceBuffer<float> in(n), sums(blocks);
    in.copy_from_host(x.data());
    workbook::fill_words_device(sums.data(), blocks, workbook::kPoisonBits);
    if (!runs([&] { declared::launch_reduce_block(in.data(), n, sums.data(), block, nullptr); }, why)) return false;
    std::vector<float> got(blocks), want(blocks);
    sums.copy_to_host(got.data());
    double largest_abs = 0;  // the tolerance scales with the largest sum |x| of a block
    for (std::size_t b = 0; b < blocks; ++b) {
      double sum = 0, abs = 0;
      for (std::size_t i = b * block; i < std::min(n, (b + 1) * block); ++i) {
        sum += x[i];
        abs += std::fabs(x[i]);
      }
      want[b] = static_cast<float>(sum);
      largest_abs = std::max(largest_abs, abs);
    }
    if (std::all_of(got.begin(), got.end(), workbook::is_poison)) {
      why = "it wrote nothing";
      return false;
    }
    const auto report = workbook::compare_to_reference(got.data(), want.data(), blocks,
                                                       {declared::tree_sum_tolerance(block, largest_abs), 0});
    if (!report.ok()) {
      why = "wrong block sums at n = " + std::to_string(n) + ", block " + std::to_string(block) + ": " +
            report.describe();
      return false;
    }
  }
  return true;
}

// Whether a function of tasks 2 to 4 writes the sum (or the norm) of n floats, at an awkward n
// and a small one, called twice in a row: with a poisoned workspace, then with what the first
// call left in it (the timing calls it over and over).
bool sum_is_right(const LessonFunction& f, std::string& why) {
  workbook::DeviceBuffer<unsigned char> workspace(kWorkspaceBytes);
  workbook::DeviceBuffer<float> out(1);
  for (const std::size_t n : {std::size_t(1000), std::size_t(1000003)}) {
    const std::vector<float> x = workbook::random_floats(n, 42);
    double sum = 0, abs = 0;
    for (const float v : x) {
      sum += f.norm ? double(v) * v : v;
      abs += std::fabs(v);
    }
    const double want = f.norm ? std::sqrt(sum) : sum;
    const double tolerance = f.norm ? declared::norm_tolerance(n, want) : declared::tree_sum_tolerance(n, abs);
    workbook::DeviceBuffer<float> in(n);
    in.copy_from_host(x.data());
    workbook::fill_words_device(workspace.data(), kWorkspaceBytes / 4, workbook::kPoisonBits);
    for (const char* call : {"first call", "second call, the workspace as the first left it"}) {
      workbook::fill_words_device(out.data(), 1, workbook::kPoisonBits);
      if (!runs([&] { f.sum(in.data(), n, out.data(), workspace.data(), kWorkspaceBytes, nullptr); }, why)) {
        return false;
      }
      float got = 0;
      out.copy_to_host(&got);
      if (workbook::is_poison(got)) {
        why = "it wrote nothing to *out";
        return false;
      }
      if (!(std::fabs(got - want) <= tolerance)) {
        why = "at n = " + std::to_string(n) + " (" + call + "): got " + workbook::format_value(got) + ", expected " +
              workbook::format_value(want) + " within " + workbook::format_value(tolerance);
        return false;
      }
    }
  }
  return true;
}

// The loop a C programmer writes first, with a float64 accumulator (a float one stops growing
// once the sum is large: 2^24 + 1 == 2^24 in float). Without -ffast-math the compiler may not
// reorder the additions, so they run one after another, bound by the latency of an add (about
// one float per nanosecond), not by memory bandwidth; NumPy's pairwise, vectorised sum is faster.
double sum_one_thread(const float* x, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += x[i];
  return sum;
}

// The same loop on \p threads threads, a contiguous chunk each, the partial sums added in order.
// The threads are started and joined in every call, as a plain std::thread program does: some
// microseconds per thread that a pool (OpenMP) would save; at small n one thread wins anyway.
double sum_all_threads(const float* x, std::size_t n, unsigned threads) {
  std::vector<double> partial(threads, 0.0);
  std::vector<std::thread> pool;
  const std::size_t chunk = (n + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    pool.emplace_back([&partial, x, t, begin, end] { partial[t] = sum_one_thread(x + begin, end - begin); });
  }
  for (std::thread& thread : pool) thread.join();
  return std::accumulate(partial.begin(), partial.end(), 0.0);
}

// Times \p work with the host clock (std::chrono::steady_clock). A first run warms up and tells
// how long one takes; each sample then repeats the work back to back for at least
// kShortestSampleS (at n = 1000 a run lasts about a microsecond, near what reading the clock
// costs), and the samples stop at options.samples or after about kHostBudgetS (at least 3).
workbook::TimingStats time_repeated_on_host(const std::function<void()>& work, const bench::Options& options) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_per_run = [&](int repeats) {
    const auto start = Clock::now();
    for (int r = 0; r < repeats; ++r) work();
    return std::max(std::chrono::duration<double>(Clock::now() - start).count() / repeats, 1e-9);
  };
  double once = seconds_per_run(1);
  for (int i = 1; i < options.warmup && once < 0.05; ++i) once = std::min(once, seconds_per_run(1));
  const int repeats = once >= kShortestSampleS ? 1 : static_cast<int>(std::ceil(kShortestSampleS / once));
  const int samples = std::clamp(static_cast<int>(kHostBudgetS / (once * repeats)), std::min(3, options.samples),
                                 options.samples);
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) ms.push_back(1e3 * seconds_per_run(repeats));
  return workbook::summarize_ms(std::move(ms));
}

}  // namespace

int main(int argc, char** argv) {
  bench::Defaults defaults;
  defaults.sizes = bench::half_decades(declared::kSweepFirstN, declared::kSweepLastN);
  defaults.blocks = {declared::kDefaultBlock};
  defaults.grid_modes = {"cover"};
  const bench::Options options = bench::parse_options(argc, argv, kLesson, defaults);
  for (const int block : options.blocks) {
    if (block < 32 || block > 1024 || (block & (block - 1)) != 0) {
      std::fprintf(stderr, "%s: --blocks %d: reduce_block runs with a power of two from 32 to 1024 threads per "
                           "block\n", argv[0], block);
      return 2;
    }
  }
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  try {
    // Only what computes the right sum is timed; the rest is named and left out.
    std::vector<LessonFunction> functions;
    bool checked = false;
    for (const LessonFunction& f : lesson_functions(options.blocks)) {
      if (options.skips(f.operation)) continue;
      bench::announce_check(f.operation);
      checked = true;
      std::string why;
      if (f.block > 0 ? block_sums_are_right(f.block, why) : sum_is_right(f, why)) {
        functions.push_back(f);
      } else {
        const std::string which = f.operation + (f.block > 0 ? " with block " + std::to_string(f.block) : "");
        std::fprintf(stderr, "%s: %s (%s) is not timed: %s\n", argv[0], which.c_str(), options.implementation.c_str(),
                     why.c_str());
      }
    }
    if (checked && functions.empty()) {
      std::fprintf(stderr, "%s: none of the lesson's functions computes the sum (%s), so nothing was timed.\n"
                           "./grade 04 tells what is wrong.\n", argv[0], options.implementation.c_str());
      return bench::kExitIncorrect;
    }
    std::vector<std::string> baselines;  // see the top of this file
    if (options.transfers) {
      for (const char* operation : {"cub_sum", "gpu_with_transfer", "cpu_one_thread", "cpu_all_threads"}) {
        if (!options.skips(operation)) baselines.emplace_back(operation);
      }
    }
    const auto on_cpu = [](const std::string& operation) { return operation.rfind("cpu_", 0) == 0; };
    const bench::RunInfo info = bench::run_info();

    // The input, and room for reduce_block's sums and the workspaces: two arrays of n floats.
    std::vector<std::size_t> sizes;
    for (const std::size_t n : options.sizes) {
      const std::size_t clipped = workbook::fit_in_free_memory(n, 2);
      if (clipped < n) {
        std::fprintf(stderr, "%s: n = %zu does not fit in half the free GPU memory; using %zu\n", argv[0], n, clipped);
      }
      if (std::find(sizes.begin(), sizes.end(), clipped) == sizes.end()) sizes.push_back(clipped);
    }
    const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::size_t planned = 0;
    for (const std::size_t n : sizes) {
      planned += functions.size();
      for (const std::string& operation : baselines) planned += !on_cpu(operation) || n <= kCpuLargestN ? 1 : 0;
    }
    if (std::any_of(baselines.begin(), baselines.end(), on_cpu)) {
      std::fprintf(stderr, "%s: the CPU rows run on %u threads (all this host has) and stop at n = %zu\n", argv[0],
                   threads, kCpuLargestN);
    }
    bench::begin_output(planned, options);

    // One input for every size (each reads its first n floats), and the same values in host
    // memory for the baselines that start there.
    workbook::DeviceBuffer<float> in(largest), out(1), block_sums((largest + 31) / 32);
    workbook::DeviceBuffer<unsigned char> workspace(kWorkspaceBytes);
    workbook::fill_random_device(in.data(), largest, 1);
    std::vector<float> host;
    declared::CubSum cub_sum(0);
    if (!baselines.empty()) {
      host.resize(largest);
      in.copy_to_host(host.data());
      for (const std::size_t n : sizes) cub_sum.reserve(n);
    }

    for (const std::size_t n : sizes) {
      const auto row_for = [&](const std::string& implementation, const std::string& operation, int block,
                               const std::string& mode, long long grid) {
        bench::Row row{kLesson, implementation, operation, n, block, mode, grid};
        row.bytes = declared::kBytesPerElement * n;
        row.flops = declared::kFlopsPerElement * n;
        bench::announce(row, options);  // first: what follows may be where a crash shows
        return row;
      };
      for (const LessonFunction& f : functions) {
        bench::Row row = row_for(options.implementation, f.operation, f.block, f.block > 0 ? "cover" : "own",
                                 f.grid(n));
        row.stats = bench::time_measurement([&](cudaStream_t s) {
          if (f.block > 0) {
            declared::launch_reduce_block(in.data(), n, block_sums.data(), f.block, s);
          } else {
            f.sum(in.data(), n, out.data(), workspace.data(), kWorkspaceBytes, s);
          }
        }, options);
        bench::emit(row, info);
      }
      for (const std::string& operation : baselines) {
        if (on_cpu(operation) && n > kCpuLargestN) continue;
        bench::Row row = row_for(on_cpu(operation) ? "CPU" : "CUB", operation, 0, "own", 0);
        if (operation == "cub_sum") {
          row.stats = bench::time_measurement([&](cudaStream_t s) { cub_sum(in.data(), n, out.data(), s); }, options);
        } else if (operation == "gpu_with_transfer") {
          // Copies the same values over the input, so it is left as it was.
          row.stats = time_repeated_on_host([&] {
            WORKBOOK_CUDA_CHECK(cudaMemcpy(in.data(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
            cub_sum(in.data(), n, out.data(), nullptr);
            float sum = 0;
            WORKBOOK_CUDA_CHECK(cudaMemcpy(&sum, out.data(), sizeof(float), cudaMemcpyDeviceToHost));
            g_sink = sum;
          }, options);
        } else if (operation == "cpu_one_thread") {
          row.stats = time_repeated_on_host([&] { g_sink = sum_one_thread(host.data(), n); }, options);
        } else {
          row.stats = time_repeated_on_host([&] { g_sink = sum_all_threads(host.data(), n, threads); }, options);
        }
        bench::emit(row, info);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
