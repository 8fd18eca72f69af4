// ThreadPool: every item of [0, n) is visited exactly once, slices respect the grain, each thread runs its
// own contiguous share and a fast thread takes over a slow one's, and hand-off works on both paths —
// back-to-back jobs (workers still spinning) and jobs after a pause longer than the spin budget (workers
// asleep on the condition variable).
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace pocket {
namespace {

void check_cover(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<bool> aligned{true};
  pool.run(
      n,
      [&](int64_t b, int64_t e, int t) {
        if (b % grain != 0 || t < 0 || t >= pool.n_threads()) aligned = false;
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      },
      grain);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " item " << i;
  EXPECT_TRUE(aligned.load());
}

TEST(ThreadPool, CoversEveryItemOnceBackToBack) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 16, 100, 1001}) {
      for (int64_t grain : {1, 4, 16}) check_cover(pool, n, grain);
    }
  }
}

TEST(ThreadPool, ManyShortJobs) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int j = 0; j < 5000; ++j) {
    pool.run(3, [&](int64_t b, int64_t e, int) { sum.fetch_add(e - b); });
  }
  EXPECT_EQ(sum.load(), 15000);
}

TEST(ThreadPool, JobsAfterWorkersFellAsleep) {
  ThreadPool pool(3);
  for (int j = 0; j < 5; ++j) {
    std::this_thread::sleep_for(std::chrono::microseconds(3 * ThreadPool::kSpinMicros));
    check_cover(pool, 64, 1);
  }
}

TEST(ThreadPool, CallerWaitsForASlowWorker) {
  // One slice takes far longer than the spin budget: the caller must sleep and be woken, not return early.
  ThreadPool pool(2);
  std::atomic<int> done{0};
  pool.run(2, [&](int64_t b, int64_t, int) {
    if (b == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 2);
}

TEST(ThreadPool, EachThreadRunsOneContiguousShareFromItsFront) {
  // With equal work, a thread's chunks are consecutive ranges of its own share (one memory stream per
  // thread), not interleaved with another thread's.
  ThreadPool pool(2);
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> ranges[2];
  pool.run(64, [&](int64_t b, int64_t e, int t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // equal, long enough for both to start
    std::lock_guard<std::mutex> lock(mu);
    ranges[t].push_back({b, e});
  });
  ASSERT_FALSE(ranges[0].empty());
  for (int t = 0; t < 2; ++t) {
    // Thread t's share is [32 t, 32 t + 32). The chunks it ran inside it are one gapless run from the share's
    // start (the other thread can only have taken the share's tail).
    std::vector<std::pair<int64_t, int64_t>> own;
    for (const auto& r : ranges[t]) {
      if (r.first >= 32 * t && r.second <= 32 * t + 32) own.push_back(r);
    }
    if (own.empty()) continue;  // a worker woken very late finds its share taken
    std::sort(own.begin(), own.end());
    EXPECT_EQ(own.front().first, 32 * t) << "thread " << t;
    for (size_t i = 1; i < own.size(); ++i) EXPECT_EQ(own[i].first, own[i - 1].second) << "thread " << t;
  }
}

TEST(ThreadPool, FastThreadTakesOverASlowThreadsShare) {
  // The worker's share is [32, 64); its first chunk is slow, so the caller, done with [0, 32), takes the
  // rest of the worker's share from the back: every item still runs once and the caller runs more than half.
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(64);
  std::atomic<int64_t> by_caller{0};
  pool.run(64, [&](int64_t b, int64_t e, int t) {
    if (b == 32) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    if (t == 0) by_caller.fetch_add(e - b);
  });
  for (int64_t i = 0; i < 64; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
  EXPECT_GT(by_caller.load(), 32);
}

TEST(ThreadPool, TailsAreTakenInShrinkingChunks) {
  // The worker's first chunk [32, 40) is slow. The caller runs its own share [0, 32) in chunks of at most
  // 8 items (a quarter of a share) and half of what is left, then the worker's unclaimed [40, 64) from the
  // back, each time half of what is left: the last pieces are single items, so whichever thread ends first
  // waits for at most about one item of the other's.
  ThreadPool pool(2);
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> caller;
  std::vector<std::atomic<int>> hits(64);
  std::atomic<bool> worker_started{false};
  pool.run(64, [&](int64_t b, int64_t e, int t) {
    if (t != 0 && b == 32) {
      worker_started.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (t == 0 && b == 0) {  // hold the caller's first chunk until the worker has claimed its share's front
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!worker_started.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    }
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    if (t == 0) {
      std::lock_guard<std::mutex> lock(mu);
      caller.push_back({b, e});
    }
  });
  for (int64_t i = 0; i < 64; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
  ASSERT_TRUE(worker_started.load());
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {0, 8},   {8, 16},  {16, 24}, {24, 28}, {28, 30}, {30, 31}, {31, 32},  // own share, from the front
      {56, 64}, {48, 56}, {44, 48}, {42, 44}, {41, 42}, {40, 41}};           // the worker's, from the back
  EXPECT_EQ(caller, expected);
}

TEST(ThreadPool, DestroyIdleAndBusyPools) {
  for (int i = 0; i < 20; ++i) {
    ThreadPool pool(4);
    if (i % 2 == 0) check_cover(pool, 33, 1);
    if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(2 * ThreadPool::kSpinMicros));
  }
}

}  // namespace
}  // namespace pocket
