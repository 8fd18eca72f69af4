// The block drafter's runtime. (Being written: load/bind and the forward pass land next; until then every
// entry point refuses with kUnsupported.)
#include "speculative/block_drafter.h"

namespace pocket {

struct PackagedBlockDrafter::Impl {};

PackagedBlockDrafter::PackagedBlockDrafter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PackagedBlockDrafter::~PackagedBlockDrafter() = default;

Expected<std::shared_ptr<const BlockDrafterModel>> BlockDrafterModel::load(const std::string& path,
                                                                           const OpenOptions&) {
  return unsupported("[drafter] " + path + ": loading block drafters is not implemented yet");
}

Expected<std::shared_ptr<const BlockDrafterModel>> BlockDrafterModel::from_package(Package) {
  return unsupported("[drafter] loading block drafters is not implemented yet");
}

uint64_t BlockDrafterModel::session_bytes(int64_t, int64_t) const { return 0; }

Expected<std::unique_ptr<PackagedBlockDrafter>> PackagedBlockDrafter::create(std::shared_ptr<const Model>,
                                                                             std::shared_ptr<const BlockDrafterModel>,
                                                                             int64_t, ThreadPool*) {
  return unsupported("[drafter] block drafters are not implemented yet");
}

Expected<int32_t> PackagedBlockDrafter::propose(std::span<const int32_t>, std::span<int32_t>) { return 0; }
std::span<const int32_t> PackagedBlockDrafter::hidden_layers() const { return {}; }
Status PackagedBlockDrafter::observe_hidden(const TargetHiddenStates&) { return Status::ok(); }
void PackagedBlockDrafter::reset() {}
std::span<const float> PackagedBlockDrafter::last_logits() const { return {}; }
int64_t PackagedBlockDrafter::n_observed() const { return 0; }

Expected<std::unique_ptr<BlockDrafter>> load_block_drafter(const std::string& path, std::shared_ptr<const Model> target,
                                                           int64_t n_ctx, ThreadPool* pool) {
  POCKET_ASSIGN_OR_RETURN(auto model, BlockDrafterModel::load(path));
  POCKET_ASSIGN_OR_RETURN(auto d, PackagedBlockDrafter::create(std::move(target), std::move(model), n_ctx, pool));
  return std::unique_ptr<BlockDrafter>(std::move(d));
}

}  // namespace pocket
