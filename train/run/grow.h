// Depth and width growth: a trained model -> a deeper one that computes exactly the same function, so extra capacity
// can be trained on top of what the smaller model already knows instead of from scratch (`pocket-train grow`,
// docs/pocket-nano.md). Torch-free: it works on NamedTensor weights.
//
// Layer j of the grown model (L' layers) comes from layer floor(j * L / L') of the source (L layers): 4 -> 8
// gives 0,0,1,1,2,2,3,3. The first copy of each source layer is that layer verbatim; every further copy has
// the source's weights except its two residual outputs (attn_output.weight and ffn_down.weight), which are
// zero, so the block adds nothing to the residual stream: the grown model's logits equal the source's, and
// training moves the new blocks away from identity (their output matrices get gradients from the first step;
// the other matrices start as the source layer's, a useful initialisation for attention and FFN features).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/hparams.h"
#include "run/named_tensor.h"

namespace pocket::train {

struct GrownModel {
  HParams hparams;                   // the source's, with n_layers = new_layers
  std::vector<NamedTensor> weights;  // in the source's order: non-layer tensors, then blk.0.*, blk.1.*, ...
  std::vector<int64_t> source_layer; // source_layer[j]: the source layer grown layer j was copied from
};

// Errors: new_layers <= the source's layer count or > 256, a weight name "blk.N.*" with N out of range, or a
// layer whose attn_output.weight / ffn_down.weight is missing.
Expected<GrownModel> grow_depth(const HParams& from, const std::vector<NamedTensor>& weights, int64_t new_layers);

// Width growth: the same function with a wider residual stream (n_embd), more attention heads (query and KV
// heads in the source's ratio, head_dim unchanged) and a wider FFN. Every source weight keeps its place in
// the top-left block of its grown matrix; of the new entries,
//   - everything that writes into the residual stream is zero: token_embd's (and an untied output's) new
//     columns, attn_output's and ffn_down's new rows and columns -- so the new residual dimensions stay
//     exactly 0 and new heads / FFN units add nothing;
//   - everything that reads from it is Normal(0, 0.02) from `seed` (new rows and columns of attn_q/k/v,
//     ffn_gate/up; new q/k/v biases are 0): with zero inputs it changes nothing, and it gives the new
//     dimensions gradients from the first step.
// RMSNorm divides by the mean square over the wider width, which the zeros dilute by d/d': the norm weights
// (attn_norm, ffn_norm, output_norm; new entries too) are multiplied by sqrt(d/d') and norm_eps by d/d',
// which restores every normalised value exactly (up to float rounding). Errors: a width, head count or FFN
// below the source's, nothing wider, a query/KV head ratio other than the source's, a tensor with an
// unexpected shape or name, a grown architecture HParams::validate refuses.
struct WidthSpec {
  int64_t n_embd = 0, n_heads = 0, n_kv_heads = 0, n_ff = 0;  // 0 = the source's
  uint64_t seed = 1;
};
Expected<GrownModel> grow_width(const HParams& from, const std::vector<NamedTensor>& weights, const WidthSpec& spec);

}  // namespace pocket::train
