// SpeculativeSession: a Session whose decode loop drafts k tokens, verifies them with the target in one
// batched pass (k + 1 rows) and keeps the longest accepted prefix plus one token from the target, rolling
// the KV cache back past the rest. Lossless: greedy output is token for token the plain Session's, and
// with sampling every emitted token is drawn from the target's distribution (drafter.h, rejection.h).
// Same API and generation policy as generate/session.h; one thread at a time per session.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "generate/session.h"
#include "speculative/draft_length.h"
#include "speculative/drafter.h"
#include "speculative/ngram_drafter.h"
#include "speculative/spec_fallback.h"

namespace pocket {

enum class SpecMethod { kNone, kNgram, kDraftModel, kBlock };

// "none", "ngram", "draft", "block" (the block drafter package is SpeculativeOptions::draft_model_path).
Expected<SpecMethod> parse_spec_method(std::string_view name);
const char* spec_method_name(SpecMethod m);

struct SpeculativeOptions {
  SpecMethod method = SpecMethod::kNgram;
  int32_t draft_max = 8;   // k, the longest draft: 1..kMaxDraft (0 or more is refused)
  bool adaptive = true;    // shrink/grow k with acceptance (draft_length.h); false: always draft_max
  SpecFallbackOptions fallback;  // decode plainly while speculation is measured slower (spec_fallback.h)
  NgramOptions ngram;
  std::shared_ptr<const Model> draft_model;  // kDraftModel: an already loaded draft, or
  std::string draft_model_path;              // ... the package to load (kBlock: the drafter package),
  OpenOptions draft_open;                    // ... opened this way (mapped or read, like the target)
};

// Counts of the last generate call's decode loop (the prefill excluded).
struct SpecStats {
  int64_t n_passes = 0;    // target forward passes in decode, each a verify batch of 1 + drafted rows
  int64_t n_drafted = 0;   // draft tokens sent to verification
  int64_t n_accepted = 0;  // draft tokens the target accepted
  int64_t n_plain = 0;     // passes decoded plainly because speculation was measured slower (or to measure)
  // Tokens each target pass yields: its accepted drafts plus the one the target itself picks.
  double tokens_per_pass() const { return n_passes > 0 ? static_cast<double>(n_accepted + n_passes) / n_passes : 0.0; }
  double acceptance_rate() const { return n_drafted > 0 ? static_cast<double>(n_accepted) / n_drafted : 0.0; }
};

class SpeculativeSession {
 public:
  // Validates `spec` (k in 1..16, n-gram sizes, a draft model with the target's vocabulary) and sizes every
  // buffer: the target's batch holds at least k + 1 rows and returns logits for all of them.
  static Expected<std::unique_ptr<SpeculativeSession>> create(std::shared_ptr<const Model> target,
                                                              const SessionOptions& opts,
                                                              const SpeculativeOptions& spec);
  // With a caller-supplied drafter (tests, the block drafter once trained); spec.method is ignored.
  static Expected<std::unique_ptr<SpeculativeSession>> create(std::shared_ptr<const Model> target,
                                                              const SessionOptions& opts,
                                                              const SpeculativeOptions& spec,
                                                              std::unique_ptr<Drafter> drafter);

  Status generate(std::string_view prompt, const GenerateOptions& opts, const TokenCallback& on_token,
                  const std::atomic<bool>* cancel = nullptr, GenerateStats* stats = nullptr);
  Status generate_tokens(std::span<const int32_t> prompt, const GenerateOptions& opts, const TokenCallback& on_token,
                         const std::atomic<bool>* cancel = nullptr, GenerateStats* stats = nullptr);
  void reset();

  const Model& model() const { return *model_; }
  Transformer& transformer() { return *transformer_; }
  int64_t n_past() const { return transformer_->n_past(); }
  int32_t n_threads() const { return pool_->n_threads(); }
  // The target's plan plus, with a block drafter or a draft model, the drafter's package and session bytes
  // (drafter_plan()).
  const MemoryPlan& plan() const { return plan_; }
  // The block drafter's or draft model's share of plan(): zero without one.
  const MemoryPlan& drafter_plan() const { return drafter_plan_; }
  // Non-empty when the requested speculation was switched off at creation and the session decodes plainly:
  // why (a block drafter that does not fit the memory budget beside the target).
  const std::string& spec_disabled_reason() const { return spec_disabled_reason_; }
  const std::vector<int32_t>& history() const { return history_; }
  const SpecStats& spec_stats() const { return spec_stats_; }
  const SpecFallback& fallback() const { return fallback_; }
  const Drafter* drafter() const { return drafter_.get(); }  // null for SpecMethod::kNone
  int32_t draft_max() const { return draft_max_; }

 private:
  SpeculativeSession(int32_t k_max, bool adaptive, const SpecFallbackOptions& fallback)
      : draft_len_(k_max, adaptive), fallback_(fallback), draft_max_(k_max) {}
  bool is_stop_token(int32_t id) const;
  bool hidden_rows_wanted() const;                 // the drafter reads the target's hidden states
  [[nodiscard]] Status report_hidden(int64_t pos0, int64_t n);  // rows 0 .. n - 1 of the last pass

  std::shared_ptr<const Model> model_;
  std::unique_ptr<ThreadPool> pool_;  // declared before the drafter, which may borrow it
  std::unique_ptr<Transformer> transformer_;
  std::unique_ptr<Drafter> drafter_;
  MemoryPlan plan_, drafter_plan_;
  std::string spec_disabled_reason_;
  AdaptiveDraftLength draft_len_;
  SpecFallback fallback_;
  int32_t draft_max_;
  std::vector<int32_t> history_;  // evaluated tokens, reserved to n_ctx at creation
  std::vector<int32_t> batch_;    // [1 + kMaxDraft]: the pending token then the draft
  int32_t pending_ = -1;          // emitted by the last call but not yet evaluated
  std::vector<int32_t> stop_ids_;
  Utf8StreamDecoder stream_;
  SpecStats spec_stats_;
};

}  // namespace pocket
