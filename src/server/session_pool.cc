// SessionPool: N sessions over one Model and a bounded wait for them (waiters are woken together, so the
// order in which they get a slot is not guaranteed FIFO); see session_pool.h.
#include "server/session_pool.h"

namespace pocket::server {

SessionPool::Lease& SessionPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = o.pool_;
    slot_ = o.slot_;
    o.pool_ = nullptr;
  }
  return *this;
}

Session& SessionPool::Lease::session() const { return *pool_->slots_[slot_]->session; }
SpeculativeSession* SessionPool::Lease::spec_session() const { return pool_->slots_[slot_]->spec.get(); }
std::atomic<bool>& SessionPool::Lease::cancel() const { return pool_->slots_[slot_]->cancel; }

void SessionPool::Lease::release() {
  if (pool_ == nullptr) return;
  pool_->give_back(slot_);
  pool_ = nullptr;
}

Expected<std::unique_ptr<SessionPool>> SessionPool::create(std::shared_ptr<const Model> model,
                                                           const SessionOptions& so, const PoolOptions& po) {
  if (po.n_slots < 1 || po.n_slots > 256) {
    return invalid_argument("[server] --parallel must be 1..256, got " + std::to_string(po.n_slots));
  }
  if (po.max_queue < 0 || po.max_queue > 100000) {
    return invalid_argument("[server] --queue must be 0..100000, got " + std::to_string(po.max_queue));
  }
  std::unique_ptr<SessionPool> pool(new SessionPool());
  pool->max_queue_ = po.max_queue;
  SpeculativeOptions spec = po.spec;
  if (po.speculate && spec.method == SpecMethod::kDraftModel && spec.draft_model == nullptr) {
    if (spec.draft_model_path.empty()) {
      return invalid_argument("[server] --spec draft needs a draft model (--model-draft DRAFT.pocket)");
    }
    POCKET_ASSIGN_OR_RETURN(spec.draft_model, Model::load(spec.draft_model_path, spec.draft_open));  // one for all
  }
  for (int32_t i = 0; i < po.n_slots; ++i) {
    auto s = Session::create(model, so);
    if (!s) return s.status();
    pool->n_ctx_ = (*s)->transformer().n_ctx();
    auto slot = std::make_unique<Slot>();
    slot->session = std::move(*s);
    if (po.speculate) {
      SessionOptions spec_so = so;
      spec_so.n_ctx = pool->n_ctx_;  // the same context as the plain session: a request fits both
      POCKET_ASSIGN_OR_RETURN(slot->spec, SpeculativeSession::create(model, spec_so, spec));
      pool->spec_off_reason_ = slot->spec->spec_disabled_reason();
    }
    pool->slots_.push_back(std::move(slot));
  }
  return pool;
}

SessionPool::~SessionPool() = default;

AcquireError SessionPool::acquire(Lease* out, const std::function<bool()>& keep_waiting,
                                  std::chrono::milliseconds poll) {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return AcquireError::kClosed;
  if (n_busy_ == n_slots()) {
    if (n_waiting_ >= max_queue_) return AcquireError::kBusy;
    ++n_waiting_;
    while (!closed_ && n_busy_ == n_slots()) {
      freed_.wait_for(lock, poll);
      if (closed_ || n_busy_ < n_slots()) break;
      lock.unlock();
      const bool wait_on = !keep_waiting || keep_waiting();
      lock.lock();
      if (!wait_on) {
        --n_waiting_;
        return AcquireError::kGaveUp;
      }
    }
    --n_waiting_;
    if (closed_) return AcquireError::kClosed;
  }
  for (int32_t i = 0; i < n_slots(); ++i) {
    Slot& s = *slots_[i];
    if (s.busy) continue;
    s.busy = true;
    s.cancel.store(false);
    ++n_busy_;
    *out = Lease(this, i);
    return AcquireError::kNone;
  }
  return AcquireError::kBusy;  // unreachable: n_busy_ < n_slots() means a free slot exists
}

void SessionPool::give_back(int32_t slot) {
  Slot& s = *slots_[slot];
  s.session->reset();  // outside the lock: only this lease's holder touches the sessions
  if (s.spec) s.spec->reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.busy = false;
    --n_busy_;
  }
  freed_.notify_all();
}

void SessionPool::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  freed_.notify_all();
}

void SessionPool::cancel_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : slots_) {
    if (s->busy) s->cancel.store(true);
  }
}

bool SessionPool::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return freed_.wait_for(lock, timeout, [this] { return n_busy_ == 0; });
}

int32_t SessionPool::n_busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_busy_;
}

int32_t SessionPool::n_queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_waiting_;
}

}  // namespace pocket::server
