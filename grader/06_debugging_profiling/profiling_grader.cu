// Lesson 06's grader: the checks its tests share (profiling_grader.hpp).
#include "profiling_grader.hpp"

#include "device_check.cuh"
#include "diagnosis.hpp"  // nothing_written, untouched_output
#include "tracer.hpp"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstring>
#include <sstream>

namespace profiling_grader {

namespace {

constexpr float kAlpha = 0.2f;  // heat_step's alpha in every call: stable (<= 0.25), and not a power of two
constexpr float kSpacing = 0.5f;  // field_strength's h

// Where point i of an nx-wide grid lies, and whether it is on the boundary.
std::string point_text(std::size_t i, int nx) {
  return "(x = " + std::to_string(i % std::size_t(nx)) + ", y = " + std::to_string(i / std::size_t(nx)) + ")";
}

bool on_boundary(std::size_t i, Grid g) {
  const std::size_t x = i % std::size_t(g.nx), y = i / std::size_t(g.nx);
  return x == 0 || y == 0 || x + 1 == std::size_t(g.nx) || y + 1 == std::size_t(g.ny);
}

std::vector<double> heat_reference(const std::vector<float>& u, Grid g, double alpha) {
  std::vector<double> out(u.begin(), u.end());
  for (int y = 1; y + 1 < g.ny; ++y) {
    for (int x = 1; x + 1 < g.nx; ++x) {
      const std::size_t i = std::size_t(y) * g.nx + x;
      out[i] = double(u[i]) + alpha * (double(u[i - 1]) + u[i + 1] + u[i - g.nx] + u[i + g.nx] - 4.0 * u[i]);
    }
  }
  return out;
}

std::vector<double> transpose_reference(const std::vector<float>& in, Grid g) {  // g: rows = ny, cols = nx
  std::vector<double> out(in.size());
  for (int r = 0; r < g.ny; ++r) {
    for (int c = 0; c < g.nx; ++c) out[std::size_t(c) * g.ny + r] = in[std::size_t(r) * g.nx + c];
  }
  return out;
}

std::vector<double> field_reference(const std::vector<float>& phi, Grid g, double h) {
  std::vector<double> e(phi.size(), 0.0);
  for (int y = 1; y + 1 < g.ny; ++y) {
    for (int x = 1; x + 1 < g.nx; ++x) {
      const std::size_t i = std::size_t(y) * g.nx + x;
      const double ex = (double(phi[i + 1]) - phi[i - 1]) / (2 * h), ey = (double(phi[i + g.nx]) - phi[i - g.nx]) / (2 * h);
      e[i] = std::sqrt(ex * ex + ey * ey);
    }
  }
  return e;
}

// The references above on the device, point by point (device_check.cuh), for the fast path of
// check_output: the input's values from its seed (never from device memory, which the student's
// call could have written), the same float64 formulas, each multiply and add rounded on its own
// as the host rounds them (__dmul_rn, __dadd_rn: no fused multiply-add).
struct SeededInput {
  std::uint64_t seed;
  __device__ double operator()(std::size_t i) const { return workbook::random_uniform(seed, i, -1, 1); }
};

__device__ bool on_edge(std::size_t x, std::size_t y, int nx, int ny) {
  return x == 0 || y == 0 || x + 1 == std::size_t(nx) || y + 1 == std::size_t(ny);
}

struct HeatStepAt {
  SeededInput u;
  int nx, ny;
  double alpha;
  __device__ double operator()(std::size_t i) const {
    if (on_edge(i % std::size_t(nx), i / std::size_t(nx), nx, ny)) return u(i);
    const double around = u(i - 1) + u(i + 1) + u(i - nx) + u(i + nx) - 4.0 * u(i);  // adds, and an exact product
    return __dadd_rn(u(i), __dmul_rn(alpha, around));
  }
};

struct TransposeAt {  // out[c * rows + r] = in[r * cols + c]
  SeededInput in;
  int rows, cols;
  __device__ double operator()(std::size_t i) const {
    const std::size_t c = i / std::size_t(rows), r = i % std::size_t(rows);
    return in(r * std::size_t(cols) + c);
  }
};

struct FieldStrengthAt {
  SeededInput phi;
  int nx, ny;
  double h;
  __device__ double operator()(std::size_t i) const {
    if (on_edge(i % std::size_t(nx), i / std::size_t(nx), nx, ny)) return 0.0;
    const double ex = (phi(i + 1) - phi(i - 1)) / (2 * h), ey = (phi(i + nx) - phi(i - nx)) / (2 * h);
    return sqrt(__dadd_rn(__dmul_rn(ex, ex), __dmul_rn(ey, ey)));
  }
};

std::string float_text(float v) { return workbook::format_value(v); }

// The yardstick of task 4's threshold: a rows x cols grid copied through 32 x 32 tiles of shared
// memory, 32 x 32 threads, one element a thread. It moves memory as the plain student's padded
// transpose does (one coalesced load and one coalesced store a thread, a barrier between, no bank
// conflicts) without being a transpose: the grader ships with the exercises, so it must not hold
// a task's answer (as lesson 03's naive yardstick computes C = A^T B). What it reaches depends on
// the GPU: a thread's one load keeps too few bytes in flight for the fastest memories (the plain
// padded transpose 0.42 of the copy bandwidth on an H200, 0.55 on an H100; the reference's four
// rows a thread 0.78 and 0.90), so task 4's threshold follows it (grader/README.md, "Thresholds
// on the students' GPUs").
__global__ void tile_copy(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[32][32];
  const int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
  const bool inside = r < rows && c < cols;
  if (inside) tile[threadIdx.y][threadIdx.x] = in[std::size_t(r) * cols + c];
  __syncthreads();
  if (inside) out[std::size_t(r) * cols + c] = tile[threadIdx.y][threadIdx.x];
}

}  // namespace

std::vector<Grid> grid_shapes() {
  if (grader::pass_check_mode()) {
    // The check of a pass: a subset of the sanitizer mode's grids below (./grade --sanitize runs
    // them all): one point; one tile and ragged tiles; long thin grids, three rows or columns wide;
    // and 129 x 257, whose blocks (tiles of 16 x 16 or 32 x 32, or 128 threads wide) include whole
    // interior ones with a halo on every side beside ragged ones: a tiled kernel's edge and interior
    // paths differ. Not the random grids of up to 300 x 300, which cost racecheck more than the
    // rest together.
    return {{1, 1}, {16, 16}, {17, 16}, {33, 31}, {1000, 3}, {3, 1000}, {129, 257}};
  }
  std::vector<Grid> shapes{{1, 1},   {2, 1},  {1, 2},   {3, 3},   {16, 16},  {17, 16}, {16, 17},
                           {33, 31}, {31, 33}, {1, 300}, {300, 1}, {1000, 3}, {3, 1000}, {129, 257}};
  const std::uint64_t s = grader::seed_for("grids");
  const auto draw = [&](int i, int range) { return 1 + int(workbook::mix64(s + i) % range); };
  shapes.push_back({draw(0, 300), draw(1, 300)});
  shapes.push_back({draw(2, 300), draw(3, 300)});
  if (grader::sanitize_mode()) return shapes;
  shapes.push_back({1, 40000});
  shapes.push_back({40000, 1});
  shapes.push_back({1023, 1025});
  shapes.push_back({draw(4, 3000), draw(5, 3000)});
  shapes.push_back({4099, 4097});
  return shapes;
}

cudaStream_t student_stream() {
  static workbook::Stream stream(cudaStreamNonBlocking);
  return stream.get();
}

std::string Subject::call_text(Grid g) const {
  if (transposed) return function + "(in, out, rows = " + std::to_string(g.ny) + ", cols = " + std::to_string(g.nx) + ", stream)";
  return function + "(in, out, nx = " + std::to_string(g.nx) + ", ny = " + std::to_string(g.ny) + arguments + ", stream)";
}

Subject heat_step_subject(const std::string& function, void (*f)(const float*, float*, int, int, float, cudaStream_t)) {
  Subject s;
  s.function = function;
  s.call = [f](const float* in, float* out, Grid g, cudaStream_t st) { f(in, out, g.nx, g.ny, kAlpha, st); };
  s.expected = [](const std::vector<float>& in, Grid g) { return heat_reference(in, g, kAlpha); };
  s.agrees_on_device = [](const Problem& p, workbook::Tolerance tolerance) {
    return grader::agrees_on_device(p.out, tolerance, HeatStepAt{{p.seed()}, p.grid.nx, p.grid.ny, kAlpha});
  };
  // |u| <= 1: each term under 8 in size, so a few float roundings in any order stay under 1e-5.
  s.tolerance = {1e-5, 1e-5};
  s.arguments = ", alpha = 0.2";
  return s;
}

Subject transpose_subject(const std::string& function, void (*f)(const float*, float*, int, int, cudaStream_t)) {
  Subject s;
  s.function = function;
  s.call = [f](const float* in, float* out, Grid g, cudaStream_t st) { f(in, out, g.ny, g.nx, st); };
  s.expected = transpose_reference;
  s.tolerance = {0.0, 0.0};  // a copy: bit for bit
  s.agrees_on_device = [](const Problem& p, workbook::Tolerance tolerance) {
    return grader::agrees_on_device(p.out, tolerance, TransposeAt{{p.seed()}, p.grid.ny, p.grid.nx});
  };
  s.transposed = true;
  return s;
}

Subject field_strength_subject() {
  Subject s;
  s.function = "field_strength";
  s.call = [](const float* in, float* out, Grid g, cudaStream_t st) { field_strength(in, out, g.nx, g.ny, kSpacing, st); };
  s.expected = [](const std::vector<float>& in, Grid g) { return field_reference(in, g, kSpacing); };
  s.agrees_on_device = [](const Problem& p, workbook::Tolerance tolerance) {
    return grader::agrees_on_device(p.out, tolerance, FieldStrengthAt{{p.seed()}, p.grid.nx, p.grid.ny, kSpacing});
  };
  // A difference of two floats in [-1, 1] is off by at most 2^-23 in float, 1e-6 after the / 2h.
  s.tolerance = {1e-5, 1e-5};
  s.arguments = ", h = 0.5";
  return s;
}

Problem::Problem(const Subject& s, Grid g, const std::string& name)
    : grid(g),
      // NaN guards, whose value spoils a result that reads them; under compute-sanitizer none
      // (workbook::default_guard_elements): a read past either end is outside the allocation,
      // where memcheck sees it.
      in(g.points(), workbook::kInputGuardBits),
      out(g.points()),
      seed_(grader::seed_for(s.function + " " + name + " " + g.str())) {
  in.fill_random(seed_);
}

const std::vector<float>& Problem::input() {
  if (input_.size() != grid.points()) {
    input_.resize(grid.points());
    for (std::size_t i = 0; i < input_.size(); ++i) input_[i] = workbook::random_uniform(seed_, i, -1, 1);
  }
  return input_;
}

void check_output(const Subject& s, Problem& p) {
  const Grid g = p.grid;
  grader::synchronize(s.call_text(g));
  if (s.agrees_on_device && s.agrees_on_device(p, s.tolerance)) return;
  const grader::DeviceOutput out = grader::read_back(p.out);
  const std::vector<double> expected64 = s.expected(p.input(), g);
  const std::vector<float> expected(expected64.begin(), expected64.end());
  const auto comparison = workbook::compare_to_reference(out.values.data(), expected.data(), expected.size(), s.tolerance);
  if (comparison.ok() && out.guards.intact()) return;
  const Grid shown = s.transposed ? Grid{g.ny, g.nx} : g;  // the output's own grid
  std::ostringstream facts;
  facts << s.call_text(g) << " gave a wrong result";
  if (!comparison.ok()) {
    std::size_t boundary = 0;
    for (std::size_t i = 0; i < out.values.size(); ++i) {
      const double tol = s.tolerance.abs + s.tolerance.rel * std::fabs(expected[i]);
      const bool wrong = workbook::is_poison(out.values[i]) || !(std::fabs(double(out.values[i]) - expected[i]) <= tol);
      boundary += wrong && on_boundary(i, shown);
    }
    facts << ": " << comparison.wrong << " of its " << out.values.size() << " points are wrong, " << boundary
          << " of them on the grid's boundary and " << comparison.wrong - boundary << " inside";
    if (comparison.unwritten > 0) facts << " (" << comparison.unwritten << " never written)";
    facts << ". The first few, at (x, y) of " << (s.transposed ? "out (cols x rows)" : "the grid") << ":";
    for (const auto& m : comparison.first_mismatches) {
      facts << "\n  " << point_text(m.index, shown.nx) << ": expected " << float_text(float(m.expected)) << ", got "
            << workbook::format_value(m.got, m.unwritten);
    }
  } else {
    facts << ":";
  }
  if (!out.guards.intact()) facts << "\n" << out.guards.describe(out.values.size());
  // The same call again on the same input, twice, with the output poisoned again and shared memory
  // filled with other values first: results that change from run to run are a fact the driver
  // follows up (a race, or shared memory read before any thread wrote it; grader/driver/races.py
  // runs racecheck and names a race only when racecheck reports one).
  if (!comparison.ok()) {
    std::size_t differ = 0;
    for (int again = 0; again < 2 && differ == 0; ++again) {
      p.out.poison();
      grader::fill_shared_memory(0.5f * float(again + 1));
      s.call(p.in.data(), p.out.data(), g, student_stream());
      grader::synchronize(s.call_text(g) + ", run again on the same input");
      const std::vector<float> rerun = p.out.download();
      for (std::size_t i = 0; i < rerun.size(); ++i) {
        differ += std::memcmp(&rerun[i], &out.values[i], sizeof(float)) != 0;
      }
    }
    if (differ > 0) {
      facts << "\n" << grader::results_differ("the same input gave different results in two runs (" +
                                                 std::to_string(differ) + " points differ between them).");
    }
  }
  FAIL(facts.str());
}

void check_every_shape(const Subject& s) {
  {
    const Grid probe{17, 33};
    Problem p(s, probe, "probe");
    const auto trace = grader::trace([&] {
      s.call(p.in.data(), p.out.data(), probe, student_stream());
      grader::synchronize(s.call_text(probe));  // inside: a call that never ends is reported as such
    });
    const grader::DeviceOutput out = grader::read_back(p.out);
    const std::vector<float> none(out.values.size(), 0.0f);
    const auto comparison = workbook::compare_to_reference(out.values.data(), none.data(), none.size(), {0, 0});
    const bool gpu_work = trace && (!trace->kernels.empty() || !trace->copies.empty() || !trace->memsets.empty());
    if (grader::nothing_written(comparison, out.guards) && !gpu_work) {
      grader::wrote_nothing(s.call_text(probe) + " returned and wrote nothing: " +
                                grader::untouched_output("out", probe.points()) + "; it ran nothing on the GPU",
                            trace);
    }
  }
  for (const Grid g : grid_shapes()) {
    CAPTURE(g.str());
    Problem p(s, g, "shape");
    s.call(p.in.data(), p.out.data(), g, student_stream());
    check_output(s, p);
  }
}

void check_uses_shared_memory(const Subject& s, int task) {
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const Grid g{1000, 1000};
  Problem p(s, g, "tile");
  const auto trace = grader::trace([&] {
    s.call(p.in.data(), p.out.data(), g, student_stream());
    grader::synchronize(s.call_text(g));
  });
  if (!trace) SKIP("the tracer could not start (CUPTI), so the kernels' shared memory is unknown");
  std::string ran;
  for (const grader::TracedKernel& k : trace->kernels) {
    if (k.shared_bytes > 0) return;
    ran += "\n  " + grader::launch_text(k) + ": no shared memory";
  }
  FAIL(s.call_text(g) << " transposed without a tile in shared memory: none of its kernels has any shared memory"
                      << (ran.empty() ? std::string(" (it launched no kernel)") : ":" + ran)
                      << "\nTask " << task << " moves each tile of in through shared memory, so that both the reads "
                      << "and the writes of global memory are coalesced (debugging_profiling.hpp; lesson section "
                      << "'Task " << task << "').");
}

void check_contract(const Subject& s) {
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  const grader::Contract contract = grader::given_stream_contract(s.function);
  for (const Grid g : grid_shapes()) {
    CAPTURE(g.str());
    Problem p(s, g, "contract");
    grader::require_contract_kept(contract, {s.call_text(g), {student_stream()}, {}, {{"points", double(g.points())}}},
                                  [&] { s.call(p.in.data(), p.out.data(), g, student_stream()); });
    // Its result too, so that a call wrong at a small grid stops here as it does in the test of
    // every grid: run on, a far write past the output at the large grids either crashes or lands
    // unseen, as the memory layout has it, and the verdict would follow the layout.
    check_output(s, p);
  }
}

void measure_bandwidth(const Subject& s, const std::function<void(const float*, float*, Grid, cudaStream_t)>& before,
                       bool tile_copy_yardstick) {
  const int n = profiling_benchmark::kGradedN;
  const Grid g{n, n};
  CAPTURE(g.str());
  Problem p(s, g, "timed");
  s.call(p.in.data(), p.out.data(), g, student_stream());
  check_output(s, p);  // a wrong result is not timed
  const double bytes = profiling_benchmark::bytes(n, n);
  const double copy_gbps = workbook::copy_bandwidth_gbps_for_run();
  if (before) {
    // The lesson's version first, inside the profiled range, so the counters show it beside the
    // student's; timed as well, as the figure the student started from.
    workbook::run_profiled([&](cudaStream_t st) { before(p.in.data(), p.out.data(), g, st); }, student_stream());
    workbook::MeasureOptions timing = profiling_benchmark::graded_timing();
    timing.stream = student_stream();
    const auto given = workbook::measure([&](cudaStream_t st) { before(p.in.data(), p.out.data(), g, st); }, timing);
    grader::record_metric("given_fraction_of_copy_bandwidth", workbook::gigabytes_per_second(bytes, given.median_ms) / copy_gbps);
  }
  workbook::MeasureOptions timing = profiling_benchmark::graded_timing();
  timing.stream = student_stream();
  timing.profiled = true;  // the student's code: what a profiling run profiles
  const auto stats = workbook::measure([&](cudaStream_t st) { s.call(p.in.data(), p.out.data(), g, st); }, timing);
  const double gbps = workbook::gigabytes_per_second(bytes, stats.median_ms);
  grader::record_metric("profiled_bytes", bytes);  // what the profiled call moves
  grader::record_metric("n", double(n));
  grader::record_metric("median_ms", stats.median_ms);
  grader::record_metric("gbps", gbps);
  grader::record_metric("copy_bandwidth_gbps", copy_gbps);
  grader::record_metric("fraction_of_copy_bandwidth", gbps / copy_gbps);
  if (tile_copy_yardstick) {
    // The reference's figure when ./grade gives it (grader::yardstick), else timed here, after the
    // student's call (whose output it overwrites), never profiled.
    const double tile_copy_gbps = grader::yardstick("grader_tile_copy_gbps", [&] {
      workbook::MeasureOptions yardstick_timing = profiling_benchmark::graded_timing();
      yardstick_timing.stream = student_stream();
      const dim3 block(32, 32), grid((unsigned(n) + 31) / 32, (unsigned(n) + 31) / 32);
      const auto copied = workbook::measure([&](cudaStream_t st) {
        tile_copy<<<grid, block, 0, st>>>(p.in.data(), p.out.data(), g.ny, g.nx);
        WORKBOOK_CHECK_LAUNCH();
      }, yardstick_timing);
      return workbook::gigabytes_per_second(bytes, copied.median_ms);
    });
    grader::record_metric("grader_tile_copy_fraction_of_copy_bandwidth", tile_copy_gbps / copy_gbps);
  }
}

}  // namespace profiling_grader
