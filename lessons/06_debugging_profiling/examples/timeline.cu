// Worked example for lesson 06: a small simulation loop to look at in Nsight Systems.
// Each step advances 2^22 oscillators on the GPU; after each step the host computes their total
// energy from a copy of the state (a diagnostic, as a simulation writes to a log). The loop runs
// twice, each time inside an NVTX range that names it on the timeline:
//   "copy and wait"  cudaMemcpy to pageable memory after each step, then the energy: the host
//                    waits for the GPU, then the GPU waits for the host
//   "overlapped"     the copy into pinned memory on a second stream, after an event; the host
//                    computes the energy of step k while the GPU runs step k + 1 (lesson 05)
// Both print the same energies. Run it under `nsys profile --trace=cuda,nvtx` (lesson 06's README,
// "Nsight Systems"). Lesson 06's README quotes it between the //! [name] markers; ctest runs it
// (exit 0, or 77 without a GPU).
#include "workbook/workbook.hpp"

#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

constexpr int kN = 1 << 22;
constexpr int kSteps = 8;          // diagnostics
constexpr int kInnerSteps = 20000; // time steps between two diagnostics: GPU work of the order of the host's
constexpr float kDt = 0.001f;

float omega_of(int i) { return 1.0f + 0.001f * (i % 1000); }

// kInnerSteps of semi-implicit Euler for each oscillator; the state stays on the GPU.
__global__ void advance(float* x, float* v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float omega = 1.0f + 0.001f * (i % 1000);
  float xi = x[i], vi = v[i];
  for (int s = 0; s < kInnerSteps; ++s) {
    vi -= kDt * omega * omega * xi;
    xi += kDt * vi;
  }
  x[i] = xi;
  v[i] = vi;
}

// The diagnostic, on the host: the total energy of one snapshot (x then v, kN floats each).
double energy(const float* state) {
  double e = 0;
  for (int i = 0; i < kN; ++i) {
    const double w = omega_of(i);
    e += 0.5 * (state[kN + i] * double(state[kN + i]) + w * w * state[i] * double(state[i]));
  }
  return e;
}

void start_state(float* x, float* v, cudaStream_t s) {
  WORKBOOK_CUDA_CHECK(cudaMemsetAsync(v, 0, kN * sizeof(float), s));
  workbook::fill_random_device(x, kN, 7, -1.0f, 1.0f, s);
}

}  // namespace

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("timeline");
  workbook::DeviceBuffer<float> state(2 * std::size_t(kN));  // x, then v
  float* x = state.data();
  float* v = state.data() + kN;
  workbook::Stream compute(cudaStreamNonBlocking), copy(cudaStreamNonBlocking);
  const int blocks = (kN + 255) / 256;
  std::vector<double> first(kSteps), second(kSteps);
  using Clock = std::chrono::steady_clock;

  nvtxRangePushA("copy and wait");
  std::vector<float> pageable(2 * std::size_t(kN));
  start_state(x, v, compute.get());
  const auto t0 = Clock::now();
  //! [copy_and_wait]
  for (int k = 0; k < kSteps; ++k) {
    advance<<<blocks, 256, 0, compute.get()>>>(x, v, kN);
    WORKBOOK_CHECK_LAUNCH();
    compute.synchronize();
    WORKBOOK_CUDA_CHECK(cudaMemcpy(pageable.data(), state.data(), state.bytes(), cudaMemcpyDeviceToHost));
    nvtxRangePushA("energy on the host");
    first[k] = energy(pageable.data());
    nvtxRangePop();
  }
  //! [copy_and_wait]
  const double wait_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  nvtxRangePop();

  nvtxRangePushA("overlapped");
  workbook::PinnedBuffer<float> snapshot[2] = {workbook::PinnedBuffer<float>(2 * std::size_t(kN)),
                                               workbook::PinnedBuffer<float>(2 * std::size_t(kN))};
  workbook::Event stepped(cudaEventDisableTiming), copied[2] = {workbook::Event(cudaEventDisableTiming),
                                                                workbook::Event(cudaEventDisableTiming)};
  start_state(x, v, compute.get());
  const auto t1 = Clock::now();
  for (int k = 0; k <= kSteps; ++k) {
    if (k < kSteps) {  // queue step k and the copy of its snapshot; the host does not wait
      advance<<<blocks, 256, 0, compute.get()>>>(x, v, kN);
      WORKBOOK_CHECK_LAUNCH();
      stepped.record(compute.get());
      WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(copy.get(), stepped.get(), 0));
      WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(snapshot[k % 2].data(), state.data(), state.bytes(),
                                          cudaMemcpyDeviceToHost, copy.get()));
      copied[k % 2].record(copy.get());
      // Step k + 1 overwrites the state: it must wait until the copy has read it.
      WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(compute.get(), copied[k % 2].get(), 0));
    }
    if (k > 0) {  // meanwhile, the energy of step k - 1
      copied[(k - 1) % 2].synchronize();
      nvtxRangePushA("energy on the host");
      second[k - 1] = energy(snapshot[(k - 1) % 2].data());
      nvtxRangePop();
    }
  }
  const double overlap_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  nvtxRangePop();

  int differ = 0;
  for (int k = 0; k < kSteps; ++k) {
    std::printf("step %d: energy %.6f, %.6f\n", k, first[k], second[k]);
    differ += first[k] != second[k];
  }
  std::printf("%d steps of %d oscillators: copy and wait %.1f ms, overlapped %.1f ms (host clock)\n", kSteps, kN,
              wait_ms, overlap_ms);
  return differ == 0 ? 0 : 1;
}
