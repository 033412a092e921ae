// Lesson 07: Monte Carlo: random numbers with cuRAND, atomics and histograms.
// Read lessons/07_monte_carlo/README.md first.
//
// Fill in the TODOs, one per task of the lesson (task 4 is an optional challenge). Grade your work with
//     ./grade 07
// Untouched, this file compiles and every task is graded "not implemented yet".
#include "monte_carlo.hpp"

#include "workbook/curand_check.hpp"
#include "workbook/workbook.hpp"

void count_inside_circle(std::uint64_t n, std::uint64_t seed, unsigned long long* inside, cudaStream_t stream) {
  // TODO(task 1): draw n points uniformly in the unit square with cuRAND's device API and write to
  // *inside how many fall in the quarter circle x*x + y*y <= 1. One generator state per thread, made
  // from seed and the thread's own subsequence; a grid whose size does not grow with n (each thread
  // draws many points). n can be 0, 1, odd, or far from a multiple of your block size: every point
  // drawn exactly once. The count is an integer: add it up in integers, one atomic per block (or per
  // warp), not one per point. Same n and seed, same count. Work on `stream` only, no waiting, nothing
  // left allocated. Lesson sections: "Random numbers on a GPU", "Atomics", "Task 1".
  (void)n, (void)seed, (void)inside, (void)stream;
}

void histogram(const float* values, std::size_t n, float lo, float hi, unsigned int* counts, int bins,
               cudaStream_t stream) {
  // TODO(task 2): counts[b] = how many values lie in bin b of `bins` equal bins over [lo, hi).
  // Each block counts into its own histogram in shared memory and adds it to counts once at the
  // end. counts must be exact: values below lo or at or above hi (NaN and infinities too) are not
  // counted, whatever the bin index arithmetic would say. counts holds garbage on entry. Work on
  // `stream` only, no waiting. Lesson sections: "Atomics", "Privatised histograms", "Task 2".
  (void)values, (void)n, (void)lo, (void)hi, (void)counts, (void)bins, (void)stream;
}

void thermal_velocities(curandGenerator_t generator, float* v, std::size_t particles, float kT_over_m,
                        cudaStream_t stream) {
  // TODO(task 3): fill v (3 * particles floats) with normal variates of mean 0 and variance
  // kT_over_m, using only cuRAND's host API on the generator you are given: no kernel of your own.
  // The generator's work must go on `stream`. Check every cuRAND status (WORKBOOK_CURAND_CHECK):
  // cuRAND has rules about how many normal values it makes at once, and 3 * particles may be odd.
  // Lesson sections: "cuRAND's host API", "Task 3".
  (void)generator, (void)v, (void)particles, (void)kT_over_m, (void)stream;
}

void walkers_start(Walkers walkers, std::uint64_t seed, cudaStream_t stream) {
  // TODO(task 4): (challenge) every walker at the origin, and its generator state in
  // walkers.states seeded so that the walkers are independent and the same seed gives the same walk.
  // Lesson sections: "Keeping states between calls", "Task 4".
  (void)walkers, (void)seed, (void)stream;
}

void walkers_advance(Walkers walkers, int steps, float sigma, cudaStream_t stream) {
  // TODO(task 4): (challenge) move every walker `steps` steps, each adding an independent
  // normal(0, sigma^2) to x and to y, drawing from the walker's state so that this call continues
  // where the last one stopped. Fast: this call is timed against cuRAND's host API drawing the same
  // numbers into memory and a kernel adding them to the positions. Lesson section: "Task 4".
  (void)walkers, (void)steps, (void)sigma, (void)stream;
}
