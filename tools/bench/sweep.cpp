// The shared part of the sweep programs: command line, CSV rows, transfer timings.
#include "sweep.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <stdexcept>

namespace bench {
namespace {

[[noreturn]] void usage_error(const std::string& program, const std::string& what) {
  std::fprintf(stderr, "%s: %s\nRun %s --help for the options.\n", program.c_str(), what.c_str(), program.c_str());
  std::exit(2);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// A positive whole number, written plainly or as 1e6.
double parse_count(const std::string& program, const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(value >= 1) || value > 2e9 || value != std::floor(value)) {
    usage_error(program, option + " wants whole numbers from 1 to 2e9 (like 1000 or 1e6), not '" + text + "'");
  }
  return value;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// A size as the command line takes it: 1e6 for a power of ten, else the number.
std::string size_name(std::size_t n) {
  const int exponent = static_cast<int>(std::lround(std::log10(static_cast<double>(n))));
  return n >= 1000 && std::pow(10.0, exponent) == static_cast<double>(n) ? "1e" + std::to_string(exponent)
                                                                         : std::to_string(n);
}

// A lesson's default sizes for the usage: "1e3 .. 1e9 in half decades", or the list.
std::string describe_sizes(const std::vector<std::size_t>& sizes) {
  if (sizes.size() > 2 &&
      sizes == half_decades(static_cast<double>(sizes.front()), static_cast<double>(sizes.back()))) {
    return size_name(sizes.front()) + " .. " + size_name(sizes.back()) + " in half decades";
  }
  std::string out;
  for (const std::size_t n : sizes) out += (out.empty() ? "" : ",") + size_name(n);
  return out;
}

}  // namespace

std::vector<std::size_t> half_decades(double first, double last) {
  std::vector<std::size_t> sizes;
  for (double e = std::log10(first); e <= std::log10(last) + 1e-9; e += 0.5) {
    sizes.push_back(static_cast<std::size_t>(std::llround(std::pow(10.0, e))));
  }
  return sizes;
}

Options parse_options(int argc, char** argv, const std::string& lesson, const Defaults& defaults) {
  const std::string program = argc > 0 ? argv[0] : "sweep";
  Options options;
  options.sizes = defaults.sizes;
  options.blocks = defaults.blocks;
  options.grid_modes = defaults.grid_modes;
  options.columns = sweep_columns(defaults.block_column, defaults.grid_column);
  options.block_column = defaults.block_column;
  options.grid_column = defaults.grid_column;
  std::vector<std::string> block_names;
  for (const int block : defaults.blocks) block_names.push_back(std::to_string(block));
  const std::string usage =
      "usage: " + program + " [--implementation NAME] [--sizes N,N,...] [" + defaults.blocks_option + " B,B,...] "
      "[--grids MODE,...]\n"
      "       [--warmup N] [--samples N] [--no-transfers] [--skip OP,...] [--print-header]\n"
      "Times lesson " + lesson + " for every size x " + defaults.blocks_meaning + " x grid mode and prints one CSV\n"
      "row per measurement to stdout (./sweep runs this for you and writes the file). Before each check\n"
      "and each measurement it prints a line '# checking OP' or '# measuring OP n=N ...': after a crash\n"
      "or a hang, the last one names the function, and ./sweep runs it again with --skip OP.\n"
      "  --sizes      problem sizes (default " + describe_sizes(defaults.sizes) + "; clipped to the GPU's free memory)\n"
      "  " + defaults.blocks_option + std::string(defaults.blocks_option.size() < 12 ? 12 - defaults.blocks_option.size() : 1, ' ') +
      " " + defaults.blocks_meaning + " (default " + join(block_names) + ")\n"
      "  --grids      grid modes: " + join(defaults.grid_modes) + "\n"
      "  --implementation  the CSV's implementation column (default student)\n"
      "  --no-transfers    no host-device copies, and no baselines that do not depend on the code swept\n"
      "                    (cuBLAS in lesson 03; CUB and the CPU in lesson 04)\n"
      "  --skip OP,...     leave these operations out: not checked, not timed (may be repeated)\n"
      "  --print-header    print the CSV header and stop (needs no GPU)\n";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(program, arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage.c_str(), stdout);
      std::exit(0);
    } else if (arg == "--implementation") {
      options.implementation = value();
    } else if (arg == "--sizes") {
      options.sizes.clear();
      for (const auto& s : split(value())) options.sizes.push_back(static_cast<std::size_t>(parse_count(program, arg, s)));
    } else if (arg == defaults.blocks_option) {
      options.blocks.clear();
      for (const auto& s : split(value())) options.blocks.push_back(static_cast<int>(parse_count(program, arg, s)));
    } else if (arg == "--grids") {
      options.grid_modes = split(value());
      for (const auto& mode : options.grid_modes) {
        if (std::find(defaults.grid_modes.begin(), defaults.grid_modes.end(), mode) == defaults.grid_modes.end()) {
          usage_error(program, "unknown grid mode '" + mode + "'; this lesson has: " + join(defaults.grid_modes));
        }
      }
    } else if (arg == "--warmup") {
      options.warmup = static_cast<int>(parse_count(program, arg, value()));
    } else if (arg == "--samples") {
      options.samples = static_cast<int>(parse_count(program, arg, value()));
    } else if (arg == "--no-transfers") {
      options.transfers = false;
    } else if (arg == "--print-header") {
      std::puts(header_line(options.columns).c_str());
      std::exit(0);
    } else if (arg == "--skip") {
      for (const auto& operation : split(value())) options.skip.push_back(operation);
    } else {
      usage_error(program, "unknown argument '" + arg + "'");
    }
  }
  if (options.sizes.empty() || options.blocks.empty() || options.grid_modes.empty()) {
    usage_error(program, "--sizes, " + defaults.blocks_option + " and --grids need at least one value each");
  }
  return options;
}

