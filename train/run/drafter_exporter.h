// The block drafter's package (src/speculative/block_drafter_format.h): its config derived from the target
// package, the tensor list, export through the model exporter's quantiser, and reading a package back to
// f32 (to measure what quantisation costs). Torch-free.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "format/dtype.h"
#include "run/named_tensor.h"
#include "speculative/block_drafter_format.h"

namespace pocket::train {

// A drafter config for the target package at `target_path`: its blocks are the target's hyper-parameters
// with n_layers = `n_layers`; the target's name, fingerprint (package_fingerprint), layers, vocabulary and
// width are filled in. Validated.
Expected<BlockDrafterConfig> drafter_config_for_target(const std::string& target_path, int64_t n_layers,
                                                       const std::vector<int32_t>& target_layers, int32_t block_size);

// The drafter tensors' names and shapes, in file order (fuse, fuse_norm, mask_embd, blk.*, output_norm).
std::vector<std::pair<std::string, std::vector<int64_t>>> drafter_tensor_shapes(const BlockDrafterConfig& c);

// Writes the drafter package: descriptor c.to_json(), the target's tokenizer and inference config sections
// copied from `target_path`, matrices as `matrix_type` (quantised like the model exporter), vectors f32.
// Checks every tensor is present with its shape, and that the target at `target_path` is c's target.
Status export_block_drafter(const BlockDrafterConfig& c, const std::vector<NamedTensor>& weights,
                            const std::string& target_path, DType matrix_type, const std::string& path);

struct ImportedDrafter {
  BlockDrafterConfig config;
  std::vector<NamedTensor> weights;  // drafter_tensor_shapes order, decoded to f32
};
// Reads a drafter package back: the descriptor through BlockDrafterConfig::from_json, every tensor decoded
// by the runtime's row decoder.
Expected<ImportedDrafter> import_block_drafter(const std::string& path);

}  // namespace pocket::train
