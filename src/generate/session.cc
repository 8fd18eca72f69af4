// Session: prefill as one batch, then the token-by-token decode loop with streaming text.
#include "generate/session.h"

#include <algorithm>

namespace pocket {

Status mask_constrained_draw(TokenConstraint& con, const GenerateOptions& opts, std::span<const int32_t> stop_ids,
                             float* logits, int32_t n_vocab, int64_t n_ctx, int64_t n_past, int64_t n_generated,
                             std::span<float> stop_scratch) {
  int64_t n_left = n_ctx - n_past + 1;
  if (opts.n_predict > 0) n_left = std::min<int64_t>(n_left, opts.n_predict - n_generated);
  for (size_t i = 0; i < stop_ids.size(); ++i) stop_scratch[i] = logits[stop_ids[i]];
  POCKET_RETURN_IF_ERROR(con.mask(logits, n_vocab, n_left));
  if (opts.stop_at_eos && con.can_stop()) {
    for (size_t i = 0; i < stop_ids.size(); ++i) logits[stop_ids[i]] = stop_scratch[i];
  }
  return Status::ok();
}

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

Expected<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Model> model, const SessionOptions& opts) {
  if (opts.n_ctx < 0) return invalid_argument("[session] n_ctx must be >= 0 (0 = the package default)");
  if (opts.n_threads < 0 || opts.n_threads > 512) return invalid_argument("[session] n_threads must be 0..512");
  if (opts.n_batch < 0) return invalid_argument("[session] n_batch must be >= 0");
  std::unique_ptr<Session> s(new Session());
  s->model_ = model;
  const int threads = opts.n_threads > 0 ? opts.n_threads : ThreadPool::default_threads();
  SessionShape shape;
  shape.n_ctx = opts.n_ctx;
  shape.n_batch = opts.n_batch;
  shape.n_threads = threads;
  shape.n_logit_rows = std::max<int64_t>(1, opts.n_logit_rows);
  s->pool_ = std::make_unique<ThreadPool>(threads);
  POCKET_ASSIGN_OR_RETURN(s->transformer_, Transformer::create(model, shape, s->pool_.get(), opts.mem_budget_bytes));
  s->history_.reserve(static_cast<size_t>(s->transformer_->n_ctx()));
  const Tokenizer& tok = model->tokenizer();
  if (tok.eos_id() >= 0) s->stop_ids_.push_back(tok.eos_id());
  for (int32_t id : model->config().stop_tokens) s->stop_ids_.push_back(id);
  return s;
}

void Session::reset() {
  transformer_->truncate(0);
  history_.clear();
  pending_ = -1;
}

bool Session::is_stop_token(int32_t id) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
}

Status Session::generate(std::string_view prompt, const GenerateOptions& opts, const TokenCallback& on_token,
                         const std::atomic<bool>* cancel, GenerateStats* stats) {
  std::vector<int32_t> ids;
  EncodeOptions eo;
  eo.add_bos = opts.add_bos && history_.empty() && model_->config().add_bos;
  eo.parse_special = opts.parse_special;
  POCKET_RETURN_IF_ERROR(model_->tokenizer().encode(prompt, eo, &ids));
  return generate_tokens(ids, opts, on_token, cancel, stats);
}

