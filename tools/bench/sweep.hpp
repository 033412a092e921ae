/// \file
/// What every lesson's sweep program shares: its command line, the CSV it writes (one row
/// per measurement, the columns in sweep_columns()), and the host-device transfer timings.
/// A sweep program prints "# planned N" first, then the header, then rows as they are
/// measured; ./sweep reads them as they come, draws the progress bar and writes the file.
/// Before each check and each measurement it prints a marker line ("# checking OP",
/// "# measuring OP n=N ..."): when student code crashes or hangs, the last marker names the
/// function, and ./sweep runs the program again with --skip OP.
#pragma once

#include "workbook/timer.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

/// Exit status of a sweep program whose student code gives wrong results: nothing is timed.
constexpr int kExitIncorrect = 5;

/// What a lesson's sweep covers unless the command line says otherwise.
struct Defaults {
  std::vector<std::size_t> sizes;        ///< problem sizes
  std::vector<int> blocks;               ///< threads per block
  std::vector<std::string> grid_modes;   ///< the lesson's grid modes; the first is the default
  /// The option that sets Options::blocks and what its numbers are: a lesson whose second axis
  /// is not a block size names it for what it is (lesson 05: "--streams", the numbers of streams).
  std::string blocks_option = "--blocks";
  std::string blocks_meaning = "threads per block";
  /// The CSV's names for Row::block and Row::grid: what the lesson's axes are (lesson 05:
  /// "streams" and "chunks"). tools/bench/sweep_schema.py knows each pair (AXES_BY_KIND).
  std::string block_column = "block";
  std::string grid_column = "grid";
};

/// The parsed command line of a sweep program.
struct Options {
  std::string implementation = "student";  ///< the CSV's implementation column
  std::vector<std::size_t> sizes;          ///< problem sizes, before clipping to free memory
  std::vector<int> blocks;                 ///< threads per block
  std::vector<std::string> grid_modes;     ///< grid modes
  int warmup = 3;                          ///< untimed launches per measurement
  int samples = 20;                        ///< timed launches per measurement
  bool transfers = true;                   ///< also time the host-device copies
  std::vector<std::string> skip;           ///< operations left out: not checked, timed or planned
  std::vector<std::string> columns;        ///< the CSV header, with the lesson's axis names
  std::string block_column = "block";      ///< Defaults::block_column
  std::string grid_column = "grid";        ///< Defaults::grid_column

  /// Whether --skip left \p operation out.
  bool skips(const std::string& operation) const;
};

/// Sizes 10^4 .. 10^8 in steps of sqrt(10) (half decades), rounded.
std::vector<std::size_t> half_decades(double first = 1e4, double last = 1e8);

/// Parses argv. Bad arguments print what was wrong and the usage to stderr and exit with 2;
/// --help prints the usage and --print-header the CSV header, and both exit with 0 (no GPU needed).
Options parse_options(int argc, char** argv, const std::string& lesson, const Defaults& defaults);

/// The CSV columns, in order, with \p block_column and \p grid_column the names of Row::block
/// and Row::grid. tools/bench/sweep_schema.py lists the same (a test checks it).
std::vector<std::string> sweep_columns(const std::string& block_column = "block",
                                       const std::string& grid_column = "grid");

/// One measurement: one CSV row.
struct Row {
  Row() = default;
  /// What is measured (the timing, bytes and flops are set after).
  Row(std::string lesson_, std::string implementation_, std::string operation_, std::size_t n_, int block_ = 0,
      std::string grid_mode_ = "", long long grid_ = 0)
      : lesson(std::move(lesson_)), implementation(std::move(implementation_)), operation(std::move(operation_)),
        n(n_), block(block_), grid_mode(std::move(grid_mode_)), grid(grid_) {}

  std::string lesson;          ///< e.g. "02_multiply_add"
  std::string implementation;  ///< "student", "reference", or "cudaMemcpy" for transfers
  std::string operation;       ///< the kernel, or h2d_pageable / h2d_pinned / d2h_pageable / d2h_pinned
  std::size_t n = 0;           ///< problem size (elements)
  int block = 0;               ///< threads per block (lesson 05: streams); 0 (empty in the CSV) for transfers
  std::string grid_mode;       ///< e.g. "cover" or "wave"; empty for transfers
  long long grid = 0;          ///< blocks launched (lesson 05: chunks); 0 (empty) for transfers
  workbook::TimingStats stats; ///< the timing
  double bytes = 0;            ///< bytes moved to and from memory per launch (or copied)
  double flops = 0;            ///< floating-point operations per launch
};

/// Facts written into every row: the GPU, its measured copy bandwidth and the sweep's start.
struct RunInfo {
  std::string gpu;
  double copy_bandwidth_gbps = 0;
  std::string date;  ///< ISO 8601, UTC
};

/// Reads the GPU's name, measures its copy bandwidth (or takes it from the environment,
/// see workbook::copy_bandwidth_gbps_for_run) and notes the time.
RunInfo run_info();

/// The header line of \p columns (no newline).
std::string header_line(const std::vector<std::string>& columns);

/// A row as a CSV line (no newline); fields with commas or quotes are quoted.
std::string format_row(const Row& row, const RunInfo& info);

/// Prints "# planned N" (N measurements to come) and the header of options.columns to stdout.
void begin_output(std::size_t planned, const Options& options);

/// Prints one row to stdout and flushes it, so ./sweep sees it at once.
void emit(const Row& row, const RunInfo& info);

/// Prints "# checking OPERATION" and flushes it: a correctness check of student code follows.
void announce_check(const std::string& operation);

/// Prints "# measuring OPERATION n=N block=B grid=MODE" (block and grid mode when set; the
/// block by the lesson's name for it, lesson 05's "streams=S grid=pipeline chunks=C") and
/// flushes it: the measurement of \p row follows.
void announce(const Row& row, const Options& options);

/// A field of a CSV line: quoted (its quotes doubled) when it holds a comma, a quote or a newline.
std::string csv_field(const std::string& text);

/// A number for a CSV line, with six significant digits.
std::string number(double value);

/// Runs \p work (student code) and waits for the GPU. False, with \p why, when it threw;
/// rethrows when the CUDA context is broken for good (an illegal address, say), so that the
/// process ends while the last announcement still names the function.
bool runs(const std::function<void()>& work, std::string& why);

/// The host-device copies that measure_transfers() times, in order.
const std::vector<std::string>& transfer_operations();

/// Times copying \p in_arrays arrays of n floats to the device and \p out_arrays back, from
/// pageable (std::vector) and pinned (cudaMallocHost) host memory: a row for each of
/// transfer_operations() that \p options does not skip, each announced before it is timed.
std::vector<Row> measure_transfers(const std::string& lesson, std::size_t n, int in_arrays, int out_arrays,
                                   const Options& options);

/// Times one measurement with the options' warm-up and samples (fewer samples when one probe
/// launch already takes long), flushing L2 before each sample so the data comes from DRAM.
workbook::TimingStats time_measurement(const std::function<void(cudaStream_t)>& work, const Options& options);

}  // namespace bench
