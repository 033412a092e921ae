// The sweep of lesson 02: multiply_add timed for every size x block size x grid mode, plus
// the host-device copies of its inputs and output. What is timed, its axes and its figure of
// merit are lesson 02's benchmark declaration (grader/02_multiply_add/benchmark.hpp), which the
// grader's timed tests use too. ./sweep 02 runs it twice, for the
// student's code and for the reference solution, and writes the CSV the plots are made from.
// --skip multiply_add leaves the kernel out (not checked, not timed): ./sweep passes it when
// the kernel crashed or hung, so the copies are still measured.
#include "benchmark.hpp"
#include "multiply_add.hpp"
#include "sweep.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

const char* const kLesson = "02_multiply_add";

namespace declared = multiply_add_benchmark;

// Nothing is timed unless the kernel is right: checked at an awkward size, with a grid far
// smaller than n and with an exactly covering one.
bool kernel_is_correct(std::string& why) {
  const std::size_t n = 100003;
  const float b = 1.5f;
  const std::uint64_t seed1 = 11, seed2 = 12;
  workbook::DeviceBuffer<float> x1(n), x2(n), y(n);
  workbook::fill_random_device(x1.data(), n, seed1);
  workbook::fill_random_device(x2.data(), n, seed2);
  std::vector<float> expected(n), got(n);
  for (std::size_t i = 0; i < n; ++i) {
    expected[i] = static_cast<float>(static_cast<double>(workbook::random_uniform(seed1, i, -1, 1)) *
                                         workbook::random_uniform(seed2, i, -1, 1) + b);
  }
  for (const int grid : {7, static_cast<int>((n + 255) / 256)}) {
    WORKBOOK_CUDA_CHECK(cudaMemset(y.data(), 0xFF, y.bytes()));
    multiply_add<<<grid, 256>>>(x1.data(), x2.data(), b, y.data(), static_cast<int>(n));
    WORKBOOK_CHECK_LAUNCH();
    WORKBOOK_CUDA_CHECK(cudaMemcpy(got.data(), y.data(), y.bytes(), cudaMemcpyDeviceToHost));
    const auto report = workbook::compare_to_reference(got.data(), expected.data(), n, {1e-6, 1e-6});
    if (!report.ok()) {
      why = "with " + std::to_string(grid) + " blocks of 256 threads: " + report.describe();
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Defaults defaults;
  defaults.sizes = bench::half_decades(declared::kSweepFirstN, declared::kSweepLastN);
  defaults.blocks.assign(std::begin(declared::kSweepBlocks), std::end(declared::kSweepBlocks));
  defaults.grid_modes = declared::grid_modes();
  const bench::Options options = bench::parse_options(argc, argv, kLesson, defaults);
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  try {
    const bool kernel = !options.skips("multiply_add");
    if (kernel) {
      bench::announce_check("multiply_add");
      std::string why;
      if (!kernel_is_correct(why)) {
        std::fprintf(stderr, "%s: multiply_add (%s) gives wrong results, so nothing was timed.\n%s\n"
                             "./grade 02 tells what is wrong.\n", argv[0], options.implementation.c_str(), why.c_str());
        return bench::kExitIncorrect;
      }
    }
    const bench::RunInfo info = bench::run_info();

    // Three arrays on the device; the transfers add three more, so clip for six.
    std::vector<std::size_t> sizes;
    for (const std::size_t n : options.sizes) {
      const std::size_t clipped = workbook::fit_in_free_memory(n, options.transfers ? 6 : 3);
      if (clipped < n) {
        std::fprintf(stderr, "%s: n = %zu does not fit in half the free GPU memory; using %zu\n", argv[0], n, clipped);
      }
      if (std::find(sizes.begin(), sizes.end(), clipped) == sizes.end()) sizes.push_back(clipped);
    }
    std::size_t transfers = 0;
    for (const std::string& operation : bench::transfer_operations()) {
      transfers += options.transfers && !options.skips(operation) ? 1 : 0;
    }
    const std::size_t planned =
        sizes.size() * ((kernel ? options.blocks.size() * options.grid_modes.size() : 0) + transfers);
    bench::begin_output(planned, options);

    const std::vector<int> blocks = kernel ? options.blocks : std::vector<int>{};  // none: only the copies
    for (const std::size_t n : sizes) {
      workbook::DeviceBuffer<float> x1(n), x2(n), y(n);
      workbook::fill_random_device(x1.data(), n, 1);
      workbook::fill_random_device(x2.data(), n, 2);
      const float b = 0.5f;
      for (const int block : blocks) {
        for (const std::string& mode : options.grid_modes) {
          bench::Row row{kLesson, options.implementation, "multiply_add", n, block, mode};
          bench::announce(row, options);  // first: any CUDA call below may be where a crash shows
          row.grid = declared::grid_for(mode, n, block);
          row.bytes = declared::kBytesPerElement * n;
          row.flops = declared::kFlopsPerElement * n;
          const int grid = static_cast<int>(row.grid);
          row.stats = bench::time_measurement([&](cudaStream_t s) {
            multiply_add<<<grid, block, 0, s>>>(x1.data(), x2.data(), b, y.data(), static_cast<int>(n));
          }, options);
          bench::emit(row, info);
        }
      }
      if (options.transfers) {
        for (const bench::Row& row : bench::measure_transfers(kLesson, n, 2, 1, options)) bench::emit(row, info);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
