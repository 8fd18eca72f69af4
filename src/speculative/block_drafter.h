// The block drafter (DFlash-style): one non-causal forward pass proposes a block of B tokens (8 by default)
// from the target's hidden states after named layers, sharing the target's embedding and LM head. The
// package format and the exact math are in block_drafter_format.h; training is train/ (`pocket-train
// drafter`); docs/speculative.md, "Block drafter".
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "format/package.h"
#include "model/memory_plan.h"
#include "model/model.h"
#include "speculative/block_drafter_format.h"
#include "speculative/drafter.h"

namespace pocket {

// A drafter that proposes a block of tokens per pass from the target's hidden states: it must name its
// layers (Drafter::hidden_layers, non-empty) and take the rows the session reports after every target pass
// (Drafter::observe_hidden, TargetHiddenStates in drafter.h).
class BlockDrafter : public Drafter {
 public:
  static constexpr int32_t kBlockSize = kDefaultDrafterBlock;  // tokens proposed by one drafter pass

  std::span<const int32_t> hidden_layers() const override = 0;
  [[nodiscard]] Status observe_hidden(const TargetHiddenStates& states) override = 0;
};

// Placeholder that proposes nothing (the session then decodes plainly); kept for the plumbing tests.
class BlockDrafterStub final : public BlockDrafter {
 public:
  explicit BlockDrafterStub(std::vector<int32_t> layers) : layers_(std::move(layers)) {}
  const char* name() const override { return "block-stub"; }
  Expected<int32_t> propose(std::span<const int32_t>, std::span<int32_t>) override { return 0; }
  std::span<const int32_t> hidden_layers() const override { return layers_; }
  Status observe_hidden(const TargetHiddenStates&) override { return Status::ok(); }

 private:
  std::vector<int32_t> layers_;
};

// A loaded drafter package: its config and weights bound in the map. Immutable, shared by sessions.
class BlockDrafterModel {
 public:
  static Expected<std::shared_ptr<const BlockDrafterModel>> load(const std::string& path, const OpenOptions& opts = {});
  static Expected<std::shared_ptr<const BlockDrafterModel>> from_package(Package pkg);

  const BlockDrafterConfig& config() const { return config_; }
  const Package& package() const { return package_; }
  const WeightRef& fuse() const { return fuse_; }
  const WeightRef& fuse_norm() const { return fuse_norm_; }
  const WeightRef& mask_embd() const { return mask_embd_; }
  const WeightRef& output_norm() const { return output_norm_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }

  // Bytes a drafter session for a target context of n_ctx positions allocates (its KV cache, scratch and
  // block logits), for the session's memory plan. The package's own bytes are package().file_size().
  uint64_t session_bytes(int64_t n_ctx, int64_t n_threads) const;
  // The same split as a session's plan: weights = the package's bytes, kv_cache = the drafter's f16 cache
  // of n_ctx + block_size positions per layer, activations = its scratch, logits = [block_size][n_vocab].
  MemoryPlan session_plan(int64_t n_ctx, int64_t n_threads) const;

 private:
  explicit BlockDrafterModel(Package pkg) : package_(std::move(pkg)) {}
  Status bind();

  Package package_;
  BlockDrafterConfig config_;
  WeightRef fuse_, fuse_norm_, mask_embd_, output_norm_;
  std::vector<LayerWeights> layers_;
};

// The runtime drafter: the package's blocks over its own KV cache of context features, the target's
// embedding and LM head. propose() drafts min(out.size(), block_size) tokens when it holds the hidden
// states of every context position but the last (the anchor), else 0. Nothing allocated per call.
class PackagedBlockDrafter final : public BlockDrafter {
 public:
  // Refuses a drafter trained for another target (BlockDrafterConfig::check_target) with a clear error.
  static Expected<std::unique_ptr<PackagedBlockDrafter>> create(std::shared_ptr<const Model> target,
                                                                std::shared_ptr<const BlockDrafterModel> drafter,
                                                                int64_t n_ctx, ThreadPool* pool);
  ~PackagedBlockDrafter() override;

  const char* name() const override { return "block"; }
  Expected<int32_t> propose(std::span<const int32_t> context, std::span<int32_t> out) override;
  std::span<const int32_t> hidden_layers() const override;
  Status observe_hidden(const TargetHiddenStates& states) override;
  void reset() override;

  // The block rows' logits of the last propose() that drafted: [n][n_vocab] for its n drafts (all
  // block_size rows when out.size() >= block_size), row r-1 for the guess of t_{n-1+r} (tests compare them
  // with the torch module's). The LM head runs only for the drafts asked for: a session whose adaptive k
  // shrank to 2 pays for 2 rows of it.
  std::span<const float> last_logits() const;
  // Context positions whose features the drafter holds (0 .. n_observed-1). A report that would leave a
  // gap (pos0 > n_observed) is dropped, so the drafter proposes nothing until a report fills it.
  int64_t n_observed() const;
  const BlockDrafterModel& model() const;

 private:
  struct Impl;
  explicit PackagedBlockDrafter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Loads the package at `path` and creates the drafter for `target` (the two calls above).
Expected<std::unique_ptr<BlockDrafter>> load_block_drafter(const std::string& path, std::shared_ptr<const Model> target,
                                                           int64_t n_ctx, ThreadPool* pool);

}  // namespace pocket
