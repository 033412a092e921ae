// The sweep of lesson 07: what the figures of a Monte Carlo report need.
//   count_inside_circle        task 1 at every N (10^2 .. 10^9 points in half decades) and every
//                              seed (1 .. 16): the count it returned (the CSV's column inside, so
//                              pi is about 4 inside / N), and its time; the error of the estimate
//                              against N, seed by seed, and its points per second come from these.
//   histogram                  task 2 on lesson 07's timed input (benchmark.hpp: 2^26 energies over
//                              [0, 8) kT), for 1, 4, 16, ..., 4096 bins (the CSV's column bins).
// and the yardsticks, which do not depend on the code swept (--no-transfers leaves them out and
// ./sweep passes it to every run after the first that succeeded, so they appear once):
//   baseline host_api_pi               cuRAND's host API draws the 2N uniforms into memory, then a
//                                      kernel counts (grader/07_monte_carlo/baselines.hpp, what the
//                                      grader times task 1 against; its own fixed seed: seed empty)
//   CPU cpu_one_thread, cpu_all_threads   pi on the host: xoshiro256** per thread, seeded by
//                                      SplitMix64 from (seed, thread), float coordinates from the top
//                                      24 bits of a draw as on the GPU; one thread up to N = 10^8, all
//                                      of std::thread::hardware_concurrency() (started and joined in
//                                      each call, a contiguous share each) up to 10^9
//   baseline global_atomics_histogram  one atomicAdd on global memory per value, at every bins
// Every row has grid_mode "own" (the functions choose their launch). The seed column holds the
// seed of a pi row (the CPU rows take the first of --seeds), empty elsewhere; bins holds the
// histogram's bins, empty elsewhere; inside holds the count of a pi row (the host API's is its last
// timed call's), empty for the histograms. bytes: 4 per value for the histograms, 16 per point for
// the host API (2 floats written, then read), 0 for the rest, which read nothing from memory.
// The GPU rows are timed with CUDA events (bench::time_measurement), the CPU rows with the host's
// steady clock (workbook::time_on_host).
//
// Before anything is timed, each function of the student is checked: count_inside_circle at
// awkward n (0, 1, 3, 1000003) and at every N and seed of the sweep, each count within 6 standard
// deviations of N pi / 4 (a binomial count: a correct program fails this about once in 10^7
// sweeps), and the same count for the same seed twice; histogram exactly against the host's count,
// with edge values, at an awkward n and at the timed n for every bins. A function that is wrong
// gets no rows (stderr says why); when neither is right the program exits with
// bench::kExitIncorrect. Thermal velocities and the walkers (tasks 3 and 4) are not swept.
//
// Lesson 07's own options (the rest are every sweep's; --help lists both):
//   --seeds S,...   the seeds of each pi estimate (the CSV's seed column; --blocks is refused)
//   --bins B,...    the histogram's numbers of bins, 1 .. 4096
// The header has one column more than bench::sweep_columns(): inside (sweep_schema.py's
// EXTRA_COLUMNS_BY_KIND), which this program writes after format_row's fields.
#include "baselines.hpp"
#include "benchmark.hpp"
#include "monte_carlo.hpp"
#include "sweep.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* const kLesson = "07_monte_carlo";
const char* const kInsideColumn = "inside";  // the result column: sweep_schema.EXTRA_COLUMNS_BY_KIND
// The pi sizes: from where a launch costs more than the work to where the host API's 2N floats
// take 8 GB.
constexpr double kFirstN = 1e2, kLastN = 1e9;
constexpr int kDefaultSeeds = 16;  // the RMS error over 16 seeds is within about 18% of the true one
const int kDefaultBins[] = {1, 4, 16, 64, 256, 1024, 4096};
constexpr int kMostBins = 4096;  // the header's limit
// One thread draws about 2.5e8 points a second: 10^8 take under a second a run.
constexpr std::uint64_t kCpuOneThreadLargestN = 100000000;
constexpr std::uint64_t kCpuAllThreadsLargestN = 1000000000;
constexpr double kSigmas = 6.0;
constexpr double kQuarterCircle = 0.78539816339744830962;  // pi / 4: the chance a point lies inside
constexpr std::uint64_t kCheckSeed = 7;
constexpr std::size_t kHistogramCheckN = 100003;  // not a multiple of any block
constexpr std::uint64_t kHistogramSeed = 71;
constexpr double kSlowCpuMs = 100.0;  // a CPU run this long is timed 3 times, not options.samples
// *inside after fill_words_device poisoned both its words: a call that wrote nothing leaves it so.
const unsigned long long kPoisonCount = (std::uint64_t(workbook::kPoisonBits) << 32) | workbook::kPoisonBits;

