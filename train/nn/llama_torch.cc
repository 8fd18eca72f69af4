// The libtorch Llama-family model (see llama_torch.h) and its torch-free facade (model_facade.h).
// The forward pass follows src/model/transformer.cc step by step; comments give shapes.
#include "nn/llama_torch.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/linear.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "nn/model_facade.h"

namespace pocket::train {

namespace F = torch::nn::functional;

ParamSetImpl::ParamSetImpl(std::vector<int64_t> weight_shape, int64_t bias_size) {
  weight = register_parameter("weight", torch::ones(weight_shape));
  if (bias_size > 0) bias = register_parameter("bias", torch::zeros({bias_size}));
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  return w * (x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps));
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, RopeStyle style) {
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2), hd = x.size(3);
  const int64_t rows = cos.dim() == 3 ? cos.size(0) : 1;  // per-row positions, or one table for all rows
  const auto c = cos.view({rows, T, 1, hd / 2});
  const auto s = sin.view({rows, T, 1, hd / 2});
  if (style == RopeStyle::kInterleaved) {  // pairs (x[2i], x[2i+1])
    const auto xp = x.view({B, T, H, hd / 2, 2});
    const auto a = xp.select(-1, 0), b = xp.select(-1, 1);
    return torch::stack({a * c - b * s, a * s + b * c}, -1).view({B, T, H, hd});
  }
  const auto a = x.narrow(-1, 0, hd / 2), b = x.narrow(-1, hd / 2, hd / 2);  // pairs (x[i], x[i + hd/2])
  return torch::cat({a * c - b * s, a * s + b * c}, -1);
}

BlockImpl::BlockImpl(const HParams& h) : h_(h) {
  const int64_t d = h.n_embd, q = h.q_dim(), kv = h.kv_dim();
  const int64_t qb = h.qkv_bias ? q : 0, kvb = h.qkv_bias ? kv : 0;
  // Registration order is the runtime's tensor order, so named_parameters() lists them as the package does.
  attn_norm = register_module("attn_norm", ParamSet(std::vector<int64_t>{d}, 0));
  attn_q = register_module("attn_q", ParamSet(std::vector<int64_t>{q, d}, qb));       // [q_dim, n_embd]
  attn_k = register_module("attn_k", ParamSet(std::vector<int64_t>{kv, d}, kvb));     // [kv_dim, n_embd]
  attn_v = register_module("attn_v", ParamSet(std::vector<int64_t>{kv, d}, kvb));     // [kv_dim, n_embd]
  if (h.qk_norm) {
    attn_q_norm = register_module("attn_q_norm", ParamSet(std::vector<int64_t>{h.head_dim}, 0));
    attn_k_norm = register_module("attn_k_norm", ParamSet(std::vector<int64_t>{h.head_dim}, 0));
  }
  attn_output = register_module("attn_output", ParamSet(std::vector<int64_t>{d, q}, 0));  // [n_embd, q_dim]
  ffn_norm = register_module("ffn_norm", ParamSet(std::vector<int64_t>{d}, 0));
  ffn_gate = register_module("ffn_gate", ParamSet(std::vector<int64_t>{h.n_ff, d}, 0));  // [n_ff, n_embd]
  ffn_up = register_module("ffn_up", ParamSet(std::vector<int64_t>{h.n_ff, d}, 0));      // [n_ff, n_embd]
  ffn_down = register_module("ffn_down", ParamSet(std::vector<int64_t>{d, h.n_ff}, 0));  // [n_embd, n_ff]
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                 const torch::Tensor& blocked) {
  return forward_cached(x, cos, sin, blocked, nullptr, nullptr);
}