bool Options::skips(const std::string& operation) const {
  return std::find(skip.begin(), skip.end(), operation) != skip.end();
}

std::vector<std::string> sweep_columns(const std::string& block_column, const std::string& grid_column) {
  return {"lesson", "implementation", "operation", "n", block_column, "grid_mode", grid_column, "samples",
          "median_ms", "min_ms", "max_ms", "bytes", "flops", "gbps", "gflops", "pct_of_copy_bandwidth",
          "copy_bandwidth_gbps", "gpu", "date"};
}

RunInfo run_info() {
  RunInfo info;
  info.gpu = workbook::query_device(0).name;
  info.copy_bandwidth_gbps = workbook::copy_bandwidth_gbps_for_run();
  const std::time_t now = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  info.date = buffer;
  return info;
}

std::string header_line(const std::vector<std::string>& columns) {
  std::string line;
  for (const auto& column : columns) line += (line.empty() ? "" : ",") + column;
  return line;
}

std::string format_row(const Row& row, const RunInfo& info) {
  const double gbps = workbook::gigabytes_per_second(row.bytes, row.stats.median_ms);
  const double gflops = row.stats.median_ms > 0 ? row.flops / (row.stats.median_ms * 1e-3) / 1e9 : 0.0;
  const std::vector<std::string> fields{
      csv_field(row.lesson), csv_field(row.implementation), csv_field(row.operation), std::to_string(row.n),
      row.block > 0 ? std::to_string(row.block) : "", csv_field(row.grid_mode),
      row.grid > 0 ? std::to_string(row.grid) : "", std::to_string(row.stats.samples), number(row.stats.median_ms),
      number(row.stats.min_ms), number(row.stats.max_ms), number(row.bytes), number(row.flops), number(gbps),
      number(gflops), number(info.copy_bandwidth_gbps > 0 ? 100.0 * gbps / info.copy_bandwidth_gbps : 0.0),
      number(info.copy_bandwidth_gbps), csv_field(info.gpu), info.date};
  std::string line;
  for (const auto& field : fields) line += (line.empty() ? "" : ",") + field;
  return line;
}

