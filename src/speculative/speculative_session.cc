// The speculative decode loop: draft → verify (one batched target pass) → accept → roll back.
#include "speculative/speculative_session.h"

#include <algorithm>
#include <chrono>

#include "sampling/token_constraint.h"
#include "speculative/block_drafter.h"
#include "speculative/draft_model_drafter.h"

namespace pocket {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

Expected<SpecMethod> parse_spec_method(std::string_view name) {
  if (name == "none") return SpecMethod::kNone;
  if (name == "ngram") return SpecMethod::kNgram;
  if (name == "draft") return SpecMethod::kDraftModel;
  if (name == "block") return SpecMethod::kBlock;
  return invalid_argument("[speculative] unknown method '" + std::string(name) + "' (expected none, ngram, draft or block)");
}

const char* spec_method_name(SpecMethod m) {
  switch (m) {
    case SpecMethod::kNone: return "none";
    case SpecMethod::kNgram: return "ngram";
    case SpecMethod::kDraftModel: return "draft";
    case SpecMethod::kBlock: return "block";
  }
  return "?";
}

Expected<std::unique_ptr<SpeculativeSession>> SpeculativeSession::create(std::shared_ptr<const Model> target,
                                                                         const SessionOptions& opts,
                                                                         const SpeculativeOptions& spec) {
  return create(std::move(target), opts, spec, nullptr);
}

Expected<std::unique_ptr<SpeculativeSession>> SpeculativeSession::create(std::shared_ptr<const Model> target,
                                                                         const SessionOptions& opts,
                                                                         const SpeculativeOptions& spec,
                                                                         std::unique_ptr<Drafter> drafter) {
  if (target == nullptr) return invalid_argument("[speculative] target model is null");
  if (spec.draft_max < 1 || spec.draft_max > kMaxDraft) {
    return invalid_argument("[speculative] draft length k = " + std::to_string(spec.draft_max) + " is out of range: " +
                            "k must be 1.." + std::to_string(kMaxDraft) + " (the verify batch is k + 1 rows)");
  }
  const SpecFallbackOptions& fb = spec.fallback;
  if (fb.trial_rounds < 1 || fb.early_rounds < 1 || fb.plain_rounds < 1 || fb.recheck_rounds < 1 ||
      fb.backoff_min < 1 || fb.backoff_max < fb.backoff_min || !(fb.early_ratio >= 0.0 && fb.early_ratio <= 1.0)) {
    return invalid_argument("[speculative] fallback rounds must be >= 1, backoff_max >= backoff_min and early_ratio "
                            "in [0, 1] (got trial " + std::to_string(fb.trial_rounds) + ", early " +
                            std::to_string(fb.early_rounds) + " at " + std::to_string(fb.early_ratio) + ", plain " +
                            std::to_string(fb.plain_rounds) +
                            ", recheck " + std::to_string(fb.recheck_rounds) + ", backoff " +
                            std::to_string(fb.backoff_min) + ".." + std::to_string(fb.backoff_max) + ")");
  }
  if (opts.n_ctx < 0) return invalid_argument("[speculative] n_ctx must be >= 0 (0 = the package default)");
  if (opts.n_threads < 0 || opts.n_threads > 512) return invalid_argument("[speculative] n_threads must be 0..512");
  if (opts.n_batch < 0) return invalid_argument("[speculative] n_batch must be >= 0");
  const bool custom = drafter != nullptr;
  std::shared_ptr<const BlockDrafterModel> block;  // kBlock: the drafter package, loaded before the target's
                                                   // shape is fixed (it names the layers the target keeps)
  if (!custom && spec.method == SpecMethod::kBlock) {
    if (spec.draft_model_path.empty()) {
      return invalid_argument("[speculative] --spec block needs a block drafter package (-md DRAFTER.pocket, "
                              "written by pocket-train drafter for this target)");
    }
    POCKET_ASSIGN_OR_RETURN(block, BlockDrafterModel::load(spec.draft_model_path, spec.draft_open));
    POCKET_RETURN_IF_ERROR(block->config().check_target(*target));
  }
  if (!custom && spec.method == SpecMethod::kDraftModel && spec.draft_model == nullptr &&
      spec.draft_model_path.empty()) {
    return invalid_argument("[speculative] --spec draft needs a draft model (-md DRAFT.pocket)");
  }

  // A block drafter proposes at most its block per pass.
  const int32_t k_max = block != nullptr ? std::min(spec.draft_max, block->config().block_size) : spec.draft_max;
  std::unique_ptr<SpeculativeSession> s(new SpeculativeSession(k_max, spec.adaptive, spec.fallback));
  s->model_ = target;
  const int threads = opts.n_threads > 0 ? opts.n_threads : ThreadPool::default_threads();
  const int64_t rows = k_max + 1;
  SessionShape shape;
  shape.n_ctx = opts.n_ctx;
  shape.n_batch = opts.n_batch > 0 ? std::max<int64_t>(opts.n_batch, rows) : 0;
  shape.n_threads = threads;
  shape.n_logit_rows = std::max<int64_t>(opts.n_logit_rows, rows);
  if (custom) {  // a drafter reading the target's hidden states: forward() keeps its layers' outputs
    const std::span<const int32_t> layers = drafter->hidden_layers();
    shape.hidden_layers.assign(layers.begin(), layers.end());
  }
  s->pool_ = std::make_unique<ThreadPool>(threads);
  MemoryPlan block_plan;
  if (block != nullptr) {
    // The drafter's bytes (package + session) come out of the budget first; when the target alone fits
    // but not both, the session decodes plainly and says why (spec_disabled_reason()).
    const int64_t n_ctx = opts.n_ctx > 0 ? opts.n_ctx : target->config().context_length;
    block_plan = block->session_plan(n_ctx, threads);
    const uint64_t budget = opts.mem_budget_bytes, need = block_plan.total();
    shape.hidden_layers = block->config().target_layers;
    if (budget == 0 || need < budget) {
      auto tf = Transformer::create(target, shape, s->pool_.get(), budget == 0 ? 0 : budget - need);
      if (tf) {
        s->transformer_ = std::move(*tf);
      } else if (tf.status().code() != ErrorCode::kOutOfMemory) {
        return tf.status();
      }
    }
    if (s->transformer_ == nullptr) {
      shape.hidden_layers.clear();
      s->spec_disabled_reason_ =
          "the block drafter needs " + std::to_string(need >> 20) + " MiB (package " +
          std::to_string(block_plan.weights >> 20) + " MiB, session " + std::to_string(block_plan.session_total() >> 20) +
          " MiB), more than the memory budget of " + std::to_string(budget >> 20) +
          " MiB leaves beside the target; decoding without speculation";
      block.reset();
      block_plan = MemoryPlan{};
    }
  }
  if (s->transformer_ == nullptr) {
    POCKET_ASSIGN_OR_RETURN(s->transformer_, Transformer::create(target, shape, s->pool_.get(), opts.mem_budget_bytes));
  }
  if (s->transformer_->shape().n_logit_rows < rows) {  // n_ctx itself smaller than k + 1
    return invalid_argument("[speculative] a context of " + std::to_string(s->transformer_->n_ctx()) +
                            " positions cannot hold a verify batch of k + 1 = " + std::to_string(rows) + " rows");
  }
  if (custom) {
    s->drafter_ = std::move(drafter);
  } else if (spec.method == SpecMethod::kBlock) {
    if (block != nullptr) {
      POCKET_ASSIGN_OR_RETURN(s->drafter_, PackagedBlockDrafter::create(target, std::move(block),
                                                                        s->transformer_->n_ctx(), s->pool_.get()));
    }
  } else if (spec.method == SpecMethod::kNgram) {
    POCKET_ASSIGN_OR_RETURN(s->drafter_, NgramDrafter::create(spec.ngram));
  } else if (spec.method == SpecMethod::kDraftModel) {
    std::shared_ptr<const Model> draft = spec.draft_model;
    std::string label = spec.draft_model_path.empty() ? std::string("(in memory)") : spec.draft_model_path;
    if (draft == nullptr) {
      POCKET_ASSIGN_OR_RETURN(draft, Model::load(spec.draft_model_path, spec.draft_open));
    }
    POCKET_ASSIGN_OR_RETURN(auto dm, DraftModelDrafter::create(std::move(draft), *target, s->transformer_->n_ctx(),
                                                               s->pool_.get(), label));
    // The draft model's own session counts too; when the target fits the budget but not both, decode
    // plainly and say why, as with a block drafter.
    const MemoryPlan& dp = dm->plan();
    const uint64_t budget = opts.mem_budget_bytes;
    if (budget > 0 && s->transformer_->plan().total() + dp.total() > budget) {
      s->spec_disabled_reason_ = "the draft model needs " + std::to_string(dp.total() >> 20) + " MiB (package " +
                                 std::to_string(dp.weights >> 20) + " MiB, session " +
                                 std::to_string(dp.session_total() >> 20) + " MiB), more than the memory budget of " +
                                 std::to_string(budget >> 20) +
                                 " MiB leaves beside the target; decoding without speculation";
    } else {
      block_plan = dp;  // the drafter's share of the plan, below
      s->drafter_ = std::move(dm);
    }
  }
  s->plan_ = s->transformer_->plan();
  if (s->drafter_ != nullptr && block_plan.total() > 0) {  // the drafter's bytes beside the target's
    s->plan_.weights += block_plan.weights;
    s->plan_.kv_cache += block_plan.kv_cache;
    s->plan_.activations += block_plan.activations;
    s->plan_.logits += block_plan.logits;
    s->drafter_plan_ = block_plan;
  }
  s->history_.reserve(static_cast<size_t>(s->transformer_->n_ctx()));
  s->batch_.assign(static_cast<size_t>(kMaxDraft + 1), 0);
  const Tokenizer& tok = target->tokenizer();
  if (tok.eos_id() >= 0) s->stop_ids_.push_back(tok.eos_id());
  for (int32_t id : target->config().stop_tokens) s->stop_ids_.push_back(id);
  return s;
}

void SpeculativeSession::reset() {
  transformer_->truncate(0);
  history_.clear();
  pending_ = -1;
  draft_len_.reset();
  if (drafter_) drafter_->reset();
}

bool SpeculativeSession::hidden_rows_wanted() const { return !transformer_->shape().hidden_layers.empty(); }

// The first n rows of the last target pass, context positions pos0 .. pos0 + n - 1, to the drafter.
Status SpeculativeSession::report_hidden(int64_t pos0, int64_t n) {
  const std::vector<int32_t>& layers = transformer_->shape().hidden_layers;
  const int64_t rows = transformer_->hidden_rows(), d = model_->hparams().n_embd;
  if (n > rows) {
    return Status(ErrorCode::kInternal, "[speculative] " + std::to_string(n) + " hidden-state rows wanted, the pass kept " +
                                            std::to_string(rows));
  }
  TargetHiddenStates hs;
  hs.layers = layers;
  hs.data = transformer_->hidden_states();
  hs.layer_stride = rows * d;
  hs.pos0 = pos0;
  hs.n_rows = n;
  hs.n_embd = d;
  return drafter_->observe_hidden(hs);
}

bool SpeculativeSession::is_stop_token(int32_t id) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
}

