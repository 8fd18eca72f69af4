// SessionPool: the server's N sessions over one shared Model (weights shared, one KV cache each), lent to
// one request at a time, with a bounded queue of waiting requests in front (docs/server.md, "Concurrency").
// Thread-safe: every member may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "generate/session.h"
#include "speculative/speculative_session.h"

namespace pocket::server {

struct PoolOptions {
  int32_t n_slots = 1;     // sessions, i.e. requests generating at once
  int32_t max_queue = 16;  // requests waiting for a slot at most; one more is refused (HTTP 503)
  // With `speculate`, each slot also holds a speculative session (its own KV cache and drafter) for the
  // unconstrained completions; constrained ones and tasks run on the plain session.
  bool speculate = false;
  SpeculativeOptions spec{};
};

enum class AcquireError { kNone, kBusy, kClosed, kGaveUp };

class SessionPool {
 public:
  // One session slot while a request holds it; gives it back (reset) when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept : pool_(o.pool_), slot_(o.slot_) { o.pool_ = nullptr; }
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { release(); }

    bool valid() const { return pool_ != nullptr; }
    Session& session() const;
    // The slot's speculative session, or null when the pool was created without speculation.
    SpeculativeSession* spec_session() const;
    // Raised by cancel_all() (shutdown) and by the request itself (client gone); the session checks it
    // between layers in prefill and between tokens in decode.
    std::atomic<bool>& cancel() const;
    void release();

   private:
    friend class SessionPool;
    Lease(SessionPool* pool, int32_t slot) : pool_(pool), slot_(slot) {}
    SessionPool* pool_ = nullptr;
    int32_t slot_ = -1;
  };

  // Creates every session up front, so memory is planned (and refused) at start, not under load.
  static Expected<std::unique_ptr<SessionPool>> create(std::shared_ptr<const Model> model, const SessionOptions& so,
                                                       const PoolOptions& po);
  ~SessionPool();
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // A free slot, waiting in the queue while all are busy. Gives kBusy at once when max_queue requests are
  // already waiting, kClosed after close(), kGaveUp when `keep_waiting` (polled every `poll`) says false.
  AcquireError acquire(Lease* out, const std::function<bool()>& keep_waiting,
                       std::chrono::milliseconds poll = std::chrono::milliseconds(50));

  // Refuses every later acquire (kClosed) and wakes the waiting ones.
  void close();
  // Raises the cancel flag of every slot in use (they finish within a token or a layer).
  void cancel_all();
  // Waits until no slot is in use or `timeout` passes; true when idle.
  bool wait_idle(std::chrono::milliseconds timeout);

  int32_t n_slots() const { return static_cast<int32_t>(slots_.size()); }
  int64_t n_ctx() const { return n_ctx_; }  // every session's context length, tokens
  // Why speculation asked for is off (a block drafter beyond the memory budget); "" when it is on or not asked.
  const std::string& spec_off_reason() const { return spec_off_reason_; }
  int32_t n_busy() const;
  int32_t n_queued() const;

 private:
  struct Slot {
    std::unique_ptr<Session> session;
    std::unique_ptr<SpeculativeSession> spec;  // PoolOptions::speculate
    std::atomic<bool> cancel{false};
    bool busy = false;
  };
  SessionPool() = default;
  void give_back(int32_t slot);

  std::vector<std::unique_ptr<Slot>> slots_;
  int32_t max_queue_ = 0;
  int64_t n_ctx_ = 0;
  std::string spec_off_reason_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  int32_t n_busy_ = 0;
  int32_t n_waiting_ = 0;
  bool closed_ = false;
};

}  // namespace pocket::server
