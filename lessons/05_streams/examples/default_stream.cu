// Worked example for lesson 05: who waits for whom. Two kernels on two streams with a launch on
// the legacy default stream queued between them: on blocking streams (cudaStreamDefault) the
// legacy launch waits for the first kernel and the second kernel waits for it, so the two run
// one after the other; on non-blocking streams they overlap. Then one event that two streams
// wait for (a fan-out: work both need, then work on each); events on the legacy stream around
// work on non-blocking streams (they time almost nothing) against events ordered with the
// work's own streams; and what cudaDeviceSynchronize and a wait after every launch cost.
// The kernels only sleep, on one thread each, so their durations are known and no two of them
// compete for the GPU. Lesson 05's README quotes it between the //! [name] markers; ctest
// runs it.
#include "workbook/workbook.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

// Sleeps for `ns` nanoseconds of the GPU's global timer, then counts itself in *finished.
__global__ void sleep_kernel(unsigned long long ns, int* finished) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
  atomicAdd(finished, 1);
}

__global__ void empty_kernel() {}

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kSleepMs = 20;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

int* g_finished = nullptr;  // device counter of finished sleep kernels
int g_launched = 0;         // how many were launched

void sleep_on(cudaStream_t s, double ms) {
  sleep_kernel<<<1, 1, 0, s>>>(static_cast<unsigned long long>(ms * 1e6), g_finished);
  WORKBOOK_CHECK_LAUNCH();
  ++g_launched;
}

// Two sleeps on streams created with `flags`, optionally with an empty launch on the legacy
// default stream queued between them: host time until all three are done.
double two_sleeps_ms(unsigned flags, bool legacy_between) {
  workbook::Stream a(flags), b(flags);
  const auto t0 = Clock::now();
  sleep_on(a.get(), kSleepMs);
  if (legacy_between) {
    //! [legacy_launch]
    empty_kernel<<<1, 1>>>();  // no stream named: the legacy default stream
    //! [legacy_launch]
    WORKBOOK_CHECK_LAUNCH();
  }
  sleep_on(b.get(), kSleepMs);
  a.synchronize();
  b.synchronize();
  WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return ms_since(t0);
}

const char* verdict(double ms) { return ms < 1.5 * kSleepMs ? "they overlapped" : "one after the other"; }

}  // namespace

