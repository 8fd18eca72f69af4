// The libtorch block drafter and the frozen target taps (see block_drafter_torch.h). Comments give shapes;
// N sequences, T context positions, K anchor blocks per sequence, R = B + 1 rows per block, Q = K * R.
#include "nn/block_drafter_torch.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/embedding.h>
#include <torch/nn/functional/linear.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace pocket::train {

namespace F = torch::nn::functional;

namespace {

std::map<std::string, const NamedTensor*> by_name(const std::vector<NamedTensor>& w) {
  std::map<std::string, const NamedTensor*> m;
  for (const auto& t : w) m[t.name] = &t;
  return m;
}

torch::Tensor as_tensor(const NamedTensor& t) {
  return torch::from_blob(const_cast<float*>(t.data.data()), t.shape, torch::kFloat32).clone();
}

// Copies the module's parameters from `w`, names prefixed by `prefix` ("blk.3."); every one must exist.
Status copy_params(torch::nn::Module& m, const std::map<std::string, const NamedTensor*>& w, const std::string& prefix) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.named_parameters()) {
    auto it = w.find(prefix + p.key());
    if (it == w.end()) return invalid_argument("[drafter] tensor '" + prefix + p.key() + "' is missing");
    if (it->second->shape != p.value().sizes().vec()) {
      return invalid_argument("[drafter] tensor '" + prefix + p.key() + "' has the wrong shape");
    }
    p.value().copy_(as_tensor(*it->second));
  }
  return Status::ok();
}

}  // namespace

void drafter_rope_tables(const HParams& h, int64_t n, torch::Tensor* cos, torch::Tensor* sin) {
  const int64_t hd = h.head_dim;
  auto idx = torch::arange(0, hd, 2, torch::kFloat64) / static_cast<double>(hd);
  auto freq = torch::pow(static_cast<double>(h.rope_theta), idx).reciprocal().to(torch::kFloat32);
  auto ang = torch::outer(torch::arange(0, n, torch::kFloat32), freq);  // [n, hd/2]
  *cos = ang.cos();
  *sin = ang.sin();
}

// ---- target taps ----

Expected<TargetTaps> TargetTaps::create(const HParams& h, const std::vector<NamedTensor>& weights,
                                        std::vector<int32_t> target_layers) {
  try {
    TargetTaps t;
    t.h_ = h;
    t.layers_ = std::move(target_layers);
    t.weights_ = weights;
    if (t.layers_.empty() || t.layers_.back() >= h.n_layers) {
      return invalid_argument("[drafter] tapped layers must be in 0.." + std::to_string(h.n_layers - 1));
    }
    const auto w = by_name(t.weights_);
    for (int32_t l = 0; l <= t.layers_.back(); ++l) {
      Block b(h);
      POCKET_RETURN_IF_ERROR(copy_params(*b, w, "blk." + std::to_string(l) + "."));
      for (auto& p : b->parameters()) p.set_requires_grad(false);
      t.blocks_.push_back(b);
    }
    auto e = w.find("token_embd.weight");
    if (e == w.end()) return invalid_argument("[drafter] the target has no token_embd.weight");
    t.token_embd_ = as_tensor(*e->second);
    if (h.tied_embeddings) {
      t.head_ = t.token_embd_;
    } else {
      auto o = w.find("output.weight");
      if (o == w.end()) return invalid_argument("[drafter] the target has no output.weight");
      t.head_ = as_tensor(*o->second);
    }
    return t;
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("[drafter] libtorch: ") + e.what());
  }
}

torch::Tensor TargetTaps::hidden(const torch::Tensor& tokens) {
  torch::NoGradGuard no_grad;
  const int64_t T = tokens.size(1);
  torch::Tensor cos, sin;
  drafter_rope_tables(h_, T, &cos, &sin);
  auto blocked = torch::ones({T, T}, torch::kBool).triu(1);  // causal
  auto x = F::embedding(tokens, token_embd_);                // [N, T, d]
  std::vector<torch::Tensor> taps;
  for (int32_t l = 0; l <= layers_.back(); ++l) {
    x = blocks_[static_cast<size_t>(l)]->forward(x, cos, sin, blocked);
    if (std::find(layers_.begin(), layers_.end(), l) != layers_.end()) taps.push_back(x);
  }
  return torch::cat(taps, -1);  // [N, T, n_taps * d]
}