torch::Tensor BlockImpl::forward_cached(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                        const torch::Tensor& blocked, torch::Tensor* k_cache, torch::Tensor* v_cache) {
  const int64_t B = x.size(0), T = x.size(1), hd = h_.head_dim, H = h_.n_heads, KV = h_.n_kv_heads;
  const double eps = h_.norm_eps;
  auto xb = rms_norm(x, attn_norm->weight, eps);                                // [B, T, d]
  auto q = F::linear(xb, attn_q->weight, attn_q->bias).view({B, T, H, hd});    // + bias when defined
  auto k = F::linear(xb, attn_k->weight, attn_k->bias).view({B, T, KV, hd});
  auto v = F::linear(xb, attn_v->weight, attn_v->bias).view({B, T, KV, hd});
  if (h_.qk_norm) {  // RMSNorm over each head, before RoPE
    q = rms_norm(q, attn_q_norm->weight, eps);
    k = rms_norm(k, attn_k_norm->weight, eps);
  }
  q = apply_rope(q, cos, sin, h_.rope_style).transpose(1, 2);  // [B, H, T, hd]
  k = apply_rope(k, cos, sin, h_.rope_style).transpose(1, 2);  // [B, KV, T, hd]
  v = v.transpose(1, 2);
  if (k_cache != nullptr) {  // incremental: the new keys and values after the cached ones, [B, KV, len + T, hd]
    *k_cache = k_cache->defined() ? torch::cat({*k_cache, k}, 2) : k.contiguous();
    *v_cache = v_cache->defined() ? torch::cat({*v_cache, v}, 2) : v.contiguous();
    k = *k_cache;
    v = *v_cache;
  }
  if (H != KV) {  // query head h reads kv head h / (H / KV)
    k = k.repeat_interleave(H / KV, 1);
    v = v.repeat_interleave(H / KV, 1);
  }
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));  // [B, H, T, keys]
  // Every query can read itself (j = i is never blocked), so no row of the softmax is all -inf.
  scores = scores.masked_fill(blocked, -std::numeric_limits<float>::infinity());
  auto att = torch::matmul(torch::softmax(scores, -1), v);                 // [B, H, T, hd]
  att = att.transpose(1, 2).reshape({B, T, H * hd});
  auto h = x + F::linear(att, attn_output->weight);
  auto hb = rms_norm(h, ffn_norm->weight, eps);
  auto ff = F::silu(F::linear(hb, ffn_gate->weight)) * F::linear(hb, ffn_up->weight);  // SwiGLU [B, T, n_ff]
  return h + F::linear(ff, ffn_down->weight);
}

LlamaImpl::LlamaImpl(const HParams& h) : h_(h) {
  token_embd = register_module("token_embd", ParamSet(std::vector<int64_t>{h.n_vocab, h.n_embd}, 0));
  blk = register_module("blk", torch::nn::ModuleList());
  for (int64_t l = 0; l < h.n_layers; ++l) blk->push_back(Block(h));
  output_norm = register_module("output_norm", ParamSet(std::vector<int64_t>{h.n_embd}, 0));
  if (!h.tied_embeddings) output = register_module("output", ParamSet(std::vector<int64_t>{h.n_vocab, h.n_embd}, 0));
}

void LlamaImpl::rope_tables(int64_t n, torch::Tensor* cos, torch::Tensor* sin) {
  if (!cos_.defined() || cos_.size(0) != n || cos_.device() != device()) {
    // freq_i = theta^(-2i / head_dim), angle = pos * freq, in float as the runtime computes them.
    const int64_t hd = h_.head_dim;
    auto idx = torch::arange(0, hd, 2, torch::kFloat64) / static_cast<double>(hd);
    auto freq = torch::pow(static_cast<double>(h_.rope_theta), idx).reciprocal().to(torch::kFloat32);
    auto pos = torch::arange(0, n, torch::kFloat32);
    auto ang = torch::outer(pos, freq);  // [n, hd/2]
    cos_ = ang.cos().to(device());  // computed on the CPU: the same float angles on every device
    sin_ = ang.sin().to(device());
  }
  *cos = cos_;
  *sin = sin_;
}

torch::Tensor LlamaImpl::forward(const torch::Tensor& tokens, const torch::Tensor& positions,
                                 const torch::Tensor& segments) {
  const int64_t B = tokens.size(0), T = tokens.size(1);
  torch::Tensor cos, sin;
  if (!positions.defined() || positions.numel() == 0) {
    rope_tables(T, &cos, &sin);  // [T, hd/2], shared by every row
  } else {
    TORCH_CHECK(positions.sizes() == tokens.sizes(), "[train] positions must have the tokens' shape [B, T]");
    const int64_t max_pos = positions.max().item<int64_t>();
    TORCH_CHECK(positions.min().item<int64_t>() >= 0, "[train] a position is negative");
    rope_tables(std::max(T, max_pos + 1), &cos, &sin);
    const auto idx = positions.reshape({-1});
    cos = cos.index_select(0, idx).view({B, T, -1});  // [B, T, hd/2]: row b, column t at positions[b][t]
    sin = sin.index_select(0, idx).view({B, T, -1});
  }
  // true = query i may not read key j: the causal mask [T, T], and with segments also across segments,
  // [B, 1, T, T] (broadcast over heads). Pretraining keeps the plain causal mask.
  auto blocked = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(tokens.device())).triu(1);
  if (segments.defined()) {
    TORCH_CHECK(segments.sizes() == tokens.sizes(), "[train] segments must have the tokens' shape [B, T]");
    blocked = (blocked | (segments.unsqueeze(2) != segments.unsqueeze(1))).unsqueeze(1);
  }
  auto x = F::embedding(tokens, token_embd->weight);  // [B, T, d]
  for (const auto& m : *blk) x = m->as<BlockImpl>()->forward(x, cos, sin, blocked);
  x = rms_norm(x, output_norm->weight, h_.norm_eps);
  return F::linear(x, h_.tied_embeddings ? token_embd->weight : output->weight);  // [B, T, n_vocab]
}

