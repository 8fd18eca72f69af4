// The block drafter's package: what train/ writes and the runtime reads (docs/speculative.md, "Block
// drafter"). A drafter package is an ordinary .pocket (the five sections) whose descriptor is the drafter's
// own transformer blocks in the HParams keys plus the keys below; it holds no embedding and no LM head —
// those are the target's, shared.
//
// Descriptor (JSON), beyond HParams (n_embd = the target's width, n_layers = the drafter's blocks,
// n_vocab = the target's vocabulary, tied_embeddings true, no biases or q/k norms):
//   "kind": "drafter", "drafter": "block",
//   "block_size": B            tokens proposed per drafter pass (1..16; 8 by default),
//   "target_layers": [l0, ...] the target layers whose outputs (residual stream after the layer) are fused,
//                              increasing, each < target.n_layers,
//   "target": {"name": s, "fingerprint": "xxh3:<16 hex>", "n_layers": n, "n_vocab": v, "n_embd": d}
//                              fingerprint = the target package's tensor-data section checksum (XXH3-64 of
//                              its stored bytes, as in its section table): a drafter runs only with the
//                              exact weights it was trained against.
// Tensors (row-major [rows, cols]; matrices any matrix dtype, vectors f32):
//   fuse.weight          [n_embd, n_taps * n_embd]  the tapped hidden states, concatenated in target_layers order
//   fuse_norm.weight     [n_embd]
//   mask_embd.weight     [n_embd]                   the input of every row after the anchor
//   blk.<l>.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}.weight
//                                                   the target's layer names and shapes
//   output_norm.weight   [n_embd]                   the drafter's own final norm before the shared LM head
//
// The math (the torch module in train/ and the runtime compute exactly this). Context tokens t_0 .. t_{n-1};
// the target has evaluated t_0 .. t_{n-2} (their hidden states H_j = concat over target_layers of the
// residual stream after that layer at position j); t_{n-1}, the anchor, leads the next verify pass.
//   c_j      = rmsnorm(fuse · H_j) * fuse_norm                                  context feature, j <= n-2
//   layer l: K_j = rope_j(Wk_l c_j), V_j = Wv_l c_j for context positions (no per-layer norm on c_j)
//   block rows r = 0..B at positions n-1+r: x_0 = token_embd[t_{n-1}] (the target's), x_r = mask_embd
//   each layer, pre-norm Llama block with the target's rope (style, theta) and head layout:
//     a = rmsnorm(x) * attn_norm; q, k, v = Wq a, Wk a, Wv a; rope on q, k at the row's position
//     every block row attends to ALL context positions 0..n-2 and ALL block rows 0..B (non-causal in the
//     block), softmax(q·k / sqrt(head_dim)), grouped-query heads as in the target
//     x += Wo attn; b = rmsnorm(x) * ffn_norm; x += Wdown(silu(Wgate b) * Wup b)
//   logits_r = output(rmsnorm(x_r) * output_norm) with the target's LM head, r = 1..B
//   draft d_r = argmax logits_r (lowest id on ties): the guess for t_{n-1+r}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "format/package.h"
#include "model/hparams.h"

namespace pocket {

class Model;

inline constexpr const char* kDrafterFuse = "fuse.weight";
inline constexpr const char* kDrafterFuseNorm = "fuse_norm.weight";
inline constexpr const char* kDrafterMaskEmbd = "mask_embd.weight";
inline constexpr const char* kDrafterOutputNorm = "output_norm.weight";
inline constexpr int32_t kDefaultDrafterBlock = 8;

struct BlockDrafterConfig {
  HParams blocks;                      // the drafter's own blocks (n_layers = drafter layers)
  int32_t block_size = kDefaultDrafterBlock;
  std::vector<int32_t> target_layers;  // tapped target layers, increasing
  std::string target_name;
  uint64_t target_fingerprint = 0;
  int64_t target_n_layers = 0;
  int64_t target_n_vocab = 0;
  int64_t target_n_embd = 0;

  int64_t n_taps() const { return static_cast<int64_t>(target_layers.size()); }
  // Internal consistency, naming the bad field.
  Status validate() const;
  std::string to_json() const;  // the package descriptor
  static Expected<BlockDrafterConfig> from_json(std::string_view json);
  // kInvalidArgument naming both sides when `target` is not the model this drafter was trained against.
  Status check_target(const Model& target) const;
};

// The target identity a drafter names: its tensor-data section checksum.
uint64_t package_fingerprint(const Package& p);
std::string fingerprint_string(uint64_t fp);  // "xxh3:0123456789abcdef"

// True when a descriptor declares a drafter package ("kind": "drafter"); such a package is not a model.
bool is_drafter_descriptor(std::string_view descriptor_json);

}  // namespace pocket
