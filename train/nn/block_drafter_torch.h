// The block drafter in libtorch, computing exactly the math of src/speculative/block_drafter_format.h, and
// the frozen target's tapped hidden states. Parameter names are the package's tensor names
// ("fuse.weight", "blk.0.attn_q.weight", ...). Internal to train/ (includes torch).
//
// Training evaluates many anchor blocks of a sequence in one pass: the context features c_j are computed
// once per sequence, and each block's B+1 rows attend to the context positions before their anchor and to
// all rows of their own block (a block attention mask), never to another block's rows.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <vector>

#include "core/status.h"
#include "nn/llama_torch.h"
#include "run/named_tensor.h"
#include "speculative/block_drafter_format.h"

namespace pocket::train {

// [n, head_dim/2] RoPE tables for positions 0..n-1 (freq_i = theta^(-2i/head_dim), float angles, as the
// runtime and LlamaImpl compute them).
void drafter_rope_tables(const HParams& h, int64_t n, torch::Tensor* cos, torch::Tensor* sin);

// The target model up to its last tapped layer, frozen: token ids -> the residual stream after each tapped
// layer, concatenated. Also holds the embedding and LM head the drafter shares.
class TargetTaps {
 public:
  // `weights`: the target's f32 tensors (import_package). Builds only layers 0..max(target_layers).
  static Expected<TargetTaps> create(const HParams& h, const std::vector<NamedTensor>& weights,
                                     std::vector<int32_t> target_layers);
  // tokens: [N, T] int64, causal rows starting at position 0 (right padding is harmless) ->
  // [N, T, n_taps * n_embd] f32, in target_layers order. No grad.
  torch::Tensor hidden(const torch::Tensor& tokens);
  const torch::Tensor& token_embd() const { return token_embd_; }  // [n_vocab, n_embd]
  const torch::Tensor& head() const { return head_; }              // [n_vocab, n_embd] (tied: token_embd)
  const HParams& hparams() const { return h_; }
  // The target's tensors (name -> f32), e.g. to initialise the drafter from its last layers.
  const std::vector<NamedTensor>& weights() const { return weights_; }

 private:
  HParams h_;
  std::vector<int32_t> layers_;
  std::vector<Block> blocks_;
  torch::Tensor token_embd_, head_;
  std::vector<NamedTensor> weights_;
};

class BlockDrafterImpl : public torch::nn::Module {
 public:
  explicit BlockDrafterImpl(const BlockDrafterConfig& c);

  // hidden: [N, T, n_taps * n_embd] the target's tapped states for positions 0..T-1;
  // anchors: [N, K] int64, the anchor positions p (block k sees context 0..p-1; its rows sit at p..p+B);
  // anchor_embd: [N, K, n_embd] the target's embedding of the anchor tokens t_p;
  // head: [n_vocab, n_embd] the target's LM head.
  // Returns logits [N, K, B, n_vocab]: row r-1 guesses t_{p+r}, r = 1..B.
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& anchors, const torch::Tensor& anchor_embd,
                        const torch::Tensor& head);
  // The same up to the LM head: rmsnorm(x_r) * output_norm, [N, K, B, n_embd] (training applies the head to
  // the labelled rows only).
  torch::Tensor head_inputs(const torch::Tensor& hidden, const torch::Tensor& anchors, const torch::Tensor& anchor_embd);
  // The core: block-row inputs x given directly ([N, K * (B + 1), n_embd]: block k's rows k*(B+1) ..
  // k*(B+1)+B, the anchor's row first) -> the final residual stream of every row, same shape (tests perturb
  // single rows through it).
  torch::Tensor rows_forward(const torch::Tensor& hidden, const torch::Tensor& anchors, const torch::Tensor& x);

  // Blocks from the target's last n_layers layers, fuse = the mean of the taps (identity blocks) plus
  // Normal(0, 0.02) noise, mask_embd = the mean token embedding, norms from the target. Deterministic.
  void init_from_target(const std::vector<NamedTensor>& target, int64_t target_n_layers, uint64_t seed);
  // Normal(0, 0.02) matrices, unit norms, random mask_embd (tests).
  void reset_random(uint64_t seed);
  std::vector<NamedTensor> to_named();
  Status load_named(const std::vector<NamedTensor>& weights);
  const BlockDrafterConfig& config() const { return c_; }

  ParamSet fuse{nullptr}, fuse_norm{nullptr}, mask_embd{nullptr}, output_norm{nullptr};
  torch::nn::ModuleList blk{nullptr};

 private:
  BlockDrafterConfig c_;
};
TORCH_MODULE(BlockDrafter);

}  // namespace pocket::train
