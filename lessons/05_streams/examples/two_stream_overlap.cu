// Worked example for lesson 05: the smallest pipeline. Two jobs, each a copy in, a kernel and a
// copy out of 64 MiB, run one after the other on one stream, then on two streams issued depth
// first (job by job) and breadth first (stage by stage), against the overlap bound. The kernel
// (the lesson's streams::transform) is made as long as the copy in, so that each stage matters.
// It does not cut the data into many chunks, handle remainders or choose the number of streams:
// that is task 1. Lesson 05's README quotes it between the //! [name] markers; ctest runs it.
#include "streams.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

namespace {

constexpr std::size_t kJob = std::size_t(1) << 24;  // floats per job: 64 MiB
constexpr std::size_t kBytes = kJob * sizeof(float);
constexpr int kJobs = 2;

// Median GPU time of the work `issue` queues on s0 and s1, from an event on s0 that s1 waits
// for to an event on s0 after s1's work is joined back (the fork and join of the lesson).
double timed_ms(const std::function<void()>& issue, cudaStream_t s0, cudaStream_t s1, int samples = 5) {
  workbook::Event start, stop, s1_done(cudaEventDisableTiming);
  std::vector<double> ms;
  for (int i = 0; i <= samples; ++i) {
    start.record(s0);
    WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(s1, start.get(), 0));
    issue();
    s1_done.record(s1);
    WORKBOOK_CUDA_CHECK(cudaStreamWaitEvent(s0, s1_done.get(), 0));
    stop.record(s0);
    stop.synchronize();
    if (i > 0) ms.push_back(workbook::elapsed_ms(start, stop));
  }
  return workbook::summarize_ms(ms).median_ms;
}

}  // namespace

int main(int, char** argv) {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  const std::size_t n = kJobs * kJob;
  workbook::PinnedBuffer<float> host_in(n), host_out(n);
  workbook::DeviceBuffer<float> device_in(n), device_out(n);
  const std::vector<float> x = workbook::random_floats(n, 5);
  std::copy(x.begin(), x.end(), host_in.data());
  workbook::Stream stream0(cudaStreamNonBlocking), stream1(cudaStreamNonBlocking);
  const cudaStream_t s[kJobs] = {stream0.get(), stream1.get()};
  int work = 1;

  // Job j's three stages, each queued on the stream it is given.
  const auto copy_in = [&](int j, cudaStream_t st) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device_in.data() + j * kJob, host_in.data() + j * kJob, kBytes,
                                        cudaMemcpyHostToDevice, st));
  };
  const auto kernel = [&](int j, cudaStream_t st) {
    streams::transform(device_in.data() + j * kJob, device_out.data() + j * kJob, kJob, work, st);
  };
  const auto copy_out = [&](int j, cudaStream_t st) {
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(host_out.data() + j * kJob, device_out.data() + j * kJob, kBytes,
                                        cudaMemcpyDeviceToHost, st));
  };
  const auto alone_ms = [&](const std::function<void(int, cudaStream_t)>& stage) {
    return timed_ms([&] { stage(0, s[0]); }, s[0], s[1]);
  };

  // The kernel's time grows linearly with `work`: two points give the work for one copy's time.
  const double in_ms = alone_ms(copy_in);
  work = 64;
  const double low_ms = alone_ms(kernel);
  work = 4096;
  const double high_ms = alone_ms(kernel);
  work = std::clamp(int(64 + (in_ms - low_ms) * (4096 - 64) / std::max(high_ms - low_ms, 1e-6)), 1, 1 << 20);
  const double kernel_ms = alone_ms(kernel), out_ms = alone_ms(copy_out);

  int engines = 0;
  WORKBOOK_CUDA_CHECK(cudaDeviceGetAttribute(&engines, cudaDevAttrAsyncEngineCount, 0));
  std::printf("%s: asyncEngineCount = %d\n", workbook::query_device().name.c_str(), engines);
  std::printf("two jobs of 64 MiB; each stage alone, per job: copy in %.3f ms, kernel %.3f ms (work = %d), "
              "copy out %.3f ms\n", in_ms, kernel_ms, work, out_ms);

  // The reference result: job after job on one stream.
  const auto sequential = [&] {
    for (int j = 0; j < kJobs; ++j) copy_in(j, s[0]), kernel(j, s[0]), copy_out(j, s[0]);
  };
  const double sequential_ms = timed_ms(sequential, s[0], s[1]);
  const std::vector<float> expected(host_out.data(), host_out.data() + n);

  const auto depth_first = [&] {
    //! [depth_first]
    // Depth first: job j's three stages, in order, on stream j. Stream 1's copy in does not wait
    // for stream 0's kernel, so the two run at the same time.
    for (int j = 0; j < kJobs; ++j) {
      copy_in(j, s[j]);
      kernel(j, s[j]);
      copy_out(j, s[j]);
    }
    //! [depth_first]
  };
  const auto breadth_first = [&] {
    //! [breadth_first]
    // Breadth first: every job's copy in, then every kernel, then every copy out. Each stream
    // gets the same work in the same order; only the order of the host's calls differs.
    for (int j = 0; j < kJobs; ++j) copy_in(j, s[j]);
    for (int j = 0; j < kJobs; ++j) kernel(j, s[j]);
    for (int j = 0; j < kJobs; ++j) copy_out(j, s[j]);
    //! [breadth_first]
  };
  bool ok = true;
  const auto check = [&](const std::function<void()>& issue) {
    std::memset(host_out.data(), 0xff, n * sizeof(float));
    const double ms = timed_ms(issue, s[0], s[1]);
    ok = ok && std::memcmp(host_out.data(), expected.data(), n * sizeof(float)) == 0;
    return ms;
  };
  const double depth_ms = check(depth_first), breadth_ms = check(breadth_first);

  const double stages = in_ms + kernel_ms + out_ms, longest = std::max({in_ms, kernel_ms, out_ms});
  std::printf("  one stream, job after job:    %7.3f ms (the stages' sum: %.3f ms)\n", sequential_ms, kJobs * stages);
  std::printf("  two streams, depth first:     %7.3f ms\n", depth_ms);
  std::printf("  two streams, breadth first:   %7.3f ms\n", breadth_ms);
  std::printf("  bound max(in, kernel, out) over both jobs: %.3f ms; two chunks cannot beat one job's three "
              "stages plus the longest once more: %.3f ms\n", kJobs * longest, stages + longest);
  if (!ok) std::printf("\nFAILED: an overlapped run gave other bits than the sequential one\n");
  return ok ? 0 : 1;
}
