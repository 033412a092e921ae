// parallel_for: one std::thread per range but the last, which the caller runs; all joined before
// returning.
#include "workbook/parallel.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace workbook {

std::size_t usable_cores() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return std::size_t(CPU_COUNT(&set));
#endif
  return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body, std::size_t grain) {
  const std::size_t ranges = std::clamp<std::size_t>(n / std::max<std::size_t>(grain, 1), 1, usable_cores());
  if (ranges == 1) {
    if (n > 0) body(0, n);
    return;
  }
  std::exception_ptr first;
  std::mutex guard;
  const auto run = [&](std::size_t r) {
    const std::size_t begin = n / ranges * r + std::min(r, n % ranges);
    const std::size_t end = begin + n / ranges + (r < n % ranges ? 1 : 0);
    try {
      body(begin, end);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(guard);
      if (!first) first = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(ranges - 1);
  std::size_t r = 0;
  for (; r + 1 < ranges; ++r) {
    try {
      workers.emplace_back(run, r);
    } catch (const std::system_error&) {  // no more threads to be had (a limit on processes): the rest here
      break;
    }
  }
  for (; r < ranges; ++r) run(r);
  for (std::thread& worker : workers) worker.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace workbook
