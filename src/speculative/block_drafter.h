// The block-drafter slot — an INTERFACE AND A STUB, NOT A WORKING DRAFTER. The trained block drafter (one
// forward pass proposing a whole block of 8 tokens, conditioned on the target's hidden states) plugs in
// here once train/ produces it. The session side is wired: SpeculativeSession keeps the layers the drafter
// names and reports the accepted rows' hidden states after every target pass. See docs/speculative.md,
// "Block drafter: what is left".
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "speculative/drafter.h"

namespace pocket {

// A drafter that proposes a block of kBlockSize tokens per pass from the target's hidden states: it must
// name its layers (Drafter::hidden_layers, non-empty) and take the rows the session reports after every
// target pass (Drafter::observe_hidden, TargetHiddenStates in drafter.h).
class BlockDrafter : public Drafter {
 public:
  static constexpr int32_t kBlockSize = 8;  // tokens proposed by one drafter pass

  std::span<const int32_t> hidden_layers() const override = 0;
  [[nodiscard]] Status observe_hidden(const TargetHiddenStates& states) override = 0;
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
