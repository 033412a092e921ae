// parallel_for: one std::thread per range, joined before returning.
#include "workbook/parallel.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace workbook {

void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body, std::size_t grain) {
  const std::size_t threads = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  const std::size_t ranges = std::clamp<std::size_t>(n / std::max<std::size_t>(grain, 1), 1, threads);
  if (ranges == 1) {
    if (n > 0) body(0, n);
    return;
  }
  std::exception_ptr first;
  std::mutex guard;
  std::vector<std::thread> workers;
  workers.reserve(ranges);
  for (std::size_t r = 0; r < ranges; ++r) {
    const std::size_t begin = n / ranges * r + std::min(r, n % ranges);
    const std::size_t end = begin + n / ranges + (r < n % ranges ? 1 : 0);
    workers.emplace_back([&, begin, end] {
      try {
        body(begin, end);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(guard);
        if (!first) first = std::current_exception();
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace workbook
