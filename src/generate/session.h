// Session: one conversation with a Model — its KV cache and scratch (Transformer), sampler, thread pool
// and text streaming. Create many over one shared Model; each Session is used by one thread at a time.
//
// Generation policy (RELIABILITY.md 14–17):
//   * a prompt longer than the context is refused with kContextExceeded before anything is evaluated;
//   * generation stops with StopReason::kContextFull when the KV cache is full (never a silent wrap);
//   * n_predict: 0 evaluates the prompt only, -1 generates until a stop token or the context is full,
//     values below -1 are rejected;
//   * cancellation is checked between layers in prefill and between tokens in decode; a cancelled
//     call returns kCancelled and the session keeps every token evaluated before it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "model/transformer.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"
#include "tokenizer/stream_decoder.h"

namespace pocket {

struct SessionOptions {
  int64_t n_ctx = 0;       // 0: the package's default context length
  int32_t n_threads = 0;   // 0: the number of physical cores
  int64_t n_batch = 0;     // rows per forward pass in prefill; 0: min(n_ctx, 128) (kDefaultBatch)
  int64_t n_logit_rows = 1;  // rows whose logits one forward can return (teacher forcing, verification)
  uint64_t mem_budget_bytes = 0;  // 0: no budget
};

struct GenerateOptions {
  int32_t n_predict = 128;
  SamplingParams sampling = SamplingParams::greedy();
  bool add_bos = true;          // ignored when the vocabulary has no BOS
  bool parse_special = false;   // special-token text in the prompt becomes special tokens
  bool stop_at_eos = true;      // stop at EOS and the package's stop tokens
  // Restricts every generated token (grammar, JSON schema, copy-from-input; constrain/). Not owned; used by
  // one call. Stop tokens are allowed only where the constraint can stop; generation ends by itself when
  // the constraint is done. NULL: unconstrained.
  TokenConstraint* constraint = nullptr;
};

// kConstraintDone: the constraint admits nothing more (a complete JSON value); the output is complete.
enum class StopReason { kNone, kLength, kStopToken, kContextFull, kCallback, kConstraintDone };

struct GenerateStats {
  int64_t n_prompt = 0;
  int64_t n_generated = 0;
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
  StopReason stop = StopReason::kNone;
  double constraint_seconds = 0.0;  // time spent masking logits and advancing the constraint (in decode)
  int64_t n_constrained = 0;        // tokens sampled under a constraint
  double prefill_tps() const { return prefill_seconds > 0 ? n_prompt / prefill_seconds : 0.0; }
  double decode_tps() const { return decode_seconds > 0 ? n_generated / decode_seconds : 0.0; }
};

// Receives each generated token and the text it completes (possibly empty while a multi-byte character is
// still partial). A character still incomplete when the call ends is delivered as U+FFFD in one last call
// with id -1 (text only, no new token). Return false to stop generating.
using TokenCallback = std::function<bool(int32_t id, std::string_view text)>;

// Masks `logits` for a draw under `con`, as every session does before drawing a constrained token: the
// tokens `con` forbids now go to -infinity; the stop tokens come back (their logits saved in `stop_scratch`,
// one per stop id) where the constraint may end and the call stops at them. The constraint is told how many
// tokens the call may still emit: the request's limit (n_predict > 0) and the room left in an n_ctx context
// when `n_past` tokens precede the drawn one.
Status mask_constrained_draw(TokenConstraint& con, const GenerateOptions& opts, std::span<const int32_t> stop_ids,
                             float* logits, int32_t n_vocab, int64_t n_ctx, int64_t n_past, int64_t n_generated,
                             std::span<float> stop_scratch);

class Session {
 public:
  static Expected<std::unique_ptr<Session>> create(std::shared_ptr<const Model> model, const SessionOptions& opts = {});

  // Encodes `prompt`, evaluates it after whatever the session already holds, then generates.
  Status generate(std::string_view prompt, const GenerateOptions& opts, const TokenCallback& on_token,
                  const std::atomic<bool>* cancel = nullptr, GenerateStats* stats = nullptr);
  // The same from token ids.
  Status generate_tokens(std::span<const int32_t> prompt, const GenerateOptions& opts, const TokenCallback& on_token,
                         const std::atomic<bool>* cancel = nullptr, GenerateStats* stats = nullptr);

  // Forgets everything (KV cache, sampler history).
  void reset();

  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& shared_model() const { return model_; }
  Transformer& transformer() { return *transformer_; }
  // The session's workers (another Transformer over the same model may run on them, one call at a time).
  ThreadPool* pool() { return pool_.get(); }
  int64_t n_past() const { return transformer_->n_past(); }
  int32_t n_threads() const { return pool_->n_threads(); }
  const MemoryPlan& plan() const { return transformer_->plan(); }
  // Tokens evaluated so far (prompt and generated), in order; the last emitted token is evaluated by the
  // next call.
  const std::vector<int32_t>& history() const { return history_; }

 private:
  Session() = default;
  bool is_stop_token(int32_t id) const;

  std::shared_ptr<const Model> model_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Transformer> transformer_;
  std::vector<int32_t> history_;  // evaluated tokens, reserved to n_ctx at creation
  int32_t pending_ = -1;          // emitted by the last call but not yet evaluated
  std::vector<int32_t> stop_ids_;
  Utf8StreamDecoder stream_;      // holds back partial UTF-8 characters between tokens
};

}  // namespace pocket