Status Session::generate_tokens(std::span<const int32_t> prompt, const GenerateOptions& opts,
                                const TokenCallback& on_token, const std::atomic<bool>* cancel, GenerateStats* stats) {
  GenerateStats local;
  GenerateStats& st = stats != nullptr ? *stats : local;
  st = GenerateStats{};
  if (opts.n_predict < -1) return invalid_argument("[generate] n_predict must be >= -1 (-1 = until a stop token)");
  const int64_t n_ctx = transformer_->n_ctx();
  if (prompt.empty() && history_.empty()) return invalid_argument("[generate] empty prompt and nothing to continue from");
  // A token emitted by the previous call but not yet evaluated goes first.
  std::vector<int32_t> to_eval;
  to_eval.reserve(prompt.size() + 1);
  if (pending_ >= 0) to_eval.push_back(pending_);
  to_eval.insert(to_eval.end(), prompt.begin(), prompt.end());
  if (n_past() + static_cast<int64_t>(to_eval.size()) > n_ctx) {
    return Status(ErrorCode::kContextExceeded, "[generate] the prompt has " + std::to_string(prompt.size()) +
                                                   " tokens; with " + std::to_string(n_past()) +
                                                   " already in the session that exceeds the context of " +
                                                   std::to_string(n_ctx));
  }
  POCKET_ASSIGN_OR_RETURN(Sampler sampler, Sampler::create(opts.sampling, static_cast<int32_t>(model_->hparams().n_vocab)));
  for (int32_t id : history_) sampler.accept(id);
  if (pending_ >= 0) sampler.accept(pending_);

  // Prefill: the whole prompt as one batch (chunked by n_batch inside forward).
  const auto t0 = Clock::now();
  if (!to_eval.empty()) {
    POCKET_RETURN_IF_ERROR(transformer_->forward(to_eval, /*all_logits=*/false, cancel));
    pending_ = -1;
    for (int32_t id : prompt) sampler.accept(id);
    history_.insert(history_.end(), to_eval.begin(), to_eval.end());
  }
  st.n_prompt = static_cast<int64_t>(prompt.size());
  st.prefill_seconds = seconds_since(t0);
  if (opts.n_predict == 0) {
    st.stop = StopReason::kLength;
    return Status::ok();
  }

  // Decode: sample from the last logits, emit, feed back. Nothing here allocates.
  const Tokenizer& tok = model_->tokenizer();
  const auto t1 = Clock::now();
  stream_.reset();
  int32_t prev = history_.empty() ? -1 : history_.back();
  TokenConstraint* con = opts.constraint;
  const int32_t n_vocab = static_cast<int32_t>(model_->hparams().n_vocab);
  // The stop tokens' logits before masking: a constraint masks every token without bytes, and the session
  // lets the stop tokens back in where the constraint may end.
  std::vector<float> stop_logits(stop_ids_.size());
  for (;;) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      st.decode_seconds = seconds_since(t1);
      return Status(ErrorCode::kCancelled, "[generate] cancelled");
    }
    float* logits = transformer_->mutable_logits(0);
    if (con != nullptr) {
      const auto tc = Clock::now();
      Status ms = mask_constrained_draw(*con, opts, stop_ids_, logits, n_vocab, n_ctx, n_past(), st.n_generated,
                                        stop_logits);
      if (!ms.is_ok()) {
        st.decode_seconds = seconds_since(t1);
        return ms;
      }
      st.constraint_seconds += seconds_since(tc);
    }
    POCKET_ASSIGN_OR_RETURN(int32_t next, sampler.sample(logits));
    if (opts.stop_at_eos && is_stop_token(next)) {
      st.stop = StopReason::kStopToken;
      break;
    }
    if (con != nullptr) {
      const auto tc = Clock::now();
      Status as = con->accept(next);
      st.constraint_seconds += seconds_since(tc);
      ++st.n_constrained;
      if (!as.is_ok()) {
        st.decode_seconds = seconds_since(t1);
        return as;
      }
    }
    ++st.n_generated;
    sampler.accept(next);
    const bool keep_going = on_token ? on_token(next, stream_.feed(tok.decode_piece(prev, next))) : true;
    prev = next;
    // A token that ends the call is emitted but not evaluated: the next call evaluates it first.
    if (!keep_going) {
      st.stop = StopReason::kCallback;
      pending_ = next;
      break;
    }
    if (con != nullptr && con->done()) {
      st.stop = StopReason::kConstraintDone;
      pending_ = next;
      break;
    }
    if (opts.n_predict > 0 && st.n_generated >= opts.n_predict) {
      st.stop = StopReason::kLength;
      pending_ = next;
      break;
    }
    if (n_past() >= n_ctx) {
      st.stop = StopReason::kContextFull;
      pending_ = next;
      break;
    }
    const int32_t one[1] = {next};
    Status fs = transformer_->forward(one, false, cancel);
    if (!fs.is_ok()) {
      st.decode_seconds = seconds_since(t1);
      return fs;
    }
    history_.push_back(next);
  }
  st.decode_seconds = seconds_since(t1);
  // A character still incomplete at the end of the call is flushed as U+FFFD (id -1: text only).
  if (stream_.pending() > 0) {
    const std::string_view tail = stream_.flush();
    if (on_token) (void)on_token(-1, tail);
  }
  return Status::ok();
}

}  // namespace pocket