torch::Tensor LlamaImpl::forward_cached(const torch::Tensor& tokens, const torch::Tensor& positions,
                                        const torch::Tensor& segments, KvCache* cache) {
  const int64_t B = tokens.size(0), T = tokens.size(1);
  TORCH_CHECK(positions.sizes() == tokens.sizes() && segments.sizes() == tokens.sizes(),
              "[train] forward_cached: positions and segments must have the tokens' shape [B, T]");
  TORCH_CHECK(T >= 1, "[train] forward_cached: no new column");
  const int64_t L = h_.n_layers, past = cache->len;
  if (cache->k.empty()) {
    cache->k.assign(static_cast<size_t>(L), torch::Tensor());
    cache->v.assign(static_cast<size_t>(L), torch::Tensor());
  }
  TORCH_CHECK(past == 0 || cache->segments.size(0) == B, "[train] forward_cached: the batch changed size");
  TORCH_CHECK(positions.min().item<int64_t>() >= 0, "[train] a position is negative");
  torch::Tensor cos, sin;
  rope_tables(std::max<int64_t>(past + T, positions.max().item<int64_t>() + 1), &cos, &sin);
  const auto idx = positions.reshape({-1});
  cos = cos.index_select(0, idx).view({B, T, -1});
  sin = sin.index_select(0, idx).view({B, T, -1});
  cache->segments = past == 0 ? segments : torch::cat({cache->segments, segments}, 1);  // [B, past + T]
  // New column i (absolute past + i) may not read key j > past + i, nor a key of another segment.
  const auto opts = torch::TensorOptions().dtype(torch::kInt64).device(tokens.device());
  auto col = torch::arange(past, past + T, opts).unsqueeze(1);  // [T, 1]
  auto key = torch::arange(0, past + T, opts).unsqueeze(0);     // [1, past + T]
  auto blocked = (key > col).unsqueeze(0) | (segments.unsqueeze(2) != cache->segments.unsqueeze(1));  // [B, T, past + T]
  blocked = blocked.unsqueeze(1);
  auto x = F::embedding(tokens, token_embd->weight);
  for (int64_t l = 0; l < L; ++l) {
    x = blk[static_cast<size_t>(l)]->as<BlockImpl>()->forward_cached(x, cos, sin, blocked, &cache->k[static_cast<size_t>(l)],
                                                                      &cache->v[static_cast<size_t>(l)]);
  }
  cache->len = past + T;
  x = rms_norm(x.select(1, T - 1), output_norm->weight, h_.norm_eps);  // [B, d]
  return F::linear(x, h_.tied_embeddings ? token_embd->weight : output->weight);  // [B, n_vocab]
}

void LlamaImpl::reset_parameters(uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  const double std_out = 0.02 / std::sqrt(2.0 * static_cast<double>(h_.n_layers));
  for (auto& p : named_parameters()) {
    const std::string& n = p.key();
    torch::Tensor& t = p.value();
    if (t.dim() == 1) {
      if (n.size() >= 5 && n.compare(n.size() - 5, 5, ".bias") == 0) t.zero_();
      else t.fill_(1.0);
    } else if (n.find("attn_output") != std::string::npos || n.find("ffn_down") != std::string::npos) {
      t.normal_(0.0, std_out);
    } else {
      t.normal_(0.0, 0.02);
    }
  }
}

std::vector<NamedTensor> LlamaImpl::to_named() {
  std::vector<NamedTensor> out;
  for (const auto& p : named_parameters()) {
    auto t = p.value().detach().to(torch::kCPU, torch::kFloat32).contiguous();
    NamedTensor nt;
    nt.name = p.key();
    nt.shape = t.sizes().vec();
    nt.data.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
    out.push_back(std::move(nt));
  }
  return out;
}