int main(int, char** argv) {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  workbook::DeviceBuffer<int> finished(1);
  // The memset goes to the legacy default stream, which the non-blocking streams below do not
  // wait for: wait for it here.
  WORKBOOK_CUDA_CHECK(cudaMemset(finished.data(), 0, sizeof(int)));
  WORKBOOK_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  g_finished = finished.data();
  bool ok = true;
  two_sleeps_ms(cudaStreamNonBlocking, false);  // warm-up: module load, first launches

  std::printf("%s: two %.0f ms kernels on streams a and b, host time until both are done\n",
              workbook::query_device().name.c_str(), kSleepMs);
  const double blocking = two_sleeps_ms(cudaStreamDefault, false);
  const double blocking_legacy = two_sleeps_ms(cudaStreamDefault, true);
  const double non_blocking_legacy = two_sleeps_ms(cudaStreamNonBlocking, true);
  std::printf("  blocking streams:                                %6.2f ms, %s\n", blocking, verdict(blocking));
  std::printf("  blocking streams, a legacy launch between:       %6.2f ms, %s\n", blocking_legacy,
              verdict(blocking_legacy));
  std::printf("  non-blocking streams, a legacy launch between:   %6.2f ms, %s\n", non_blocking_legacy,
              verdict(non_blocking_legacy));
  ok = ok && blocking_legacy >= 1.9 * kSleepMs;  // the legacy stream's rule guarantees it

  workbook::Stream a(cudaStreamNonBlocking), b(cudaStreamNonBlocking), upload(cudaStreamNonBlocking);

  // A fan-out: 20 ms on `upload` that a and b both need (a stand-in for copying their input in),
  // then 20 ms on each. With the waits, a and b start once `upload` is done: about 40 ms in all.
  auto t_fan = Clock::now();
  //! [fan_out]
  sleep_on(upload.get(), kSleepMs);  // the work both streams need
  cudaEvent_t uploaded;
  WORKBOOK_CUDA_CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));  // for ordering only
  WORKBOOK_CUDA_CHECK(cudaEventRecord(uploaded, upload.get()));  // completes when the work before it has
  WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(a.get(), uploaded, 0));  // a's later work waits, on the GPU
  WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(b.get(), uploaded, 0));  // so does b's; the host waits for nothing
  WORKBOOK_CUDA_CHECK(cudaEventDestroy(uploaded));  // allowed: the queued waits keep what they need
  sleep_on(a.get(), kSleepMs);
  sleep_on(b.get(), kSleepMs);
  //! [fan_out]
  a.synchronize();
  b.synchronize();
  const double fan_out_ms = ms_since(t_fan);
  // The same three sleeps without the event: nothing orders a and b after `upload`.
  t_fan = Clock::now();
  sleep_on(upload.get(), kSleepMs);
  sleep_on(a.get(), kSleepMs);
  sleep_on(b.get(), kSleepMs);
  upload.synchronize();
  a.synchronize();
  b.synchronize();
  const double unordered_ms = ms_since(t_fan);
  std::printf("20 ms on `upload`, then 20 ms on each of a and b\n");
  std::printf("  a and b wait for an event recorded on `upload`: %6.2f ms\n", fan_out_ms);
  std::printf("  no event:                                       %6.2f ms, %s\n", unordered_ms,
              verdict(unordered_ms));
  ok = ok && fan_out_ms >= 1.9 * kSleepMs;  // the waits guarantee it

  workbook::Event start, stop;
  //! [legacy_events]
  // Wrong: the events go to the legacy default stream, the work to non-blocking streams.
  // Nothing orders the events after the work: they time how long the host took to queue it.
  start.record(nullptr);
  sleep_on(a.get(), kSleepMs);
  sleep_on(b.get(), kSleepMs);
  stop.record(nullptr);
  stop.synchronize();
  //! [legacy_events]
  const double legacy_events_ms = workbook::elapsed_ms(start, stop);
  const bool busy_after_stop = cudaStreamQuery(a.get()) == cudaErrorNotReady;
  a.synchronize();
  b.synchronize();

  workbook::Event stop_a, stop_b;
  //! [fork_stops]
  // Right: start on a, and b waits for it, so the work of both streams comes after start. Each
  // stream records a stop after its work; the later of the two is the end of it all.
  start.record(a.get());
  WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(b.get(), start.get(), 0));
  sleep_on(a.get(), kSleepMs);
  sleep_on(b.get(), kSleepMs);
  stop_a.record(a.get());
  stop_b.record(b.get());
  stop_a.synchronize();
  stop_b.synchronize();
  const float both_ms = std::max(workbook::elapsed_ms(start, stop_a), workbook::elapsed_ms(start, stop_b));
  //! [fork_stops]
  std::printf("the same two kernels on non-blocking streams, timed by events\n");
  std::printf("  recorded on the legacy stream:                %6.3f ms (when `stop` completed, the kernels "
              "were %s)\n", legacy_events_ms, busy_after_stop ? "still running" : "done");
  std::printf("  start on a, b waiting for it, a stop on each: %6.3f ms\n", both_ms);
  ok = ok && both_ms >= 0.95 * kSleepMs;

  // Someone else's work: 50 ms on a stream of theirs. Ours: 1 ms on ours.
  constexpr double kOtherMs = 50, kOursMs = 1;
  sleep_on(b.get(), kOtherMs);
  sleep_on(a.get(), kOursMs);
  auto t0 = Clock::now();
  a.synchronize();
  const double stream_sync_ms = ms_since(t0);
  b.synchronize();
  sleep_on(b.get(), kOtherMs);
  sleep_on(a.get(), kOursMs);
  t0 = Clock::now();
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  const double device_sync_ms = ms_since(t0);
  std::printf("waiting for our %.0f ms kernel while another stream runs a %.0f ms one\n", kOursMs, kOtherMs);
  std::printf("  cudaStreamSynchronize(ours): %6.2f ms;  cudaDeviceSynchronize(): %6.2f ms\n", stream_sync_ms,
              device_sync_ms);
  ok = ok && device_sync_ms >= 0.95 * kOtherMs;

  // 1000 empty kernels on one stream: one wait at the end, or one after every launch.
  constexpr int kLaunches = 1000;
  t0 = Clock::now();
  for (int i = 0; i < kLaunches; ++i) empty_kernel<<<1, 1, 0, a.get()>>>();
  WORKBOOK_CHECK_LAUNCH();
  a.synchronize();
  const double wait_once_us = 1e3 * ms_since(t0) / kLaunches;
  t0 = Clock::now();
  for (int i = 0; i < kLaunches; ++i) {
    empty_kernel<<<1, 1, 0, a.get()>>>();
    a.synchronize();
  }
  WORKBOOK_CHECK_LAUNCH();
  const double wait_each_us = 1e3 * ms_since(t0) / kLaunches;
  std::printf("%d empty kernels on one stream: %.2f us each with one wait at the end, %.2f us each with a "
              "wait after every launch\n", kLaunches, wait_once_us, wait_each_us);

  int count = 0;
  WORKBOOK_CUDA_CHECK(cudaMemcpy(&count, finished.data(), sizeof count, cudaMemcpyDeviceToHost));
  ok = ok && count == g_launched;
  if (!ok) std::printf("\nFAILED: a kernel did not finish, or a wait returned before the work it waits for\n");
  return ok ? 0 : 1;
}
