// The Llama-family decoder in libtorch, mirroring src/model/transformer.cc exactly: the same parameter names
// (named_parameters() yields "token_embd.weight", "blk.3.attn_q.weight", ...), the same [out, in] matrix
// layouts, RMSNorm, RoPE styles, q/k-norm, q/k/v bias, grouped-query attention and SwiGLU.
// Internal to train/: includes torch, so only the few torch translation units include it.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <vector>

#include "run/named_tensor.h"
#include "core/status.h"
#include "model/hparams.h"

namespace pocket::train {

// One runtime tensor group: "weight" and, when bias_size > 0, "bias".
class ParamSetImpl : public torch::nn::Module {
 public:
  ParamSetImpl(std::vector<int64_t> weight_shape, int64_t bias_size);
  torch::Tensor weight, bias;
};
TORCH_MODULE(ParamSet);

// Keys and values of the columns a model has read so far, for incremental decoding (LlamaImpl::forward_cached):
// per layer [B, n_kv_heads, len, head_dim] after RoPE, and the columns' segment ids [B, len].
struct KvCache {
  std::vector<torch::Tensor> k, v;
  torch::Tensor segments;
  int64_t len = 0;
};

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const HParams& h);
  // x: [B, T, n_embd]; cos, sin: [T, head_dim / 2], or [B, T, head_dim / 2] when each row has its own
  // positions; blocked: bool, true where query i may not read key j, [T, T] or [B, 1, T, T] (see
  // LlamaImpl::forward). Returns the block's output, same shape as x.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& blocked);
  // The same for n new columns after the cached ones: appends their keys and values to *k and *v ([B, KV,
  // len, hd], undefined when empty); blocked: [B, 1, n, len + n]. forward() is this without a cache.
  torch::Tensor forward_cached(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                               const torch::Tensor& blocked, torch::Tensor* k, torch::Tensor* v);

  ParamSet attn_norm{nullptr}, attn_q{nullptr}, attn_k{nullptr}, attn_v{nullptr}, attn_output{nullptr};
  ParamSet attn_q_norm{nullptr}, attn_k_norm{nullptr};
  ParamSet ffn_norm{nullptr}, ffn_gate{nullptr}, ffn_up{nullptr}, ffn_down{nullptr};

 private:
  HParams h_;
};
TORCH_MODULE(Block);

class LlamaImpl : public torch::nn::Module {
 public:
  explicit LlamaImpl(const HParams& h);
  // tokens: [B, T] int64 -> logits [B, T, n_vocab] f32. Without `segments` every row is one causal sequence
  // (pretraining). With segments ([B, T] int64) a row holds several sequences packed side by side: token i
  // reads token j iff j <= i and segments[j] == segments[i] (causal and block-diagonal). positions
  // ([B, T] int64, >= 0; undefined = 0..T-1) are the RoPE positions, which SFT restarts at 0 per example.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& positions = {},
                        const torch::Tensor& segments = {});
  // Incremental decoding: the n columns after the `cache->len` already read (tokens, positions, segments
  // [B, n]; a column reads the earlier and cached columns of its own segment), appended to the cache; returns
  // the logits of the last new column only, [B, n_vocab]. A cached pass gives the logits forward() gives at
  // that column (up to float summation order), for a fraction of the work when sampling one token at a time.
  torch::Tensor forward_cached(const torch::Tensor& tokens, const torch::Tensor& positions,
                               const torch::Tensor& segments, KvCache* cache);
  // Normal(0, 0.02) matrices (residual outputs scaled by 1/sqrt(2 n_layers)), unit norms, zero biases.
  void reset_parameters(uint64_t seed);
  std::vector<NamedTensor> to_named();
  Status load_named(const std::vector<NamedTensor>& weights);
  const HParams& hparams() const { return h_; }
  // Where the parameters live (torch::kCPU unless the module was moved with ->to(device)).
  torch::Device device() const { return token_embd->weight.device(); }

 private:
  // [n, head_dim/2] rotation tables for positions 0..n-1, cached for the last n.
  void rope_tables(int64_t n, torch::Tensor* cos, torch::Tensor* sin);

  HParams h_;
  ParamSet token_embd{nullptr}, output_norm{nullptr}, output{nullptr};
  torch::nn::ModuleList blk{nullptr};
  torch::Tensor cos_, sin_;
};
TORCH_MODULE(Llama);

// y = w * x / sqrt(mean(x^2) + eps) over the last dimension.
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps);
// x: [B, T, heads, head_dim]; cos, sin: [T, head_dim/2] (shared by the rows) or [B, T, head_dim/2];
// rotates pairs per `style`.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, RopeStyle style);

}  // namespace pocket::train
