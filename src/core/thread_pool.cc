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

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(std::max(1, n_threads)),
      shares_(std::make_unique<Share[]>(static_cast<size_t>(n_threads_))) {
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

// Each thread runs an equal contiguous share of the job from its front, so every thread streams one region of
// memory (kernels' prefetch and the hardware's stream detection see one run; with chunks claimed in turn from
// one counter, each thread's chunks were interleaved with the other's and a verify pass of pocket-0.3b ran
// 5-7 % slower, a decode step 3 %). A thread done with its share takes chunks from the back of the others'
// (a thread that runs late, woken late, descheduled or on a slower core, is relieved of its share's tail).
namespace {
inline uint64_t pack_share(uint64_t front, uint64_t back) { return front << 32 | back; }
}  // namespace

void ThreadPool::run_grains(int64_t g0, int64_t g1, int index) {
  const int64_t b = std::min(n_, g0 * grain_), e = std::min(n_, g1 * grain_);
  if (b < e) fn_(ctx_, b, e, index);
}

// Takes chunks of `share` until it is empty: from its front (the owner) or its back (another thread).
//
// Chunk sizes shrink with what is left: at most chunk_grains_, and at most half of the share's unclaimed
// grains (rounded up for the owner, down for a thief, at least one). A thread that runs out of work therefore
// finds the other's tail still in small pieces, and the two finish within about one grain of each other
// instead of one chunk (an eighth of the job with 2 threads: ~50-120 us for pocket-0.3b's LM head). On the
// Intel Xeon VM at depth 1024: the caller's waiting per decode step 268 -> 75 us, the step 2.7 % faster
// (in-process A/B, 3 x 100 pairs) and 6-7 % in `pocket bench` (binaries alternating, 3 rounds); an 8-row
// verify pass 0.5-0.8 % and 2-5 % faster. A job costs at most ~log2(chunk_grains_) more chunks per thread.
void ThreadPool::drain_share(Share& share, bool from_front, int index) {
  for (uint64_t v = share.front_back.load(std::memory_order_acquire);;) {
    const uint64_t front = v >> 32, back = v & 0xffffffffu;
    if (front >= back) return;
    const uint64_t left = back - front;
    const uint64_t half = std::max<uint64_t>(1, from_front ? (left + 1) / 2 : left / 2);
    const uint64_t take = std::min<uint64_t>(half, static_cast<uint64_t>(chunk_grains_));
    const uint64_t b = from_front ? front : back - take;
    const uint64_t rest = from_front ? pack_share(front + take, back) : pack_share(front, back - take);
    if (share.front_back.compare_exchange_weak(v, rest, std::memory_order_acq_rel)) {
      run_grains(static_cast<int64_t>(b), static_cast<int64_t>(b + take), index);
      v = share.front_back.load(std::memory_order_acquire);
    }
  }
}

void ThreadPool::drain(int index) {
  drain_share(shares_[static_cast<size_t>(index)], true, index);
  for (int k = 1; k < n_threads_; ++k)
    drain_share(shares_[static_cast<size_t>((index + k) % n_threads_)], false, index);
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
  int64_t n_grains = (n_ + grain_ - 1) / grain_;
  while (n_grains > 0xffffffffLL) {  // shares count grains in 32 bits: coarser grains (still aligned)
    grain_ *= 2;
    n_grains = (n_ + grain_ - 1) / grain_;
  }
  for (int t = 0; t < n_threads_; ++t) {
    const uint64_t front = static_cast<uint64_t>(n_grains * t / n_threads_);
    const uint64_t back = static_cast<uint64_t>(n_grains * (t + 1) / n_threads_);
    shares_[static_cast<size_t>(t)].front_back.store(pack_share(front, back), std::memory_order_relaxed);
  }
  chunk_grains_ = std::max<int64_t>(1, (n_grains / n_threads_ + kChunksPerThread - 1) / kChunksPerThread);
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
      // seq_cst, then re-check: the caller bumps generation_ before reading sleepers_
      sleepers_.fetch_add(1);
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
