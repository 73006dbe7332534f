// parallel_for: coverage, chunk sizes, exceptions, nesting and thread-count control.
#include <ctrax/base/error.h>
#include <ctrax/kernels/parallel.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.h"

using namespace ctrax::kernels;
using ctrax::test::ThreadCountGuard;

TEST_CASE("parallel_for covers the range 0..n exactly once in chunks of at least grain") {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 3, 4}) {
    set_num_threads(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 100, 1001}) {
      for (int64_t grain : {1, 3, 50}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::mutex mutex;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        parallel_for(n, grain, [&](int64_t begin, int64_t end) {
          {
            std::lock_guard<std::mutex> lock(mutex);
            chunks.emplace_back(begin, end);
          }
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) REQUIRE(hits[static_cast<size_t>(i)].load() == 1);
        if (n == 0) CHECK(chunks.empty());
        CHECK(chunks.size() <= static_cast<size_t>(threads));
        if (chunks.size() > 1) {
          for (const auto& [begin, end] : chunks) CHECK(end - begin >= grain);
        }
      }
    }
  }
}

TEST_CASE("parallel_for splits deterministically") {
  ThreadCountGuard guard;
  set_num_threads(3);
  auto split = [] {
    std::mutex mutex;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    parallel_for(1000, 10, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mutex);
      chunks.emplace_back(begin, end);
    });
    std::sort(chunks.begin(), chunks.end());
    return chunks;
  };
  const auto first = split();
  CHECK(first.size() == 3);
  for (int repeat = 0; repeat < 20; ++repeat) CHECK(split() == first);
}

TEST_CASE("parallel_for rethrows a chunk's exception on the caller and stays usable") {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    CHECK_THROWS_WITH_AS(parallel_for(100, 1,
                                      [](int64_t begin, int64_t end) {
                                        if (begin <= 70 && 70 < end) throw std::runtime_error("chunk failed");
                                      }),
                         "chunk failed", std::runtime_error);
    std::atomic<int64_t> sum{0};
    parallel_for(100, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += i;
    });
    CHECK(sum.load() == 4950);
  }
}

TEST_CASE("nested parallel_for runs serially inside the chunk") {
  ThreadCountGuard guard;
  set_num_threads(2);
  std::atomic<int> inner_calls{0};
  std::atomic<int> inner_total{0};
  std::atomic<bool> all_inside{true};
  CHECK_FALSE(in_parallel_region());
  parallel_for(2, 1, [&](int64_t begin, int64_t end) {
    if (!in_parallel_region()) all_inside = false;
    parallel_for(64, 1, [&](int64_t b, int64_t e) {
      inner_calls += 1;
      inner_total += static_cast<int>(e - b);
    });
  });
  CHECK(all_inside.load());
  CHECK(inner_calls.load() == 2);  // one serial inner call per outer chunk
  CHECK(inner_total.load() == 128);
  CHECK_FALSE(in_parallel_region());
}

TEST_CASE("set_num_threads validates its argument") {
  ThreadCountGuard guard;
  CHECK_THROWS_AS(set_num_threads(0), ctrax::Error);
  CHECK_THROWS_AS(set_num_threads(-3), ctrax::Error);
  set_num_threads(3);
  CHECK(num_threads() == 3);
  set_num_threads(1);
  CHECK(num_threads() == 1);
  std::atomic<int> calls{0};
  parallel_for(1000, 1, [&](int64_t begin, int64_t end) {
    CHECK(begin == 0);
    CHECK(end == 1000);
    calls += 1;
  });
  CHECK(calls.load() == 1);
  // Changing the count from inside a chunk would replace the pool under its own job.
  set_num_threads(2);
  std::atomic<int> refused{0};
  parallel_for(2, 1, [&](int64_t, int64_t) {
    try {
      set_num_threads(4);
    } catch (const ctrax::Error&) {
      refused += 1;
    }
  });
  CHECK(refused.load() == 2);
}

TEST_CASE("parallel_for from several threads at once") {
  ThreadCountGuard guard;
  set_num_threads(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      for (int repeat = 0; repeat < 50; ++repeat) {
        parallel_for(1000, 1, [&](int64_t begin, int64_t end) { total += end - begin; });
      }
    });
  }
  for (auto& caller : callers) caller.join();
  CHECK(total.load() == 3 * 50 * 1000);
}