volatile unsigned long long g_sink = 0;  // where the host-timed work leaves its count

// What lesson 07 reads from the command line besides bench::Options.
struct LessonOptions {
  std::vector<int> bins{std::begin(kDefaultBins), std::end(kDefaultBins)};
  bool print_header = false;
};

[[noreturn]] void usage_error(const char* program, const std::string& what) {
  std::fprintf(stderr, "%s: %s\nRun %s --help for the options.\n", program, what.c_str(), program);
  std::exit(2);
}

// Takes lesson 07's own options out of argv (the rest go to bench::parse_options). --print-header
// is taken too: the header is bench's with the column inside added, which parse_options does not know.
LessonOptions take_lesson_options(int& argc, char** argv) {
  LessonOptions lesson;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--blocks") {
      usage_error(argv[0], "lesson 07 has no block size to sweep: --seeds S,... sets the seeds of each pi "
                           "estimate, --bins B,... the histogram's numbers of bins");
    }
    if (arg == "--print-header") {
      lesson.print_header = true;
      continue;
    }
    if (arg == "--bins") {
      if (i + 1 >= argc) usage_error(argv[0], "--bins needs a value");
      lesson.bins.clear();
      std::stringstream list(argv[++i]);
      for (std::string part; std::getline(list, part, ',');) {
        if (part.empty()) continue;
        char* end = nullptr;
        const long value = std::strtol(part.c_str(), &end, 10);
        if (*end != '\0' || value < 1 || value > kMostBins) {
          usage_error(argv[0], "--bins wants whole numbers from 1 to " + std::to_string(kMostBins) + ", not '" +
                               part + "'");
        }
        lesson.bins.push_back(static_cast<int>(value));
      }
      if (lesson.bins.empty()) usage_error(argv[0], "--bins needs at least one value");
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::printf(
          "Lesson 07 sweeps count_inside_circle (task 1) for every N x seed (CSV: the seed column, and the count\n"
          "in the column inside, from which ./plot draws the error of the estimate against N) beside cuRAND's host\n"
          "API and the CPU (xoshiro256**, one thread and all threads), and histogram (task 2) on %zu energies for\n"
          "every number of bins (CSV: the column bins) beside one global atomic per value.\n"
          "Its own options:\n"
          "  --seeds      the seeds of each pi estimate (default 1 .. %d)\n"
          "  --bins       the histogram's numbers of bins (default 1,4,16,64,256,1024,4096)\n\n",
          monte_carlo_benchmark::kHistogramN, kDefaultSeeds);
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  return lesson;
}

using bench::runs;

// Why \p inside is not a plausible count of \p n points in the quarter circle: "" when it is. A
// correct count is binomial (n, pi / 4); 6 standard deviations leave out 2e-9 of correct ones.
std::string implausible(unsigned long long inside, std::uint64_t n, std::uint64_t seed) {
  const double mean = kQuarterCircle * double(n);
  const double sd = std::sqrt(double(n) * kQuarterCircle * (1.0 - kQuarterCircle));
  if (inside <= n && std::fabs(double(inside) - mean) <= kSigmas * sd) return "";
  std::string why = "at n = " + std::to_string(n) + ", seed " + std::to_string(seed) + ": " + std::to_string(inside) +
                    " points inside";
  if (inside > n) return why + ", more than were drawn";
  char text[160];
  std::snprintf(text, sizeof text, ", %.1f standard deviations from n pi / 4 = %.0f (pi would be %.6g)",
                (double(inside) - mean) / sd, mean, 4.0 * double(inside) / double(n));
  return why + text;
}

// The count of one call, or \p why it could not be had.
bool count_once(std::uint64_t n, std::uint64_t seed, workbook::DeviceBuffer<unsigned long long>& inside,
                unsigned long long& count, std::string& why) {
  workbook::fill_words_device(inside.data(), 2, workbook::kPoisonBits);
  if (!runs([&] { count_inside_circle(n, seed, inside.data(), nullptr); }, why)) return false;
  inside.copy_to_host(&count);
  return true;
}

