// The block-drafter slot: loading is not implemented until the trained drafter exists.
#include "speculative/block_drafter.h"

namespace pocket {

Expected<std::unique_ptr<BlockDrafter>> load_block_drafter(const std::string& path) {
  return unsupported("[speculative] block drafter " + path +
                     ": not implemented yet — the block drafter is trained later (train/) and plugs into "
                     "BlockDrafter; use --spec ngram or --spec draft");
}

}  // namespace pocket
