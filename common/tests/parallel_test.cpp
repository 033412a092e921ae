// parallel_for: every element once, on several threads for large n, and errors come back.
#include "workbook/parallel.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

TEST_CASE("parallel_for covers every element exactly once, for any n", "[parallel]") {
  for (const std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(1) << 18,
                              (std::size_t(1) << 20) + 3, std::size_t(5'000'011)}) {
    CAPTURE(n);
    std::vector<std::atomic<int>> seen(n);
    std::atomic<int> empty_ranges{0};  // counted here, checked on this thread: Catch2's CHECK is not thread-safe
    workbook::parallel_for(n, [&](std::size_t begin, std::size_t end) {
      if (begin >= end) empty_ranges.fetch_add(1);
      for (std::size_t i = begin; i < end; ++i) seen[i].fetch_add(1);
    });
    CHECK(empty_ranges.load() == 0);
    std::size_t once = 0;
    for (const auto& count : seen) once += count.load() == 1 ? 1 : 0;
    CHECK(once == n);
  }
}

TEST_CASE("parallel_for splits large loops over threads and small ones not at all", "[parallel]") {
  std::mutex guard;
  std::set<std::thread::id> ids;
  std::size_t ranges = 0;
  const auto record = [&](std::size_t, std::size_t) {
    const std::lock_guard<std::mutex> lock(guard);
    ids.insert(std::this_thread::get_id());
    ++ranges;
  };
  workbook::parallel_for(1000, record);  // under one grain: the caller's thread, one range
  CHECK(ranges == 1);
  CHECK(ids.count(std::this_thread::get_id()) == 1);
  ids.clear();
  ranges = 0;
  workbook::parallel_for(std::size_t(1) << 24, record);
  const std::size_t cores = workbook::usable_cores();
  CHECK(ranges == std::min<std::size_t>(cores, 64));  // 2^24 / 2^18 = 64 grains
  CHECK(ids.size() == ranges);
  CHECK(ids.count(std::this_thread::get_id()) == 1);  // the caller runs one range itself
}

TEST_CASE("parallel_for rethrows an exception a range threw, after every range ended", "[parallel]") {
  std::atomic<int> ended{0};
  CHECK_THROWS_AS(workbook::parallel_for(std::size_t(1) << 22,
                                         [&](std::size_t begin, std::size_t) {
                                           if (begin == 0) throw std::runtime_error("range 0");
                                           ended.fetch_add(1);
                                         }),
                  std::runtime_error);
  CHECK(ended.load() == int(std::min<std::size_t>(workbook::usable_cores(), 16)) - 1);  // 2^22 / 2^18 = 16 grains
}

TEST_CASE("usable_cores counts the cores this process may run on", "[parallel]") {
  CHECK(workbook::usable_cores() >= 1);
  CHECK(workbook::usable_cores() <= std::max(1u, std::thread::hardware_concurrency()));
}