void begin_output(std::size_t planned, const Options& options) {
  std::printf("# planned %zu\n%s\n", planned, header_line(options.columns).c_str());
  std::fflush(stdout);
}

void emit(const Row& row, const RunInfo& info) {
  std::printf("%s\n", format_row(row, info).c_str());
  std::fflush(stdout);
}

void announce_check(const std::string& operation) {
  std::printf("# checking %s\n", operation.c_str());
  std::fflush(stdout);  // out before the check runs: it may be the last line the program prints
}

void announce(const Row& row, const Options& options) {
  std::string line = "# measuring " + row.operation + " n=" + std::to_string(row.n);
  if (row.block > 0) line += " " + options.block_column + "=" + std::to_string(row.block);
  if (!row.grid_mode.empty()) line += " grid=" + row.grid_mode;
  if (row.grid > 0 && options.grid_column != "grid") line += " " + options.grid_column + "=" + std::to_string(row.grid);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);  // out before the measurement runs: it may be the last line the program prints
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

bool runs(const std::function<void()>& work, std::string& why) {
  try {
    work();
    WORKBOOK_CHECK_LAUNCH();
    WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
    return true;
  } catch (const std::exception& e) {
    (void)cudaGetLastError();
    if (cudaDeviceSynchronize() != cudaSuccess) throw;
    why = e.what();
    return false;
  }
}

const std::vector<std::string>& transfer_operations() {
  static const std::vector<std::string> operations{"h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned"};
  return operations;
}

workbook::TimingStats time_measurement(const std::function<void(cudaStream_t)>& work, const Options& options) {
  workbook::MeasureOptions timing;
  timing.warmup = options.warmup;
  timing.samples = options.samples;
  timing.slow_ms = 50.0;  // a probe this slow: the options' warm-up and 3 samples
  timing.slow_samples = 3;
  timing.slow_warmup = options.warmup;
  timing.flush_l2 = true;  // every sample reads from DRAM, like the copy bandwidth it is compared with
  return workbook::measure(work, timing);
}

std::vector<Row> measure_transfers(const std::string& lesson, std::size_t n, int in_arrays, int out_arrays,
                                   const Options& options) {
  const std::size_t bytes_in = static_cast<std::size_t>(in_arrays) * n * sizeof(float);
  const std::size_t bytes_out = static_cast<std::size_t>(out_arrays) * n * sizeof(float);
  workbook::DeviceBuffer<unsigned char> device_in(bytes_in), device_out(bytes_out);
  workbook::PinnedBuffer<unsigned char> pinned_in(bytes_in), pinned_out(bytes_out);
  std::vector<unsigned char> pageable_in(bytes_in, 1), pageable_out(bytes_out, 2);  // touched: pages exist
  std::fill(pinned_in.data(), pinned_in.data() + bytes_in, 1);

  workbook::TimingOptions timing;
  timing.warmup = 1;
  timing.samples = n <= 1000000 ? 10 : 5;
  struct Copy { void* dst; const void* src; std::size_t bytes; cudaMemcpyKind kind; };
  const Copy copies[] = {  // in the order of transfer_operations()
      {device_in.data(), pageable_in.data(), bytes_in, cudaMemcpyHostToDevice},
      {device_in.data(), pinned_in.data(), bytes_in, cudaMemcpyHostToDevice},
      {pageable_out.data(), device_out.data(), bytes_out, cudaMemcpyDeviceToHost},
      {pinned_out.data(), device_out.data(), bytes_out, cudaMemcpyDeviceToHost},
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < transfer_operations().size(); ++i) {
    const Copy& c = copies[i];
    Row row;
    row.lesson = lesson;
    row.implementation = "cudaMemcpy";
    row.operation = transfer_operations()[i];
    if (options.skips(row.operation)) continue;
    row.n = n;
    row.bytes = static_cast<double>(c.bytes);
    announce(row, options);
    row.stats = workbook::time_on_device(
        [&](cudaStream_t s) { WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(c.dst, c.src, c.bytes, c.kind, s)); }, timing);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace bench