Status LlamaImpl::load_named(const std::vector<NamedTensor>& weights) {
  torch::NoGradGuard no_grad;
  std::map<std::string, const NamedTensor*> by_name;
  for (const auto& w : weights) by_name[w.name] = &w;
  auto params = named_parameters();
  if (params.size() != by_name.size()) {
    return invalid_argument("[train] " + std::to_string(weights.size()) + " tensors given, the model has " +
                            std::to_string(params.size()));
  }
  for (auto& p : params) {
    auto it = by_name.find(p.key());
    if (it == by_name.end()) return invalid_argument("[train] tensor '" + p.key() + "' is missing");
    const NamedTensor& w = *it->second;
    if (w.shape != p.value().sizes().vec() || static_cast<int64_t>(w.data.size()) != p.value().numel()) {
      return invalid_argument("[train] tensor '" + p.key() + "' has the wrong shape");
    }
    auto src = torch::from_blob(const_cast<float*>(w.data.data()), w.shape, torch::kFloat32);
    p.value().copy_(src);
  }
  return Status::ok();
}

Expected<std::vector<NamedTensor>> init_model_weights(const HParams& h, uint64_t seed) {
  try {
    POCKET_RETURN_IF_ERROR(h.validate());
    Llama m(h);
    m->reset_parameters(seed);
    return m->to_named();
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("[train] libtorch: ") + e.what());
  }
}

namespace {

torch::Tensor one_row(std::span<const int32_t> v) {  // [1, n] int64
  std::vector<int64_t> ids(v.begin(), v.end());
  return torch::tensor(ids, torch::kInt64).view({1, static_cast<int64_t>(ids.size())});
}

}  // namespace

Expected<std::vector<float>> libtorch_logits(const HParams& h, const std::vector<NamedTensor>& weights,
                                             std::span<const int32_t> tokens) {
  return libtorch_logits_packed(h, weights, tokens, {}, {});
}

Expected<std::vector<float>> libtorch_logits_packed(const HParams& h, const std::vector<NamedTensor>& weights,
                                                    std::span<const int32_t> tokens,
                                                    std::span<const int32_t> positions,
                                                    std::span<const int32_t> segments) {
  try {
    POCKET_RETURN_IF_ERROR(h.validate());
    if ((!positions.empty() && positions.size() != tokens.size()) ||
        (!segments.empty() && segments.size() != tokens.size())) {
      return invalid_argument("[train] libtorch_logits_packed: " + std::to_string(tokens.size()) + " tokens, " +
                              std::to_string(positions.size()) + " positions and " +
                              std::to_string(segments.size()) + " segments (expected one each per token, or none)");
    }
    for (int32_t p : positions) {
      if (p < 0) return invalid_argument("[train] libtorch_logits_packed: negative position " + std::to_string(p));
    }
    Llama m(h);
    POCKET_RETURN_IF_ERROR(m->load_named(weights));
    torch::NoGradGuard no_grad;
    const torch::Tensor pos = positions.empty() ? torch::Tensor() : one_row(positions);
    const torch::Tensor seg = segments.empty() ? torch::Tensor() : one_row(segments);
    auto logits = m->forward(one_row(tokens), pos, seg).contiguous();
    return std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("[train] libtorch: ") + e.what());
  }
}

Expected<std::vector<float>> libtorch_logits_cached(const HParams& h, const std::vector<NamedTensor>& weights,
                                                    std::span<const int32_t> tokens, int64_t prefill) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (prefill < 1 || prefill > n) {
    return invalid_argument("[train] libtorch_logits_cached: prefill " + std::to_string(prefill) + " outside 1.." +
                            std::to_string(n));
  }
  try {
    POCKET_RETURN_IF_ERROR(h.validate());
    Llama m(h);
    POCKET_RETURN_IF_ERROR(m->load_named(weights));
    torch::NoGradGuard no_grad;
    const auto all = one_row(tokens);
    const auto pos = torch::arange(0, n, torch::kInt64).view({1, n});
    const auto seg = torch::ones({1, n}, torch::kInt64);
    KvCache cache;
    std::vector<float> out;
    for (int64_t from = 0; from < n;) {
      const int64_t len = from == 0 ? prefill : 1;
      auto l = m->forward_cached(all.narrow(1, from, len), pos.narrow(1, from, len), seg.narrow(1, from, len), &cache)
                   .contiguous();
      out.insert(out.end(), l.data_ptr<float>(), l.data_ptr<float>() + l.numel());
      from += len;
    }
    return out;
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("[train] libtorch: ") + e.what());
  }
}

}  // namespace pocket::train
