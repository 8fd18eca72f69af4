// ThreadPool: workers sleep on a condition variable between jobs; the caller takes slice 0.
#include "core/thread_pool.h"

#include <algorithm>
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::slice(int index, int64_t* b, int64_t* e) const {
  const int64_t n_grains = (n_ + grain_ - 1) / grain_;
  const int64_t per = n_grains / n_threads_;
  const int64_t extra = n_grains % n_threads_;
  const int64_t g0 = index * per + std::min<int64_t>(index, extra);
  const int64_t g1 = g0 + per + (index < extra ? 1 : 0);
  *b = std::min(n_, g0 * grain_);
  *e = std::min(n_, g1 * grain_);
}

void ThreadPool::run_raw(int64_t n, int64_t grain, RawFn fn, void* ctx) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n <= grain) {
    fn(ctx, 0, n, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    grain_ = std::max<int64_t>(1, grain);
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  cv_start_.notify_all();
  int64_t b, e;
  slice(0, &b, &e);
  if (b < e) fn(ctx, b, e, 0);
  std::unique_lock<std::mutex> lock(mu_);
  cv_done_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_start_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    lock.unlock();
    int64_t b, e;
    slice(index, &b, &e);
    if (b < e) fn_(ctx_, b, e, index);
    lock.lock();
    if (--pending_ == 0) cv_done_.notify_one();
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
