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

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const HParams& h);
  // x: [B, T, n_embd]; cos, sin: [T, head_dim / 2]. Returns the block's output, same shape.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

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
  // tokens: [B, T] int64 -> logits [B, T, n_vocab] f32.
  torch::Tensor forward(const torch::Tensor& tokens);
  // Normal(0, 0.02) matrices (residual outputs scaled by 1/sqrt(2 n_layers)), unit norms, zero biases.
  void reset_parameters(uint64_t seed);
  std::vector<NamedTensor> to_named();
  Status load_named(const std::vector<NamedTensor>& weights);
  const HParams& hparams() const { return h_; }

 private:
  // [T, head_dim/2] rotation tables for positions 0..T-1, cached for the last T.
  void rope_tables(int64_t T, torch::Tensor* cos, torch::Tensor* sin);

  HParams h_;
  ParamSet token_embd{nullptr}, output_norm{nullptr}, output{nullptr};
  torch::nn::ModuleList blk{nullptr};
  torch::Tensor cos_, sin_;
};
TORCH_MODULE(Llama);

// y = w * x / sqrt(mean(x^2) + eps) over the last dimension.
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps);
// x: [B, T, heads, head_dim]; rotates pairs per `style`.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, RopeStyle style);

}  // namespace pocket::train
