// The block-drafter slot — an INTERFACE AND A STUB, NOT A WORKING DRAFTER. The trained block drafter (one
// forward pass proposing a whole block of 8 tokens, conditioned on the target's hidden states) plugs in
// here once train/ produces it. See docs/speculative.md, "Block drafter: what is left".
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "speculative/drafter.h"

namespace pocket {

// The target's residual stream after chosen layers for the rows of one verify pass.
struct TargetHiddenStates {
  std::span<const int32_t> layers;  // target layer indices, as returned by BlockDrafter::hidden_layers()
  const float* data = nullptr;      // [layers.size()][n_rows][n_embd], f32, row-major
  int64_t n_rows = 0;               // rows of the verify pass that were accepted (context positions)
  int64_t n_embd = 0;
};

class BlockDrafter : public Drafter {
 public:
  static constexpr int32_t kBlockSize = 8;  // tokens proposed by one drafter pass

  // The target layers whose outputs the drafter reads (fixed for its lifetime).
  virtual std::span<const int32_t> hidden_layers() const = 0;
  // Called after every target pass with the hidden states of the accepted rows, before the next propose().
  [[nodiscard]] virtual Status observe_hidden(const TargetHiddenStates& states) = 0;
};

// Placeholder so the plumbing can be built and tested: it proposes nothing (the session then decodes
// plainly) and ignores the hidden states. It exists ONLY to hold the slot; it never speeds anything up.
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

// Loading a trained block drafter is not implemented yet: always kUnsupported with a message saying so.
Expected<std::unique_ptr<BlockDrafter>> load_block_drafter(const std::string& path);

}  // namespace pocket