// Whether count_inside_circle gives plausible, reproducible counts at awkward n; then the counts at
// every N and seed of the sweep, each checked, into \p counts (by N, in the order of \p seeds).
bool pi_is_right(const std::vector<std::size_t>& sizes, const std::vector<int>& seeds,
                 std::map<std::uint64_t, std::vector<unsigned long long>>& counts, std::string& why) {
  workbook::DeviceBuffer<unsigned long long> inside(1);
  unsigned long long count = 0;
  for (const std::uint64_t n : {std::uint64_t(1000003), std::uint64_t(0), std::uint64_t(1), std::uint64_t(3)}) {
    if (!count_once(n, kCheckSeed, inside, count, why)) return false;
    if (count == kPoisonCount) {
      why = n > 0 ? "it wrote nothing to *inside" : "at n = 0 it left *inside as it was; it must write 0";
      return false;
    }
    if (n == 0 && count != 0) {
      why = "at n = 0 it wrote " + std::to_string(count) + " to *inside, not 0";
      return false;
    }
    if (!(why = implausible(count, n, kCheckSeed)).empty()) return false;
  }
  unsigned long long again = 0;
  if (!count_once(1000003, kCheckSeed, inside, count, why) || !count_once(1000003, kCheckSeed, inside, again, why)) {
    return false;
  }
  if (count != again) {
    why = "the same n and seed gave " + std::to_string(count) + " and then " + std::to_string(again) +
          " points inside; the same seed must give the same count";
    return false;
  }
  for (const std::size_t n : sizes) {
    std::printf("# checking count_inside_circle n=%zu\n", n);  // a sign of life: the large N take a while
    std::fflush(stdout);
    for (const int seed : seeds) {
      if (!count_once(n, std::uint64_t(seed), inside, count, why)) return false;
      if (!(why = implausible(count, n, std::uint64_t(seed))).empty()) return false;
      counts[n].push_back(count);
    }
  }
  return true;
}

// The histogram's timed input for \p bins bins: energies that keep clear of the inner edges of the
// grid they were drawn for. One grid serves every bins that divides it (its edges are the grid's),
// so the sweep's powers of two share one input.
int grid_for_bins(int bins, const std::vector<int>& all) {
  const int most = *std::max_element(all.begin(), all.end());
  return most % bins == 0 ? most : bins;
}

// Whether histogram gives exactly the host's counts: at an awkward n with the edge values (lo, hi,
// just outside them, NaN, infinities) and at n = 0, for every bins.
bool histogram_is_right(const std::vector<int>& all_bins, std::string& why) {
  using namespace monte_carlo_benchmark;
  for (const int bins : all_bins) {
    for (const std::size_t n : {kHistogramCheckN, std::size_t(0)}) {
      const std::vector<float> values =
          monte_carlo_baselines::energies(n, kHistogramSeed, kHistogramLo, kHistogramHi, bins, true);
      const std::vector<unsigned int> want =
          monte_carlo_baselines::histogram_on_host(values, kHistogramLo, kHistogramHi, bins);
      workbook::DeviceBuffer<float> device_values(std::max<std::size_t>(n, 1));
      if (n > 0) device_values.copy_from_host(values.data());
      workbook::DeviceBuffer<unsigned int> counts(bins);
      workbook::fill_words_device(counts.data(), std::size_t(bins), workbook::kPoisonBits);
      if (!runs([&] { histogram(device_values.data(), n, kHistogramLo, kHistogramHi, counts.data(), bins, nullptr); },
                why)) {
        return false;
      }
      std::vector<unsigned int> got(bins);
      counts.copy_to_host(got.data());
      if (std::all_of(got.begin(), got.end(), [](unsigned int c) { return c == workbook::kPoisonBits; })) {
        why = n > 0 ? "it wrote nothing to counts" : "at n = 0 it left counts as they were; it must write zeros";
        return false;
      }
      for (int b = 0; b < bins; ++b) {
        if (got[b] != want[b]) {
          why = "at n = " + std::to_string(n) + " with " + std::to_string(bins) + " bins, bin " + std::to_string(b) +
                " holds " + std::to_string(got[b]) + ", expected " + std::to_string(want[b]);
          return false;
        }
      }
    }
  }
  return true;
}

