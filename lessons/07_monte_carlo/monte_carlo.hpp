/// \file
/// Lesson 07's interface: the functions you write in exercises/07_monte_carlo/monte_carlo.cu.
/// The grader calls exactly these, so keep their names and parameters as they are.
///
/// Every function here shares one contract: its arrays are device arrays that do not overlap;
/// everything runs on \p stream (cuRAND's host API included: its generator's work too), nothing on
/// the default stream; it returns without waiting for the GPU (the caller waits when it needs the
/// result); it copies nothing to or from the host and leaves nothing allocated.
///
/// Random numbers: the grader chooses every seed, and checks results statistically (grader/README.md,
/// "Statistical checks", gives the tests and how rarely a correct program fails them). The same
/// seed must give the same result, bit for bit; different seeds must give independent results.
#pragma once

#include <cuda_runtime.h>
#include <curand.h>
#include <curand_kernel.h>

#include <cstddef>
#include <cstdint>

/// Task 1: pi by Monte Carlo, with cuRAND's device API. Draws \p n points (x, y) uniformly in the
/// unit square and writes how many of them lie inside the quarter circle x*x + y*y <= 1 to
/// \p *inside, a single device counter (so pi is about 4 * inside / n). Every point is drawn once,
/// from generator states seeded with \p seed: the same n and seed give the same count; points of
/// different threads, and of different seeds, are independent. The count is exact (an integer,
/// whatever the order the GPU adds it in). 0 <= n <= 2^40.
void count_inside_circle(std::uint64_t n, std::uint64_t seed, unsigned long long* inside, cudaStream_t stream);

/// Task 2: a histogram of \p n values (particle energies, say), privatised in shared memory.
/// \p bins equal bins span [lo, hi): bin b counts the values v with
/// lo + b * (hi - lo) / bins <= v < lo + (b + 1) * (hi - lo) / bins. Values outside [lo, hi) (NaN
/// and infinities too) are not counted. \p counts (bins entries) is overwritten: afterwards it
/// holds exactly the counts. 1 <= bins <= 4096, lo < hi, 0 <= n < 2^32. The grader's values never
/// lie within a thousandth of a bin's width of an inner bin edge, so any rounding of the bin index
/// a float computation makes is fine there; the edges lo and hi themselves, and values just inside
/// and just outside them, are in the input.
void histogram(const float* values, std::size_t n, float lo, float hi, unsigned int* counts, int bins,
               cudaStream_t stream);

/// Task 3: "use the library". Fills \p v with the velocity components of \p particles particles
/// of a gas in thermal equilibrium: 3 * particles values (vx, vy, vz of particle 0, then particle 1,
/// ...), each drawn from a normal distribution with mean 0 and variance \p kT_over_m, through
/// cuRAND's host API with \p generator (made and seeded by the caller, who destroys it). No kernel
/// of your own: cuRAND's generator does the work. Successive calls continue the generator's
/// sequence, so they give new values. particles >= 0; v has room for exactly 3 * particles floats.
void thermal_velocities(curandGenerator_t generator, float* v, std::size_t particles, float kT_over_m,
                        cudaStream_t stream);

/// Task 4 (challenge, optional): an ensemble of random walkers in two dimensions. Each walker has
/// its position (x[i], y[i]) and its own generator state, kept in device memory between calls.
struct Walkers {
  float* x;                               ///< count positions along x
  float* y;                               ///< count positions along y
  curandStatePhilox4_32_10_t* states;     ///< count generator states, one per walker
  int count;                              ///< 1 <= count <= 2^24
};

/// Task 4: every walker at the origin (x = y = 0), its state seeded from \p seed so that walkers
/// are independent of each other. Called once per ensemble; the same seed gives the same walk.
void walkers_start(Walkers walkers, std::uint64_t seed, cudaStream_t stream);

/// Task 4: moves every walker \p steps steps (steps >= 0). In each step x and y each change by an
/// independent normal variate of mean 0 and standard deviation \p sigma, so after t steps in all
/// (over any number of calls) the mean squared displacement <x^2 + y^2> is 2 sigma^2 t: the draws
/// of a call continue where the last call left each walker's state. Timed against generating the
/// same normals with cuRAND's host API.
void walkers_advance(Walkers walkers, int steps, float sigma, cudaStream_t stream);
