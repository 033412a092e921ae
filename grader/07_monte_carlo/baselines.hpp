// Lesson 07's inputs and yardsticks, shared by the grader's tests and the lesson's sweep
// (benchmark.hpp says which figure each yardstick stands beside):
// - the histogram's input, energies drawn from the Boltzmann distribution, and its counts on the
//   host;
// - a histogram with one global atomic per value;
// - pi through cuRAND's host API: 2n uniforms drawn into memory, then counted by a kernel;
// - the walkers' normals through cuRAND's host API.
#pragma once

#include <cuda_runtime.h>
#include <curand.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace monte_carlo_baselines {

// n energies (in units of kT) drawn from exp(-E): a seeded, host-side stream, none of them within a
// thousandth of a bin's width of an inner edge of `bins` bins over [lo, hi). With `edges`, the
// values that test the edges replace a few of them at seeded places: lo, just below lo (by a
// float's step and by 0.3 of a bin), just inside hi, hi, just above hi, NaN, +inf and -inf.
std::vector<float> energies(std::size_t n, std::uint64_t seed, float lo, float hi, int bins, bool edges);

// The histogram the header defines, counted on the host in double precision.
std::vector<unsigned int> histogram_on_host(const std::vector<float>& values, float lo, float hi, int bins);

// How many of `values` lie in (lo - width, lo), at or above hi, or are not numbers: the values a
// histogram's edge handling decides about, for the facts of a wrong verdict.
struct EdgeFacts {
  std::size_t just_below_lo = 0, at_or_above_hi = 0, not_finite = 0, below_lo = 0;
  std::size_t nan = 0;          // of not_finite
  std::size_t just_below_hi = 0;  // in [hi - width / 1000, hi): a float index may round up to bins
};
EdgeFacts edge_facts(const std::vector<float>& values, float lo, float hi, int bins);

// counts = the histogram, with one atomicAdd on global memory per value counted (counts zeroed on
// the stream first).
void global_atomics_histogram(const float* values, std::size_t n, float lo, float hi, unsigned int* counts, int bins,
                              cudaStream_t stream);

// pi the way a program that does not fuse drawing and counting computes it: cuRAND's host API
// (Philox, the fastest of its generators) draws 2n uniforms into memory, a kernel counts the points
// inside the quarter circle. Holds the memory and the generator.
class HostApiPi {
public:
  explicit HostApiPi(std::uint64_t n);
  ~HostApiPi();
  HostApiPi(const HostApiPi&) = delete;
  HostApiPi& operator=(const HostApiPi&) = delete;
  void run(unsigned long long* inside, cudaStream_t stream);
private:
  std::uint64_t n_;
  float* uniforms_ = nullptr;
  curandGenerator_t generator_ = nullptr;
};

// The walk the way a program that does not fuse drawing and walking takes it: cuRAND's host API
// (Philox) draws the 2 * walkers * steps normals into memory, a kernel adds them to the walkers'
// positions, each walker's steps in order. Holds the memory, the positions and the generator.
class HostApiWalk {
public:
  HostApiWalk(int walkers, int steps);
  ~HostApiWalk();
  HostApiWalk(const HostApiWalk&) = delete;
  HostApiWalk& operator=(const HostApiWalk&) = delete;
  void run(float sigma, cudaStream_t stream);
private:
  int walkers_, steps_;
  std::size_t count_;  // normals drawn: 2 * walkers * steps, rounded up to even (the host API's pairs)
  float* normals_ = nullptr;
  float* positions_ = nullptr;  // x of every walker, then y
  curandGenerator_t generator_ = nullptr;
};

}  // namespace monte_carlo_baselines