// ---- the drafter ----

BlockDrafterImpl::BlockDrafterImpl(const BlockDrafterConfig& c) : c_(c) {
  const int64_t d = c.blocks.n_embd;
  fuse = register_module("fuse", ParamSet(std::vector<int64_t>{d, c.n_taps() * d}, 0));  // [d, n_taps * d]
  fuse_norm = register_module("fuse_norm", ParamSet(std::vector<int64_t>{d}, 0));
  mask_embd = register_module("mask_embd", ParamSet(std::vector<int64_t>{d}, 0));
  blk = register_module("blk", torch::nn::ModuleList());
  for (int64_t l = 0; l < c.blocks.n_layers; ++l) blk->push_back(Block(c.blocks));
  output_norm = register_module("output_norm", ParamSet(std::vector<int64_t>{d}, 0));
}

torch::Tensor BlockDrafterImpl::forward(const torch::Tensor& hidden, const torch::Tensor& anchors,
                                        const torch::Tensor& anchor_embd, const torch::Tensor& head) {
  return F::linear(head_inputs(hidden, anchors, anchor_embd), head);  // [N, K, B, n_vocab]
}

torch::Tensor BlockDrafterImpl::head_inputs(const torch::Tensor& hidden, const torch::Tensor& anchors,
                                            const torch::Tensor& anchor_embd) {
  const int64_t N = hidden.size(0), K = anchors.size(1), B = c_.block_size, d = c_.blocks.n_embd;
  // Row inputs: the anchor's embedding, then mask_embd for rows 1..B.
  auto x = torch::cat({anchor_embd.unsqueeze(2), mask_embd->weight.view({1, 1, 1, d}).expand({N, K, B, d})}, 2)
               .reshape({N, K * (B + 1), d});
  auto rows = rows_forward(hidden, anchors, x).view({N, K, B + 1, d}).narrow(2, 1, B);  // [N, K, B, d]
  return rms_norm(rows, output_norm->weight, c_.blocks.norm_eps);
}