// The timed n's counts of histogram against the host's, on the input in \p values (host) and
// \p device_values; "" when they agree.
std::string timed_histogram_wrong(const std::vector<float>& values, const float* device_values, int bins) {
  using namespace monte_carlo_benchmark;
  const std::vector<unsigned int> want = monte_carlo_baselines::histogram_on_host(values, kHistogramLo, kHistogramHi,
                                                                                  bins);
  workbook::DeviceBuffer<unsigned int> counts(bins);
  workbook::fill_words_device(counts.data(), std::size_t(bins), workbook::kPoisonBits);
  std::string why;
  if (!runs([&] { histogram(device_values, values.size(), kHistogramLo, kHistogramHi, counts.data(), bins, nullptr); },
            why)) {
    return why;
  }
  std::vector<unsigned int> got(bins);
  counts.copy_to_host(got.data());
  for (int b = 0; b < bins; ++b) {
    if (got[b] != want[b]) {
      return "at n = " + std::to_string(values.size()) + " with " + std::to_string(bins) + " bins, bin " +
             std::to_string(b) + " holds " + std::to_string(got[b]) + ", expected " + std::to_string(want[b]);
    }
  }
  return "";
}

// xoshiro256** (Blackman and Vigna), the generator of the CPU rows: fast, and passes BigCrush. Its
// state is seeded by SplitMix64 (workbook::mix64) from the seed and the thread, as its authors advise.
class Xoshiro256StarStar {
public:
  Xoshiro256StarStar(std::uint64_t seed, std::uint64_t stream) {
    const std::uint64_t base = workbook::mix64(workbook::mix64(seed) ^ stream);
    for (std::uint64_t k = 0; k < 4; ++k) s_[k] = workbook::mix64(base + k);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

// The points inside among \p n drawn on one thread: floats in [0, 1) from the top 24 bits, as
// curand_uniform has 24 bits, compared in float as the GPU does.
unsigned long long count_inside_on_cpu(std::uint64_t n, std::uint64_t seed, std::uint64_t stream) {
  Xoshiro256StarStar generator(seed, stream);
  unsigned long long inside = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const float x = float(generator.next() >> 40) * 0x1.0p-24f;
    const float y = float(generator.next() >> 40) * 0x1.0p-24f;
    inside += x * x + y * y <= 1.0f;
  }
  return inside;
}

// The same on \p threads threads, a contiguous share each with its own stream, started and joined in
// every call as a plain std::thread program does (at small n one thread wins because of it).
unsigned long long count_inside_on_threads(std::uint64_t n, std::uint64_t seed, unsigned threads) {
  std::vector<unsigned long long> partial(threads, 0);
  std::vector<std::thread> pool;
  const std::uint64_t share = n / threads, rest = n % threads;
  for (unsigned t = 0; t < threads; ++t) {
    const std::uint64_t mine = share + (t < rest ? 1 : 0);
    pool.emplace_back([&partial, mine, seed, t] { partial[t] = count_inside_on_cpu(mine, seed, t); });
  }
  for (std::thread& thread : pool) thread.join();
  return std::accumulate(partial.begin(), partial.end(), 0ull);
}

// Times host work with the steady clock (workbook::time_on_host): one untimed run first; a run
// slower than kSlowCpuMs is then timed 3 times, not options.samples, so a row takes seconds at most.
workbook::TimingStats time_on_cpu(const std::function<void()>& work, const bench::Options& options) {
  const auto start = std::chrono::steady_clock::now();
  work();
  const double once_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (once_ms > kSlowCpuMs) return workbook::time_on_host(work, 0, std::min(3, options.samples));
  return workbook::time_on_host(work, std::max(0, options.warmup - 1), options.samples);
}

// A row and its count (the column inside; empty for a histogram), printed as the header says.
void emit(const bench::Row& row, const bench::RunInfo& info, const std::string& inside) {
  std::printf("%s,%s\n", bench::format_row(row, info).c_str(), inside.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const LessonOptions lesson = take_lesson_options(argc, argv);
  bench::Defaults defaults;
  defaults.sizes = bench::half_decades(kFirstN, kLastN);
  for (int seed = 1; seed <= kDefaultSeeds; ++seed) defaults.blocks.push_back(seed);
  defaults.blocks_option = "--seeds";
  defaults.blocks_meaning = "seeds of each pi estimate";
  defaults.block_column = "seed";
  defaults.grid_column = "bins";
  defaults.grid_modes = {"own"};
  bench::Options options = bench::parse_options(argc, argv, kLesson, defaults);
  options.columns.push_back(kInsideColumn);
  if (lesson.print_header) {
    std::puts(bench::header_line(options.columns).c_str());
    return 0;
  }
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  using namespace monte_carlo_benchmark;
  const std::vector<int>& seeds = options.blocks;
  try {
    std::vector<std::size_t> sizes = options.sizes;
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());

    // Only what gives the right result is timed; the rest is named and left out.
    std::map<std::uint64_t, std::vector<unsigned long long>> counts;  // the student's, by N, per seed
    bool pi_right = false, histogram_right = false, checked = false;
    if (!options.skips("count_inside_circle")) {
      bench::announce_check("count_inside_circle");
      checked = true;
      std::string why;
      pi_right = pi_is_right(sizes, seeds, counts, why);
      if (!pi_right) {
        std::fprintf(stderr, "%s: count_inside_circle (%s) is not timed: %s\n", argv[0], options.implementation.c_str(),
                     why.c_str());
      }
    }
    if (!options.skips("histogram")) {
      bench::announce_check("histogram");
      checked = true;
      std::string why;
      histogram_right = histogram_is_right(lesson.bins, why);
      if (!histogram_right) {
        std::fprintf(stderr, "%s: histogram (%s) is not timed: %s\n", argv[0], options.implementation.c_str(),
                     why.c_str());
      }
    }

    // The histogram's timed input, one per grid (grid_for_bins), on the device; checked there too.
    const bool histogram_baseline = options.transfers && !options.skips("global_atomics_histogram");
    const std::size_t histogram_n = workbook::fit_in_free_memory(kHistogramN, 2);
    if (histogram_n < kHistogramN && (histogram_right || histogram_baseline)) {
      std::fprintf(stderr, "%s: the histogram's n = %zu does not fit in the free GPU memory; using %zu\n", argv[0],
                   kHistogramN, histogram_n);
    }
    std::map<int, workbook::DeviceBuffer<float>> histogram_inputs;  // by grid
    if (histogram_right || histogram_baseline) {
      for (const int bins : lesson.bins) {
        const int grid = grid_for_bins(bins, lesson.bins);
        if (histogram_inputs.count(grid)) continue;
        const std::vector<float> values =
            monte_carlo_baselines::energies(histogram_n, kHistogramSeed, kHistogramLo, kHistogramHi, grid, false);
        histogram_inputs.emplace(grid, workbook::DeviceBuffer<float>(histogram_n)).first->second.copy_from_host(
            values.data());
        for (const int b : lesson.bins) {
          if (!histogram_right || grid_for_bins(b, lesson.bins) != grid) continue;
          std::printf("# checking histogram n=%zu bins=%d\n", histogram_n, b);
          std::fflush(stdout);
          const std::string wrong = timed_histogram_wrong(values, histogram_inputs.at(grid).data(), b);
          if (!wrong.empty()) {
            std::fprintf(stderr, "%s: histogram (%s) is not timed: %s\n", argv[0], options.implementation.c_str(),
                         wrong.c_str());
            histogram_right = false;
          }
        }
      }
    }
    if (checked && !pi_right && !histogram_right) {
      std::fprintf(stderr, "%s: neither count_inside_circle nor histogram gives the right result (%s), so nothing "
                           "was timed.\n./grade 07 tells what is wrong.\n", argv[0], options.implementation.c_str());
      return bench::kExitIncorrect;
    }

    std::vector<std::string> pi_baselines;  // see the top of this file
    if (options.transfers) {
      for (const char* operation : {"host_api_pi", "cpu_one_thread", "cpu_all_threads"}) {
        if (!options.skips(operation)) pi_baselines.emplace_back(operation);
      }
    }
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    // Where each pi baseline runs: the host API needs its 2N floats in GPU memory, the CPU its time.
    const auto runs_at = [&](const std::string& operation, std::uint64_t n) {
      if (operation == "host_api_pi") return workbook::fit_in_free_memory(n, 2) >= n;
      return n <= (operation == "cpu_one_thread" ? kCpuOneThreadLargestN : kCpuAllThreadsLargestN);
    };
    std::size_t planned = 0;
    for (const std::size_t n : sizes) {
      planned += pi_right ? seeds.size() : 0;
      for (const std::string& operation : pi_baselines) planned += runs_at(operation, n) ? 1 : 0;
    }
    planned += lesson.bins.size() * ((histogram_right ? 1 : 0) + (histogram_baseline ? 1 : 0));
    const bool host_api = std::find(pi_baselines.begin(), pi_baselines.end(), "host_api_pi") != pi_baselines.end();
    for (const std::size_t n : sizes) {
      if (host_api && !runs_at("host_api_pi", n)) {
        std::fprintf(stderr, "%s: host_api_pi at N = %zu: its 2N floats do not fit in the GPU's free memory; "
                             "left out there\n", argv[0], n);
      }
    }
    if (!pi_baselines.empty()) {
      std::fprintf(stderr, "%s: the CPU rows run on %u threads (all this host has); one thread stops at N = %llu\n",
                   argv[0], threads, static_cast<unsigned long long>(kCpuOneThreadLargestN));
    }
    const bench::RunInfo info = bench::run_info();
    bench::begin_output(planned, options);

    workbook::DeviceBuffer<unsigned long long> inside(1);
    for (const std::size_t n : sizes) {
      if (pi_right) {
        for (std::size_t k = 0; k < seeds.size(); ++k) {
          const std::uint64_t seed = std::uint64_t(seeds[k]);
          bench::Row row{kLesson, options.implementation, "count_inside_circle", n, seeds[k], "own"};
          bench::announce(row, options);  // first: any CUDA call below may be where a crash shows
          row.stats = bench::time_measurement(
              [&](cudaStream_t s) { count_inside_circle(n, seed, inside.data(), s); }, options);
          emit(row, info, std::to_string(counts.at(n)[k]));
        }
      }
      for (const std::string& operation : pi_baselines) {
        if (!runs_at(operation, n)) continue;
        const bool cpu = operation != "host_api_pi";
        bench::Row row{kLesson, cpu ? "CPU" : "baseline", operation, n, cpu ? seeds.front() : 0, "own"};
        bench::announce(row, options);
        unsigned long long count = 0;
        if (!cpu) {
          monte_carlo_baselines::HostApiPi host_api(n);
          row.bytes = 16.0 * double(n);  // 2N floats written by the generator, then read by the count
          row.stats = bench::time_measurement([&](cudaStream_t s) { host_api.run(inside.data(), s); }, options);
          WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
          inside.copy_to_host(&count);  // the last timed call's count
        } else {
          const std::uint64_t seed = std::uint64_t(seeds.front());
          const auto work = operation == "cpu_one_thread"
                                ? std::function<void()>([&] { g_sink = count_inside_on_cpu(n, seed, 0); })
                                : std::function<void()>([&] { g_sink = count_inside_on_threads(n, seed, threads); });
          row.stats = time_on_cpu(work, options);
          count = g_sink;
        }
        emit(row, info, std::to_string(count));
      }
    }
    for (const int bins : lesson.bins) {
      const float* values = histogram_inputs.count(grid_for_bins(bins, lesson.bins))
                                ? histogram_inputs.at(grid_for_bins(bins, lesson.bins)).data()
                                : nullptr;
      workbook::DeviceBuffer<unsigned int> counts_out(bins);
      for (const bool baseline : {false, true}) {
        if (baseline ? !histogram_baseline : !histogram_right) continue;
        bench::Row row{kLesson, baseline ? "baseline" : options.implementation,
                       baseline ? "global_atomics_histogram" : "histogram", histogram_n, 0, "own", bins};
        bench::announce(row, options);
        row.bytes = 4.0 * double(histogram_n);  // each value read once; the counts are few
        row.stats = bench::time_measurement([&](cudaStream_t s) {
          if (baseline) {
            monte_carlo_baselines::global_atomics_histogram(values, histogram_n, kHistogramLo, kHistogramHi,
                                                            counts_out.data(), bins, s);
          } else {
            histogram(values, histogram_n, kHistogramLo, kHistogramHi, counts_out.data(), bins, s);
          }
        }, options);
        emit(row, info, "");
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
