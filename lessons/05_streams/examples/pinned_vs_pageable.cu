// Worked example for lesson 05: pageable and pinned host memory, measured on this GPU. The
// bandwidth of each kind both ways; how long cudaMemcpyAsync takes to return from each kind,
// against how long the copy itself takes (from pageable memory the "asynchronous" call holds
// the host until the data has left it); what cudaHostRegister costs to pin an array that
// exists already; and how the bandwidth of pinned copies falls for small copies, which a
// pipeline's chunks must not go below. Nothing here overlaps anything: that is
// two_stream_overlap.cu. Lesson 05's README quotes it between the //! [name] markers; ctest
// runs it.
#include "workbook/workbook.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct CopyTimes {
  double return_ms = 0;  // host clock: how long cudaMemcpyAsync took to return
  double copy_ms = 0;    // GPU clock: from the stream reaching the copy to the copy's end
};

// One cudaMemcpyAsync at a time on the idle stream s: medians of `samples` runs after one
// untimed run.
CopyTimes time_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t s,
                    int samples = 5) {
  workbook::Event start, stop;
  std::vector<double> returned, copied;
  for (int i = 0; i <= samples; ++i) {
    //! [return_time]
    start.record(s);
    const auto t0 = std::chrono::steady_clock::now();
    WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
    const double return_ms = ms_since(t0);  // the host is free to queue more work from here on
    stop.record(s);
    stop.synchronize();
    const double copy_ms = workbook::elapsed_ms(start, stop);  // the copy itself, on the GPU's clock
    //! [return_time]
    if (i > 0) returned.push_back(return_ms), copied.push_back(copy_ms);
  }
  return {workbook::summarize_ms(returned).median_ms, workbook::summarize_ms(copied).median_ms};
}

void print_copy(const char* what, std::size_t bytes, const CopyTimes& t) {
  std::printf("  %-26s %8.3f ms %7.1f GB/s   cudaMemcpyAsync returned after %8.3f ms\n", what, t.copy_ms,
              workbook::gigabytes_per_second(double(bytes), t.copy_ms), t.return_ms);
}

}  // namespace

int main(int, char** argv) {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu(argv[0]);
  const std::size_t n = std::size_t(1) << 26;  // 256 MiB of floats
  const std::size_t bytes = n * sizeof(float);
  workbook::DeviceBuffer<float> device(n);
  std::vector<float> pageable(n, 1.0f);  // every page touched: no first-touch faults in the timings
  workbook::PinnedBuffer<float> pinned(n);
  std::memcpy(pinned.data(), pageable.data(), bytes);
  workbook::Stream stream(cudaStreamNonBlocking);
  const cudaStream_t s = stream.get();

  std::printf("%s: 256 MiB copies, one at a time (GPU time, bandwidth, and when the call returned)\n",
              workbook::query_device().name.c_str());
  float* const d = device.data();
  print_copy("host -> device, pageable", bytes, time_copy(d, pageable.data(), bytes, cudaMemcpyHostToDevice, s));
  print_copy("host -> device, pinned", bytes, time_copy(d, pinned.data(), bytes, cudaMemcpyHostToDevice, s));
  print_copy("device -> host, pageable", bytes, time_copy(pageable.data(), d, bytes, cudaMemcpyDeviceToHost, s));
  print_copy("device -> host, pinned", bytes, time_copy(pinned.data(), d, bytes, cudaMemcpyDeviceToHost, s));

  // Pinning memory that exists already (a std::vector here; a NumPy array's buffer alike).
  auto t0 = Clock::now();
  //! [register]
  WORKBOOK_CUDA_CHECK(cudaHostRegister(pageable.data(), bytes, cudaHostRegisterDefault));
  //! [register]
  const double register_ms = ms_since(t0);
  const CopyTimes registered = time_copy(device.data(), pageable.data(), bytes, cudaMemcpyHostToDevice, s);
  t0 = Clock::now();
  WORKBOOK_CUDA_CHECK(cudaHostUnregister(pageable.data()));
  const double unregister_ms = ms_since(t0);
  std::printf("cudaHostRegister of the pageable 256 MiB: %.1f ms, cudaHostUnregister: %.1f ms; in between:\n",
              register_ms, unregister_ms);
  print_copy("host -> device, registered", bytes, registered);

  std::printf("pinned host -> device by copy size:");
  for (const std::size_t size : {std::size_t(64) << 10, std::size_t(1) << 20, std::size_t(16) << 20, bytes}) {
    const CopyTimes t = time_copy(device.data(), pinned.data(), size, cudaMemcpyHostToDevice, s, 20);
    std::printf("  %zu KiB %.1f GB/s%s", size >> 10, workbook::gigabytes_per_second(double(size), t.copy_ms),
                size == bytes ? "\n" : ",");
  }

  // The copies carried the data: pageable -> device -> pinned, then pinned -> device -> pageable.
  for (std::size_t i = 0; i < n; ++i) pageable[i] = float(i % 65536);
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device.data(), pageable.data(), bytes, cudaMemcpyHostToDevice, s));
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(pinned.data(), device.data(), bytes, cudaMemcpyDeviceToHost, s));
  stream.synchronize();
  bool ok = std::memcmp(pinned.data(), pageable.data(), bytes) == 0;
  for (std::size_t i = 0; i < n; ++i) pinned[i] = -float(i % 1000);
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.data(), bytes, cudaMemcpyHostToDevice, s));
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(pageable.data(), device.data(), bytes, cudaMemcpyDeviceToHost, s));
  stream.synchronize();
  ok = ok && std::memcmp(pinned.data(), pageable.data(), bytes) == 0;
  if (!ok) std::printf("\nFAILED: a round trip through the GPU changed the data\n");
  return ok ? 0 : 1;
}