torch::Tensor BlockDrafterImpl::rows_forward(const torch::Tensor& hidden, const torch::Tensor& anchors,
                                             const torch::Tensor& x_in) {
  const HParams& h = c_.blocks;
  const int64_t N = hidden.size(0), T = hidden.size(1), K = anchors.size(1), B = c_.block_size, R = B + 1;
  const int64_t Q = K * R, hd = h.head_dim, H = h.n_heads, KV = h.n_kv_heads;
  const double eps = h.norm_eps;
  // Context features c_j = rmsnorm(fuse · H_j) * fuse_norm.
  auto c = rms_norm(F::linear(hidden, fuse->weight), fuse_norm->weight, eps);  // [N, T, d]
  // Positions: context j at j, block k's row r at anchors[k] + r.
  auto pos_blk = (anchors.unsqueeze(-1) + torch::arange(R, torch::kInt64)).reshape({N, Q});  // [N, Q]
  const int64_t max_pos = std::max<int64_t>(T, pos_blk.max().item<int64_t>() + 1);
  torch::Tensor cos, sin;
  drafter_rope_tables(h, max_pos, &cos, &sin);
  auto cos_ctx = cos.narrow(0, 0, T), sin_ctx = sin.narrow(0, 0, T);  // [T, hd/2]
  auto cos_blk = cos.index_select(0, pos_blk.reshape({-1})).view({N, Q, hd / 2});
  auto sin_blk = sin.index_select(0, pos_blk.reshape({-1})).view({N, Q, hd / 2});
  // Who reads whom: block k's rows read context j < anchors[k] and every row of block k.
  auto ctx_ok = torch::arange(T, torch::kInt64).view({1, 1, T}) < anchors.unsqueeze(-1);  // [N, K, T]
  ctx_ok = ctx_ok.unsqueeze(2).expand({N, K, R, T}).reshape({N, Q, T});
  auto blk_id = torch::arange(Q, torch::kInt64).div(R, "floor");
  auto blk_ok = (blk_id.unsqueeze(1) == blk_id.unsqueeze(0)).unsqueeze(0).expand({N, Q, Q});  // [N, Q, Q]
  auto blocked = torch::cat({ctx_ok, blk_ok}, -1).logical_not().unsqueeze(1);                 // [N, 1, Q, T + Q]
  auto x = x_in;  // [N, Q, d]
  for (const auto& m : *blk) {
    auto* L = m->as<BlockImpl>();
    auto a = rms_norm(x, L->attn_norm->weight, eps);
    auto q = apply_rope(F::linear(a, L->attn_q->weight).view({N, Q, H, hd}), cos_blk, sin_blk, h.rope_style);
    auto kb = apply_rope(F::linear(a, L->attn_k->weight).view({N, Q, KV, hd}), cos_blk, sin_blk, h.rope_style);
    auto vb = F::linear(a, L->attn_v->weight).view({N, Q, KV, hd});
    // Context keys/values straight from c_j (no per-layer norm), roped at the context positions.
    auto kc = apply_rope(F::linear(c, L->attn_k->weight).view({N, T, KV, hd}), cos_ctx, sin_ctx, h.rope_style);
    auto vc = F::linear(c, L->attn_v->weight).view({N, T, KV, hd});
    auto k = torch::cat({kc, kb}, 1).transpose(1, 2);  // [N, KV, T + Q, hd]
    auto v = torch::cat({vc, vb}, 1).transpose(1, 2);
    if (H != KV) {
      k = k.repeat_interleave(H / KV, 1);
      v = v.repeat_interleave(H / KV, 1);
    }
    auto scores = torch::matmul(q.transpose(1, 2), k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
    scores = scores.masked_fill(blocked, -std::numeric_limits<float>::infinity());  // [N, H, Q, T + Q]
    auto att = torch::matmul(torch::softmax(scores, -1), v).transpose(1, 2).reshape({N, Q, H * hd});
    x = x + F::linear(att, L->attn_output->weight);
    auto b = rms_norm(x, L->ffn_norm->weight, eps);
    x = x + F::linear(F::silu(F::linear(b, L->ffn_gate->weight)) * F::linear(b, L->ffn_up->weight),
                      L->ffn_down->weight);
  }
  return x;
}

void BlockDrafterImpl::init_from_target(const std::vector<NamedTensor>& target, int64_t target_n_layers,
                                        uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  const auto w = by_name(target);
  const int64_t d = c_.blocks.n_embd, n = c_.blocks.n_layers;
  for (int64_t l = 0; l < n; ++l) {
    const int64_t src = std::max<int64_t>(0, target_n_layers - n + l);
    Status st = copy_params(*blk[static_cast<size_t>(l)], w, "blk." + std::to_string(src) + ".");
    TORCH_CHECK(st.is_ok(), st.message());
  }
  auto eye = torch::eye(d) / static_cast<double>(c_.n_taps());
  fuse->weight.copy_(eye.repeat({1, c_.n_taps()}) + 0.02 * torch::randn({d, c_.n_taps() * d}));
  fuse_norm->weight.fill_(1.0);
  auto e = w.find("token_embd.weight");
  TORCH_CHECK(e != w.end(), "[drafter] the target has no token_embd.weight");
  mask_embd->weight.copy_(as_tensor(*e->second).mean(0));
  auto on = w.find("output_norm.weight");
  if (on != w.end()) output_norm->weight.copy_(as_tensor(*on->second));
  else output_norm->weight.fill_(1.0);
}

void BlockDrafterImpl::reset_random(uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& p : named_parameters()) {
    if (p.key() == kDrafterMaskEmbd) p.value().normal_(0.0, 1.0);
    else if (p.value().dim() == 1) p.value().uniform_(0.8, 1.2);
    else p.value().normal_(0.0, 0.1);
  }
}

std::vector<NamedTensor> BlockDrafterImpl::to_named() {
  std::vector<NamedTensor> out;
  for (const auto& p : named_parameters()) {
    auto t = p.value().detach().to(torch::kCPU, torch::kFloat32).contiguous();
    out.push_back({p.key(), t.sizes().vec(), std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel())});
  }
  return out;
}

Status BlockDrafterImpl::load_named(const std::vector<NamedTensor>& weights) {
  if (weights.size() != named_parameters().size()) {
    return invalid_argument("[drafter] " + std::to_string(weights.size()) + " tensors given, the drafter has " +
                            std::to_string(named_parameters().size()));
  }
  return copy_params(*this, by_name(weights), "");
}

}  // namespace pocket::train
