// A smaller model as the drafter: any .pocket whose vocabulary matches the target's token for token. It
// keeps its own KV cache, reuses the longest prefix it shares with the context and drafts greedily.
// Not thread-safe: one per session.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"
#include "model/transformer.h"
#include "speculative/drafter.h"

namespace pocket {

// Ok when `draft` can draft for `target`: the same vocabulary size (LM head rows and tokenizer), the same
// BOS/EOS ids and the same bytes for every token. Otherwise kInvalidArgument naming the first difference;
// `draft_label` (a path) goes into the message.
Status check_vocab_compatible(const Model& target, const Model& draft, const std::string& draft_label);

class DraftModelDrafter final : public Drafter {
 public:
  // Checks the vocabulary, then plans a cache of min(n_ctx, the draft's trained context) positions. The
  // pool is the session's (drafting and verifying never overlap); it must outlive the drafter.
  static Expected<std::unique_ptr<DraftModelDrafter>> create(std::shared_ptr<const Model> draft, const Model& target,
                                                             int64_t n_ctx, ThreadPool* pool,
                                                             const std::string& draft_label = "draft model");

  const char* name() const override { return "draft"; }
  // Brings the draft's cache to `context` (truncating to the shared prefix, evaluating the rest in one
  // batch), then decodes greedily; argmax ties go to the lowest id. Proposes fewer tokens near the end of
  // the draft's context, none past it.
  Expected<int32_t> propose(std::span<const int32_t> context, std::span<int32_t> out) override;
  void reset() override;

  const Model& model() const { return *model_; }
  // The draft's own session: its package bytes (weights), KV cache, scratch and logits.
  const MemoryPlan& plan() const;
  // The same plan without creating anything (pocket plan): a draft session for a target context of n_ctx.
  static MemoryPlan plan_for(const Model& draft, int64_t n_ctx, int64_t n_threads);

 private:
  DraftModelDrafter() = default;
  int32_t argmax() const;

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Transformer> tf_;
  std::vector<int32_t> evaluated_;  // tokens in the draft's cache, reserved to its n_ctx at creation
};

}  // namespace pocket
