// ThreadPool: workers spin briefly, then sleep on a condition variable between jobs; every thread, the caller
// included, claims chunks of the job from an atomic counter.
#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace pocket {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv_start_.notify_all();
  for (auto& w : workers_) w.join();
}

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Spins until pred() holds or about kSpinMicros have passed; true if pred() held.
template <typename Pred>
bool spin_until(Pred&& pred, int64_t micros) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::microseconds(micros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      cpu_relax();
    }
    if (clock::now() >= deadline) return pred();
  }
}

}  // namespace

// The job is cut into about kChunksPerThread contiguous chunks per thread (whole grains), claimed in order
// from an atomic counter by every thread, the caller included: a thread that runs late (woken late,
// descheduled, on a slower core or memory channel) takes fewer chunks instead of making the others wait.
void ThreadPool::chunk(int64_t c, int64_t* b, int64_t* e) const {
  *b = std::min(n_, c * chunk_grains_ * grain_);
  *e = std::min(n_, (c + 1) * chunk_grains_ * grain_);
}

void ThreadPool::drain(int index) {
  for (;;) {
    const int64_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed);
    if (c >= n_chunks_) return;
    int64_t b, e;
    chunk(c, &b, &e);
    if (b < e) fn_(ctx_, b, e, index);
  }
}

void ThreadPool::run_raw(int64_t n, int64_t grain, RawFn fn, void* ctx) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n <= grain) {
    fn(ctx, 0, n, 0);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  n_ = n;
  grain_ = std::max<int64_t>(1, grain);
  const int64_t n_grains = (n_ + grain_ - 1) / grain_;
  chunk_grains_ = std::max<int64_t>(1, (n_grains + n_threads_ * kChunksPerThread - 1) / (n_threads_ * kChunksPerThread));
  n_chunks_ = (n_grains + chunk_grains_ - 1) / chunk_grains_;
  next_chunk_.store(0, std::memory_order_relaxed);
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1);  // seq_cst: ordered against the sleepers_ read below (no lost wake-up)
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }  // a worker between its check and its wait holds mu_
    cv_start_.notify_all();
  }
  drain(0);
  auto done = [this] { return pending_.load() == 0; };  // seq_cst: pairs with caller_sleeping_
  if (spin_until(done, kSpinMicros)) return;
  std::unique_lock<std::mutex> lock(mu_);
  caller_sleeping_.store(true);
  cv_done_.wait(lock, done);
  caller_sleeping_.store(false);
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto fresh = [&] { return generation_.load() != seen; };  // seq_cst: pairs with sleepers_
    if (!spin_until(fresh, kSpinMicros)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);  // seq_cst, then re-check: the caller bumps generation_ before reading sleepers_
      cv_start_.wait(lock, fresh);
      sleepers_.fetch_sub(1);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    drain(index);
    if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      { std::lock_guard<std::mutex> lock(mu_); }
      cv_done_.notify_one();
    }
  }
}

int ThreadPool::default_threads() {
  // Count distinct (physical id, core id) pairs; fall back to the logical count.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, phys = "0";
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string val = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "physical id") phys = val;
    if (key == "core id") cores.insert({phys, val});
  }
  unsigned logical = std::thread::hardware_concurrency();
  if (!cores.empty()) return static_cast<int>(cores.size());
  return logical > 0 ? static_cast<int>(logical) : 1;
}

}  // namespace pocket
