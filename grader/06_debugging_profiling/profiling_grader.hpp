// Lesson 06's grader: what its tests (task1_*_test.cu .. task6_*_test.cu) share: the grid shapes,
// a problem on a grid with its expected output, the checks every task makes and the timed test.
//
// Every function of the lesson maps one grid to another, so one set of checks serves them all
// (a Subject names the function and says how to compute the expected output):
// - a "wrote nothing" probe: one traced call on 17 x 33; an output left as the grader filled it by
//   a call that ran nothing on the GPU ends the test as "wrote nothing", which the driver calls
//   "not implemented yet" only while the task's code is still the skeleton;
// - every grid of grid_shapes() (1 x 1, thin grids in each direction, odd sizes, two drawn from
//   the run's seed and, outside the sanitizer, 4099 x 4097), with fresh seeded inputs and the
//   output poisoned and guarded, each point compared with the float64 reference (on the device;
//   when a point is wrong, again on the host, for the report), and the wrong points listed by
//   (x, y) and counted on the boundary and inside;
// - the input allocated with exactly its points under compute-sanitizer (the grader's guards
//   would hide a read past the end from memcheck), and guarded with NaN outside it;
// - the contract debugging_profiling.hpp states, at every shape (grader::given_stream_contract);
// - the timed call at benchmark.hpp's size, against the copy bandwidth.
#pragma once

#include "debugging_profiling.hpp"

#include "benchmark.hpp"
#include "contract.hpp"
#include "grader.hpp"
#include "output_matcher.hpp"

#include "workbook/workbook.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace profiling_grader {

// An nx-by-ny grid, stored row by row (point (x, y) at y * nx + x).
struct Grid {
  int nx, ny;
  std::size_t points() const { return std::size_t(nx) * std::size_t(ny); }
  std::string str() const { return std::to_string(nx) + " x " + std::to_string(ny); }
};

// The grids every correctness test covers: 1 x 1, thin ones in each direction, sizes one off a
// warp and a 16 x 16 tile, two drawn from the run's seed, and (not under the sanitizer) large ones.
std::vector<Grid> grid_shapes();

// The stream every call is given: non-blocking, so work that strays to the default stream is not
// ordered with it.
cudaStream_t student_stream();

struct Problem;

// One function of the lesson, as the grader calls it: `call` maps the input grid to the output on
// the stream given; `expected` computes the output on the host from the input's values. `transposed`:
// the output is the input's transpose, an ny-by-nx grid.
struct Subject {
  std::string function;  // "heat_step"
  std::function<void(const float* in, float* out, Grid g, cudaStream_t stream)> call;
  std::function<std::vector<double>(const std::vector<float>& in, Grid g)> expected;
  // The same expected output computed on the device from p's seed, compared there with p.out, guards
  // included (grader/support/device_check.cuh): true when all of it is right. check_output asks it
  // first and computes `expected` on the host only when it says no.
  std::function<bool(const Problem& p, workbook::Tolerance tolerance)> agrees_on_device;
  workbook::Tolerance tolerance;
  std::string arguments;  // the scalar arguments, as the call text shows them: ", alpha = 0.2"
  bool transposed = false;
  std::string call_text(Grid g) const;
};

Subject heat_step_subject(const std::string& function,
                          void (*f)(const float*, float*, int, int, float, cudaStream_t));
Subject transpose_subject(const std::string& function, void (*f)(const float*, float*, int, int, cudaStream_t));
Subject field_strength_subject();

// The input (seeded, uniform in [-1, 1]) and the output (poisoned, guarded) on the device.
struct Problem {
  Problem(const Subject& s, Grid g, const std::string& name);
  // The input's values on the host, computed the first time they are asked for.
  const std::vector<float>& input();
  // The seed the input was filled from: element i is workbook::random_uniform(seed(), i, -1, 1).
  std::uint64_t seed() const { return seed_; }
  Grid grid;
  workbook::GuardedDeviceArray in, out;

private:
  std::uint64_t seed_;
  std::vector<float> input_;
};

// Waits for the GPU, then checks p.out against the subject's expected output; FAILs with the
// wrong points by (x, y), how many lie on the boundary, anything written around the output and,
// when the same call run again on the same input gives other values, that fact (results_differ).
void check_output(const Subject& s, Problem& p);

// The probe, then every shape of grid_shapes().
void check_every_shape(const Subject& s);

// What tasks 3 and 4 are, as the header states it: the transpose moves its tiles through shared
// memory. One traced call on 1000 x 1000; FAILs, naming the kernels it ran and their shared
// memory, when none of them has any (a kernel without a tile may be fast or slow: its speed does
// not tell, its launch does).
void check_uses_shared_memory(const Subject& s, int task);

// The contract debugging_profiling.hpp states at every shape, after one untraced call, and the
// result at each shape (a call wrong at a small grid stops there, as in check_every_shape).
void check_contract(const Subject& s);

// The timed call on an n x n grid (benchmark.hpp), checked first; records the figure of merit
// (fraction_of_copy_bandwidth) and what the profiler needs. `before`, when given, is the lesson's
// own version of the function (task 5's, as it gives it): timed as well, and run first inside the
// profiled range, so the counters show it beside the student's. `tile_copy_yardstick` (task 4):
// also records what the grader's copy through 32 x 32 tiles of shared memory, one element a
// thread, reaches on this GPU, the yardstick of task 4's threshold
// (grader_tile_copy_fraction_of_copy_bandwidth).
void measure_bandwidth(const Subject& s, const std::function<void(const float*, float*, Grid, cudaStream_t)>& before = {},
                       bool tile_copy_yardstick = false);

}  // namespace profiling_grader
