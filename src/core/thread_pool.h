// A persistent pool of worker threads for splitting row ranges. run() gives each thread (the caller included)
// an equal contiguous share of [0, n), which it runs from the front in a few chunks; a thread that is done
// with its share takes chunks from the back of the others' shares, and run() blocks until all are done; it
// allocates nothing. fn may thus run several times on one thread (with disjoint ranges, one after another),
// never on two threads at once for the same range.
// Thread safety: one run() at a time per pool (a Session owns its pool or serialises on it).
//
// Hand-off: a decode step is ~200 short run() calls, so waking sleeping threads through the kernel each time
// (futex + scheduler, tens of microseconds on a VM) would cost more than the work. Workers and the caller
// therefore spin on atomics for up to kSpinMicros after a job before sleeping on a condition variable; the
// sleeping path is the only one that takes the mutex. Measured on the development machine: decode on
// pocket-0.3b went from ~42-60 to see docs/performance.md (30 % of its time was in futex wake-ups).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace pocket {

class ThreadPool {
 public:
  // n_threads counts the caller: 1 means no worker threads at all.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Calls fn(begin, end, thread_index) for disjoint chunks covering [0, n), on the threads that claim them.
  // Chunks are aligned to `grain` items so that kernels working in blocks never split one.
  template <typename Fn>
  void run(int64_t n, Fn&& fn, int64_t grain = 1) {
    auto trampoline = [](void* ctx, int64_t b, int64_t e, int t) { (*static_cast<Fn*>(ctx))(b, e, t); };
    run_raw(n, grain, trampoline, &fn);
  }

  // Physical cores of this machine (the default thread count), at least 1.
  static int default_threads();

  // How long an idle worker (or the waiting caller) spins before it sleeps.
  static constexpr int64_t kSpinMicros = 200;
  // Chunks per thread share in a job (what a faster thread can take over from a slower one).
  static constexpr int64_t kChunksPerThread = 4;

 private:
  using RawFn = void (*)(void*, int64_t, int64_t, int);
  void run_raw(int64_t n, int64_t grain, RawFn fn, void* ctx);
  void worker_loop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  std::atomic<uint64_t> generation_{0};  // bumped (release) after the job fields below are written
  std::atomic<int> pending_{0};          // workers still running the current job
  std::atomic<int> sleepers_{0};         // workers asleep (or about to sleep) on cv_start_
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  // The current job.
  RawFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
  int64_t chunk_grains_ = 1;  // grains per chunk
  // Thread t's share of the job's grains, [front, back) packed as front << 32 | back: the owner takes
  // chunks from the front, the others from the back (one compare-exchange each). One cache line per share.
  struct alignas(64) Share {
    std::atomic<uint64_t> front_back{0};
  };
  std::unique_ptr<Share[]> shares_;

  void run_grains(int64_t g0, int64_t g1, int index);
  void drain_share(Share& share, bool from_front, int index);
  void drain(int index);  // runs its share, then takes chunks from the others' until none is left
};

}  // namespace pocket
