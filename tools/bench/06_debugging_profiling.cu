// The sweep of lesson 06: each timed function of the lesson on an n x n grid of floats, its GB/s
// against n, with the device-to-device copy of the same grid as the yardstick (the copy bandwidth
// the grader divides by, measured here at every n). The copy and the kernel as given do not depend
// on the code swept: like lesson 02's transfers, --no-transfers leaves them out, and ./sweep passes
// it to every run after the first, so they appear once in the CSV.
//   transpose_naive, transpose_tiled, transpose_padded   tasks 2-4
//   field_strength                                       task 5
//   field_strength_as_given                              task 5's kernel as the lesson gives it
//                                                        (the grader's copy; implementation "given")
//   heat_step, heat_step_fast                            tasks 1 and 6
//   copy                                                 cudaMemcpyAsync of the grid, device to device
// Every row counts 8 bytes a point (one read, one write: lesson 06's benchmark declaration,
// grader/06_debugging_profiling/benchmark.hpp, which the grader's timed tests use too). Each
// function is checked first, on a 67 x 45 grid against the host's float64 result; one that is
// wrong, not written (an untouched skeleton) or throws is left out with the reason, and the others
// are still swept. Timed with CUDA events, L2 flushed before each sample (bench::time_measurement).
// The functions choose their own launch (grid_mode "own", block and grid empty).
//
// Each function is announced ("# checking OP", "# measuring OP n=N") before it runs. One that
// crashes takes the process with it, so ./sweep names it from the last announcement and runs this
// again with --skip OP.
#include "benchmark.hpp"
#include "debugging_profiling.hpp"
#include "field_strength_as_given.hpp"
#include "sweep.hpp"

#include "workbook/workbook.hpp"

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

const char* const kLesson = "06_debugging_profiling";
constexpr float kAlpha = 0.2f, kSpacing = 0.5f;

// One function of the lesson, as the sweep calls it, and its host reference on a small grid.
struct LessonFunction {
  std::string operation;
  bool given;  // the lesson's own code, the same in every tree: a baseline
  void (*run)(const float* in, float* out, int n_x, int n_y, cudaStream_t stream);
  double (*expected)(const std::vector<float>& in, int nx, int ny, int x, int y);  // out at (x, y) of out's grid
  bool transposed;
};

double heat(const std::vector<float>& u, int nx, int ny, int x, int y) {
  const std::size_t i = std::size_t(y) * nx + x;
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) return u[i];
  return u[i] + double(kAlpha) * (double(u[i - 1]) + u[i + 1] + u[i - nx] + u[i + nx] - 4.0 * u[i]);
}

double field(const std::vector<float>& phi, int nx, int ny, int x, int y) {
  const std::size_t i = std::size_t(y) * nx + x;
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) return 0.0;
  const double ex = (double(phi[i + 1]) - phi[i - 1]) / (2.0 * kSpacing);
  const double ey = (double(phi[i + nx]) - phi[i - nx]) / (2.0 * kSpacing);
  return std::sqrt(ex * ex + ey * ey);
}

double transposed(const std::vector<float>& in, int nx, int, int x, int y) {  // out (x, y) = in (y, x)
  return in[std::size_t(x) * nx + y];
}

std::vector<LessonFunction> lesson_functions() {
  return {
      {"transpose_naive", false, [](const float* i, float* o, int nx, int ny, cudaStream_t s) { transpose_naive(i, o, ny, nx, s); },
       transposed, true},
      {"transpose_tiled", false, [](const float* i, float* o, int nx, int ny, cudaStream_t s) { transpose_tiled(i, o, ny, nx, s); },
       transposed, true},
      {"transpose_padded", false,
       [](const float* i, float* o, int nx, int ny, cudaStream_t s) { transpose_padded(i, o, ny, nx, s); }, transposed,
       true},
      {"field_strength_as_given", true,
       [](const float* i, float* o, int nx, int ny, cudaStream_t s) { field_strength_given(i, o, nx, ny, kSpacing, s); },
       field, false},
      {"field_strength", false,
       [](const float* i, float* o, int nx, int ny, cudaStream_t s) { field_strength(i, o, nx, ny, kSpacing, s); }, field,
       false},
      {"heat_step", false, [](const float* i, float* o, int nx, int ny, cudaStream_t s) { heat_step(i, o, nx, ny, kAlpha, s); },
       heat, false},
      {"heat_step_fast", false,
       [](const float* i, float* o, int nx, int ny, cudaStream_t s) { heat_step_fast(i, o, nx, ny, kAlpha, s); }, heat,
       false},
  };
}