Status SpeculativeSession::generate(std::string_view prompt, const GenerateOptions& opts, const TokenCallback& on_token,
                                    const std::atomic<bool>* cancel, GenerateStats* stats) {
  std::vector<int32_t> ids;
  EncodeOptions eo;
  eo.add_bos = opts.add_bos && history_.empty() && model_->config().add_bos;
  eo.parse_special = opts.parse_special;
  POCKET_RETURN_IF_ERROR(model_->tokenizer().encode(prompt, eo, &ids));
  return generate_tokens(ids, opts, on_token, cancel, stats);
}

Status SpeculativeSession::generate_tokens(std::span<const int32_t> prompt, const GenerateOptions& opts,
                                           const TokenCallback& on_token, const std::atomic<bool>* cancel,
                                           GenerateStats* stats) {
  GenerateStats local;
  GenerateStats& st = stats != nullptr ? *stats : local;
  st = GenerateStats{};
  spec_stats_ = SpecStats{};
  if (opts.n_predict < -1) return invalid_argument("[generate] n_predict must be >= -1 (-1 = until a stop token)");
  const int64_t n_ctx = transformer_->n_ctx();
  if (prompt.empty() && history_.empty()) return invalid_argument("[generate] empty prompt and nothing to continue from");
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

  const auto t0 = Clock::now();
  if (!to_eval.empty()) {
    if (hidden_rows_wanted()) {
      // Chunk by chunk, so the drafter sees every row's hidden states (forward() keeps the last chunk's).
      const int64_t start = n_past(), chunk = transformer_->shape().n_batch;
      for (size_t done = 0; done < to_eval.size();) {
        const size_t m = std::min(to_eval.size() - done, static_cast<size_t>(chunk));
        const int64_t pos0 = n_past();
        Status fs = transformer_->forward(std::span<const int32_t>(to_eval.data() + done, m), false, cancel);
        if (fs.is_ok()) fs = report_hidden(pos0, static_cast<int64_t>(m));
        if (!fs.is_ok()) {
          transformer_->truncate(start);  // as one forward() of the whole prompt would leave it
          return fs;
        }
        done += m;
      }
    } else {
      POCKET_RETURN_IF_ERROR(transformer_->forward(to_eval, /*all_logits=*/false, cancel));
    }
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

  // Decode. Invariant at the top of each round: `next` was drawn from the target's distribution after
  // history_, and every token of history_ is in the KV cache. Each emitted token costs exactly one draw,
  // in the same order as the plain Session, so a fixed seed sees the same stream of uniforms.
  const Tokenizer& tok = model_->tokenizer();
  const auto t1 = Clock::now();
  stream_.reset();
  int32_t prev = history_.empty() ? -1 : history_.back();
  // A constraint (grammar, JSON schema) masks each row before its draw and advances only through emitted
  // tokens, exactly as in the plain Session: row i of a verify pass is masked in the state after the tokens
  // accepted before it, so nothing about it rolls back. A draft the grammar forbids is simply rejected.
  TokenConstraint* con = opts.constraint;
  const int32_t n_vocab = static_cast<int32_t>(model_->hparams().n_vocab);
  std::vector<float> stop_logits(stop_ids_.size());
  Status con_error = Status::ok();
  // Draws from `logits` (masked first under a constraint); `n_before` = the tokens before the drawn one, as
  // the plain session's cache length when it draws the same token.
  auto draw = [&](float* logits, int64_t n_before) -> Expected<int32_t> {
    if (con != nullptr) {
      const auto tc = Clock::now();
      POCKET_RETURN_IF_ERROR(
          mask_constrained_draw(*con, opts, stop_ids_, logits, n_vocab, n_ctx, n_before, st.n_generated, stop_logits));
      st.constraint_seconds += seconds_since(tc);
    }
    return sampler.sample(logits);
  };
  enum class Step { kContinue, kStop, kError };
  // Emits `id` (or recognises a stop token); says whether generation goes on and records why not.
  auto deliver = [&](int32_t id) -> Step {
    if (opts.stop_at_eos && is_stop_token(id)) {
      st.stop = StopReason::kStopToken;
      return Step::kStop;
    }
    if (con != nullptr) {
      const auto tc = Clock::now();
      con_error = con->accept(id);
      st.constraint_seconds += seconds_since(tc);
      ++st.n_constrained;
      if (!con_error.is_ok()) return Step::kError;
    }
    ++st.n_generated;
    sampler.accept(id);
    const bool keep_going = on_token ? on_token(id, stream_.feed(tok.decode_piece(prev, id))) : true;
    prev = id;
    if (!keep_going) {
      st.stop = StopReason::kCallback;
      return Step::kStop;
    }
    if (con != nullptr && con->done()) {
      st.stop = StopReason::kConstraintDone;
      return Step::kStop;
    }
    if (opts.n_predict > 0 && st.n_generated >= opts.n_predict) {
      st.stop = StopReason::kLength;
      return Step::kStop;
    }
    return Step::kContinue;
  };
  auto finish = [&](Status s) {
    st.decode_seconds = seconds_since(t1);
    return s;
  };

  Expected<int32_t> first = draw(transformer_->mutable_logits(0), n_past());
  if (!first) return finish(first.status());
  int32_t next = *first;
  int32_t* const draft = batch_.data() + 1;
  fallback_.restart();
  for (;;) {
    const Step step = deliver(next);
    if (step == Step::kError) return finish(con_error);  // not emitted (the plain Session's order)
    if (step == Step::kStop) {
      if (st.stop != StopReason::kStopToken) pending_ = next;  // emitted, evaluated by the next call
      break;
    }
    if (n_past() >= n_ctx) {
      st.stop = StopReason::kContextFull;
      pending_ = next;
      break;
    }
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      pending_ = next;
      return finish(Status(ErrorCode::kCancelled, "[generate] cancelled"));
    }
    // Draft: at most k, no more rows than the context holds after `next`, no more tokens than are wanted;
    // none while speculation is measured slower than plain decoding.
    const auto round_start = Clock::now();
    const int64_t emitted_before = st.n_generated;
    const bool speculate = fallback_.speculate();
    int64_t k = drafter_ && speculate ? draft_len_.current() : 0;
    k = std::min<int64_t>(k, n_ctx - n_past() - 1);
    if (opts.n_predict > 0) k = std::min<int64_t>(k, opts.n_predict - st.n_generated);
    history_.push_back(next);  // the context the drafter continues (capacity n_ctx: no reallocation)
    int32_t nd = 0;
    if (k > 0) {
      Expected<int32_t> got = drafter_->propose(history_, std::span<int32_t>(draft, static_cast<size_t>(k)));
      if (!got) {
        history_.pop_back();
        pending_ = next;
        return finish(got.status());
      }
      nd = std::clamp<int32_t>(*got, 0, static_cast<int32_t>(k));
    }
    // Verify: `next` and the draft in one batched pass, logits for every row.
    batch_[0] = next;
    Status fs = transformer_->forward(std::span<const int32_t>(batch_.data(), static_cast<size_t>(nd) + 1),
                                      /*all_logits=*/true, cancel);
    if (!fs.is_ok()) {
      history_.pop_back();
      pending_ = next;
      return finish(fs);
    }
    ++spec_stats_.n_passes;
    if (!speculate) ++spec_stats_.n_plain;
    spec_stats_.n_drafted += nd;
    // Accept: row i holds the target's distribution after history_ + draft[0..i). Draw from it; while the
    // draw equals the draft token the next row is valid too. The first draw that differs (or the draw from
    // the last row, the bonus) becomes `next`; the cache rolls back past the rejected draft tokens.
    const int64_t base = n_past() - nd;  // cache length holding history_ (with `next`), without the draft
    int32_t i = 0;
    bool done = false;
    auto fail_in_round = [&](Status s) {  // keep what was accepted before row i, drop the rest
      transformer_->truncate(base + i);
      history_.insert(history_.end(), draft, draft + i);
      if (hidden_rows_wanted()) (void)report_hidden(base - 1, i + 1);  // keep the drafter in step
      return finish(std::move(s));
    };
    for (;; ++i) {
      Expected<int32_t> y = draw(transformer_->mutable_logits(i), base + i);
      if (!y) return fail_in_round(y.status());
      if (i < nd && *y == draft[i]) {
        const Step step = deliver(*y);
        if (step == Step::kContinue) continue;
        if (step == Step::kError) return fail_in_round(con_error);
        // Generation ends on an accepted draft token: keep what precedes it evaluated.
        if (st.stop != StopReason::kStopToken) pending_ = *y;
        done = true;
      } else {
        next = *y;
      }
      break;
    }
    transformer_->truncate(base + i);  // roll back: forget the draft tokens after the accepted prefix
    history_.insert(history_.end(), draft, draft + i);
    if (hidden_rows_wanted()) {  // rows 0 .. i (`next` and the accepted drafts) are now context
      if (Status hs = report_hidden(base - 1, i + 1); !hs.is_ok()) {
        if (!done) pending_ = next;  // chosen but not delivered: the next call evaluates it first
        return finish(hs);
      }
    }
    const int32_t matched = i + (done ? 1 : 0);  // a draft token that ended generation still matched
    spec_stats_.n_accepted += matched;
    if (nd > 0) {
      drafter_->observe(nd, matched);
      draft_len_.update(nd, matched);
    }
    if (done) break;
    // This round's tokens: those delivered plus `next`, chosen here and delivered at the top of the loop.
    fallback_.record(st.n_generated - emitted_before + 1, seconds_since(round_start));
  }
  st.decode_seconds = seconds_since(t1);
  if (stream_.pending() > 0) {
    const std::string_view tail = stream_.flush();
    if (on_token) (void)on_token(-1, tail);
  }
  return Status::ok();
}

}  // namespace pocket
