// A block drafter with random weights for a given target (tests, benchmarks, `pocket synth --drafter-for`):
// the package format of block_drafter_format.h, so loading, memory and speed can be measured before a
// drafter is trained. Its drafts are noise; the session stays lossless and mostly rejects them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/dtype.h"

namespace pocket {

class Model;

struct BlockDrafterSynthOptions {
  int64_t n_layers = 1;                // drafter blocks (the target's block shape)
  std::vector<int32_t> target_layers;  // tapped target layers; empty: up to 3 spread over the target's
                                       // layers (first, middle, last)
  int32_t block_size = 8;              // 1..16
  DType dtype = DType::kF16;           // weight matrices (norms and mask_embd stay f32)
  uint64_t seed = 1;
};

// Writes a drafter package for `target` (its fingerprint, width, vocabulary and head layout) to `path`.
Status write_random_block_drafter(const Model& target, const BlockDrafterSynthOptions& o, const std::string& path);

}  // namespace pocket