// Whether \p f gives the right output on a 67 x 45 grid (neither side a multiple of a warp or a
// tile); \p why says what was wrong.
bool is_right(const LessonFunction& f, std::string& why) {
  const int nx = 67, ny = 45;
  const std::size_t points = std::size_t(nx) * ny;
  const std::vector<float> in = workbook::random_floats(points, 61);
  workbook::DeviceBuffer<float> d_in(points), d_out(points);
  d_in.copy_from_host(in.data());
  workbook::fill_words_device(d_out.data(), points, workbook::kPoisonBits);
  if (!bench::runs([&] { f.run(d_in.data(), d_out.data(), nx, ny, nullptr); }, why)) return false;
  std::vector<float> out(points);
  d_out.copy_to_host(out.data());
  const int out_nx = f.transposed ? ny : nx, out_ny = f.transposed ? nx : ny;
  std::size_t wrong = 0, unwritten = 0;
  for (int y = 0; y < out_ny; ++y) {
    for (int x = 0; x < out_nx; ++x) {
      const float got = out[std::size_t(y) * out_nx + x];
      const double want = f.expected(in, nx, ny, x, y);
      unwritten += workbook::is_poison(got);
      wrong += !(std::fabs(got - want) <= 1e-5 + 1e-5 * std::fabs(want));
    }
  }
  if (unwritten == points) {
    why = "it wrote nothing (not implemented yet?)";
    return false;
  }
  if (wrong > 0) {
    why = std::to_string(wrong) + " of the " + std::to_string(points) + " points of a 67 x 45 grid are wrong";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Defaults defaults;
  defaults.sizes.assign(std::begin(profiling_benchmark::kSweepSides), std::end(profiling_benchmark::kSweepSides));
  defaults.blocks = {0};
  defaults.grid_modes = {"own"};
  const bench::Options options = bench::parse_options(argc, argv, kLesson, defaults);
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  try {
    std::vector<LessonFunction> functions;
    for (const LessonFunction& f : lesson_functions()) {
      if (options.skips(f.operation) || (f.given && !options.transfers)) continue;
      bench::announce_check(f.operation);
      std::string why;
      if (is_right(f, why)) {
        functions.push_back(f);
      } else {
        std::fprintf(stderr, "%s: %s (%s) left out: %s. ./grade 06 tells what is wrong.\n", argv[0],
                     f.operation.c_str(), options.implementation.c_str(), why.c_str());
      }
    }
    const bool copy = options.transfers && !options.skips("copy");  // the yardstick, once per CSV
    const bench::RunInfo info = bench::run_info();
    bench::begin_output(options.sizes.size() * (functions.size() + (copy ? 1 : 0)), options);
    for (const std::size_t side : options.sizes) {
      const int n = static_cast<int>(side);
      const std::size_t points = std::size_t(side) * side;
      workbook::DeviceBuffer<float> in(points), out(points);
      workbook::fill_random_device(in.data(), points, 7);
      for (const LessonFunction& f : functions) {
        bench::Row row{kLesson, f.given ? "given" : options.implementation, f.operation, side, 0, "own"};
        bench::announce(row, options);  // first: any CUDA call below may be where a crash shows
        row.bytes = profiling_benchmark::bytes(n, n);
        row.stats = bench::time_measurement([&](cudaStream_t s) { f.run(in.data(), out.data(), n, n, s); }, options);
        bench::emit(row, info);
      }
      if (copy) {
        bench::Row row{kLesson, "cudaMemcpy", "copy", side, 0, "own"};
        bench::announce(row, options);
        row.bytes = profiling_benchmark::bytes(n, n);
        row.stats = bench::time_measurement([&](cudaStream_t s) {
          WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(out.data(), in.data(), points * sizeof(float), cudaMemcpyDeviceToDevice, s));
        }, options);
        bench::emit(row, info);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
