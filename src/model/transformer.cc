// The Llama-family forward pass, top to bottom: embedding, then per layer RMSNorm → q/k/v (+bias, +q/k
// norm) → RoPE → causal grouped-query attention over the KV cache → output projection → residual, RMSNorm →
// SwiGLU MLP → residual; final RMSNorm and the LM head for the rows whose logits are needed.
#include "model/transformer.h"

#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/ops_ref.h"
#include "model/matmul.h"

namespace pocket {

Transformer::Transformer(std::shared_ptr<const Model> m, const SessionShape& s, ThreadPool* p)
    : model_(std::move(m)), shape_(s), pool_(p) {}

Expected<std::unique_ptr<Transformer>> Transformer::create(std::shared_ptr<const Model> model, const SessionShape& in,
                                                           ThreadPool* pool, uint64_t mem_budget_bytes) {
  const HParams& h = model->hparams();
  SessionShape s = in;
  if (s.n_ctx <= 0) s.n_ctx = model->config().context_length;
  if (s.n_ctx > h.n_ctx_train) {
    return invalid_argument("[session] context " + std::to_string(s.n_ctx) + " exceeds the model's trained context " +
                            std::to_string(h.n_ctx_train));
  }
  if (s.n_batch <= 0) s.n_batch = std::min<int64_t>(s.n_ctx, kDefaultBatch);
  s.n_batch = std::min(s.n_batch, s.n_ctx);
  for (size_t i = 0; i < s.hidden_layers.size(); ++i) {
    const int32_t l = s.hidden_layers[i];
    if (l < 0 || l >= h.n_layers || (i > 0 && l <= s.hidden_layers[i - 1])) {
      return invalid_argument("[session] hidden-state layers must be increasing and each in 0.." +
                              std::to_string(h.n_layers - 1) + " (this model has " + std::to_string(h.n_layers) +
                              " layers); got " + std::to_string(l) + " at position " + std::to_string(i));
    }
  }
  if (s.n_logit_rows <= 0) s.n_logit_rows = 1;
  s.n_logit_rows = std::min(s.n_logit_rows, s.n_batch);
  s.n_threads = pool->n_threads();
  s.kv_f16 = kv_cache_f16(model->package());
  s.residual_act = residual_activations(model->package());
  const MemoryPlan plan = make_memory_plan(h, s, model->package().file_size());
  if (mem_budget_bytes > 0 && plan.total() > mem_budget_bytes) {
    return Status(ErrorCode::kOutOfMemory, "[session] the memory plan needs " + std::to_string(plan.total() >> 20) +
                                               " MiB, over the budget of " + std::to_string(mem_budget_bytes >> 20) +
                                               " MiB:\n" + plan.to_string());
  }
  std::unique_ptr<Transformer> t(new Transformer(std::move(model), s, pool));
  t->plan_ = plan;
  const ScratchSizes z = scratch_sizes(h, s);
  const size_t kv = static_cast<size_t>(h.n_layers * s.n_ctx * h.kv_dim());
  if (s.kv_f16) {
    auto kb = HugeBuffer::allocate(kv * sizeof(uint16_t));
    if (!kb.has_value()) return kb.status();
    auto vb = HugeBuffer::allocate(kv * sizeof(uint16_t));
    if (!vb.has_value()) return vb.status();
    t->k_cache16_ = std::move(*kb);
    t->v_cache16_ = std::move(*vb);
  } else {
    t->k_cache_.assign(kv, 0.0f);
    t->v_cache_.assign(kv, 0.0f);
  }
  t->xq_.resize(static_cast<size_t>(z.act_blocks));
  t->tiles_.assign(static_cast<size_t>(z.tiles), 0.0f);
  auto sz = [](int64_t v) { return static_cast<size_t>(v); };
  t->x_.assign(sz(z.x), 0.0f);
  t->xb_.assign(sz(z.xb), 0.0f);
  t->xb2_.assign(sz(z.xb2), 0.0f);
  t->q_.assign(sz(z.q), 0.0f);
  t->k_.assign(sz(z.k), 0.0f);
  t->v_.assign(sz(z.v), 0.0f);
  t->hb_.assign(sz(z.hb), 0.0f);
  t->hb2_.assign(sz(z.hb2), 0.0f);
  t->att_.assign(sz(z.att), 0.0f);
  t->rope_cs_.assign(sz(z.rope / 2), 0.0f);
  t->rope_sn_.assign(sz(z.rope / 2), 0.0f);
  t->row_buf_.assign(sz(z.row_buf), 0.0f);
  t->logits_.assign(sz(z.logits), 0.0f);
  t->hidden_.assign(sz(z.hidden), 0.0f);
  return t;
}

void Transformer::truncate(int64_t n) {
  if (n >= 0 && n < n_past_) n_past_ = n;
}

Status Transformer::forward(std::span<const int32_t> tokens, bool all_logits, const std::atomic<bool>* cancel) {
  const HParams& h = model_->hparams();
  const int64_t n = static_cast<int64_t>(tokens.size());
  hidden_rows_ = 0;  // set again by each chunk that completes
  if (n == 0) return invalid_argument("[forward] no tokens to evaluate");
  if (n_past_ + n > shape_.n_ctx) {
    return Status(ErrorCode::kContextExceeded, "[forward] " + std::to_string(n_past_) + " cached + " + std::to_string(n) +
                                                   " new tokens exceed the context of " + std::to_string(shape_.n_ctx));
  }
  if (all_logits && n > shape_.n_logit_rows) {
    return invalid_argument("[forward] logits for " + std::to_string(n) + " rows requested, the session holds " +
                            std::to_string(shape_.n_logit_rows));
  }
  for (int32_t id : tokens) {
    if (id < 0 || id >= h.n_vocab) {
      return invalid_argument("[forward] token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                              std::to_string(h.n_vocab - 1) + ")");
    }
  }
  const int64_t start = n_past_;
  for (int64_t done = 0; done < n;) {
    const int64_t m = std::min(shape_.n_batch, n - done);
    const bool last = done + m == n;
    float* out = nullptr;
    if (all_logits) out = mutable_logits(done);
    else if (last) out = mutable_logits(0);
    Status st = forward_chunk(tokens.data() + done, m, out, all_logits, cancel);
    if (!st.is_ok()) {
      n_past_ = start;
      hidden_rows_ = 0;
      return st;
    }
    n_past_ += m;
    done += m;
  }
  return Status::ok();
}

Status Transformer::forward_chunk(const int32_t* tokens, int64_t m, float* logits_out, bool all_logits,
                                  const std::atomic<bool>* cancel) {
  const HParams& h = model_->hparams();
  const ModelWeights& w = model_->weights();
  ThreadPool& pool = *pool_;
  const int64_t d = h.n_embd, qd = h.q_dim(), kvd = h.kv_dim(), hd = h.head_dim;
  MatmulScratch ms;
  ms.row_buf = row_buf_.data();
  ms.row_buf_stride = static_cast<int64_t>(row_buf_.size()) / shape_.n_threads;
  ms.xq = xq_.data();
  ms.tiles = tiles_.data();
  const bool fast = shape_.kv_f16;
  float* x = x_.data();
  float* xb = xb_.data();
  auto observe = [&](const WeightRef& wr, const float* in, int64_t rows) {
    if (observer_ != nullptr) observer_->observe(wr, in, rows);
  };
  auto norm_rows = [&](float* out, const float* in, const WeightRef& wn, int64_t rows) {
    if (fast) kernels::rmsnorm(pool, out, in, wn.f32(), rows, d, h.norm_eps);
    else for (int64_t i = 0; i < rows; ++i) ref::rmsnorm(out + i * d, in + i * d, wn.f32(), d, h.norm_eps);
  };

  for (int64_t i = 0; i < m; ++i) weight_row_to_f32(x + i * d, w.token_embd, tokens[i]);
  if (fast) {  // the rows' rotary angles, shared by every layer's q and k
    for (int64_t i = 0; i < m; ++i) {
      kernels::rope_angles(rope_cs_.data() + i * (hd / 2), rope_sn_.data() + i * (hd / 2), hd, n_past_ + i,
                           h.rope_theta);
    }
  }

  const std::vector<int32_t>& hidden_layers = shape_.hidden_layers;
  size_t next_hidden = 0;  // the next of hidden_layers to keep
  for (int64_t l = 0; l < h.n_layers; ++l) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      return Status(ErrorCode::kCancelled, "[forward] cancelled");
    }
    const LayerWeights& L = w.layers[static_cast<size_t>(l)];
    norm_rows(xb, x, L.attn_norm, m);
    observe(L.wq, xb, m);
    observe(L.wk, xb, m);
    observe(L.wv, xb, m);
    matmul_shared(pool, {{q_.data(), &L.wq}, {k_.data(), &L.wk}, {v_.data(), &L.wv}}, xb, m, ms);
    if (fast) {
      qkv_fast(l, m);
    } else for (int64_t i = 0; i < m; ++i) {
      float* qi = q_.data() + i * qd;
      float* ki = k_.data() + i * kvd;
      float* vi = v_.data() + i * kvd;
      if (h.qkv_bias) {
        for (int64_t j = 0; j < qd; ++j) qi[j] += L.bq.f32()[j];
        for (int64_t j = 0; j < kvd; ++j) ki[j] += L.bk.f32()[j];
        for (int64_t j = 0; j < kvd; ++j) vi[j] += L.bv.f32()[j];
      }
      if (h.qk_norm) {
        for (int64_t hh = 0; hh < h.n_heads; ++hh) ref::rmsnorm(qi + hh * hd, qi + hh * hd, L.q_norm.f32(), hd, h.norm_eps);
        for (int64_t hh = 0; hh < h.n_kv_heads; ++hh) ref::rmsnorm(ki + hh * hd, ki + hh * hd, L.k_norm.f32(), hd, h.norm_eps);
      }
      const int64_t pos = n_past_ + i;
      auto rope = h.rope_style == RopeStyle::kNeox ? ref::rope_neox : ref::rope_interleaved;
      for (int64_t hh = 0; hh < h.n_heads; ++hh) rope(qi + hh * hd, hd, pos, h.rope_theta);
      for (int64_t hh = 0; hh < h.n_kv_heads; ++hh) rope(ki + hh * hd, hd, pos, h.rope_theta);
      const size_t at = static_cast<size_t>((l * shape_.n_ctx + pos) * kvd);
      std::memcpy(k_cache_.data() + at, ki, sizeof(float) * kvd);
      std::memcpy(v_cache_.data() + at, vi, sizeof(float) * kvd);
    }
    if (fast) {
      kernels::AttentionShape as{m, n_past_, h.n_heads, h.n_kv_heads, hd, 1.0f / std::sqrt(static_cast<float>(hd)),
                                 hd, kv16_head_stride()};  // head-major (k_cache16_)
      const size_t off = static_cast<size_t>(l * shape_.n_ctx * kvd);
      kernels::attention(pool, xb2_.data(), q_.data(), k16() + off, v16() + off, as);
    } else {
      attention(l, m);  // -> xb2 [m, q_dim]
    }
    observe(L.wo, xb2_.data(), m);
    matmul(pool, xb, xb2_.data(), m, L.wo, ms);
    for (int64_t i = 0; i < m * d; ++i) x[i] += xb[i];

    norm_rows(xb, x, L.ffn_norm, m);
    observe(L.w_gate, xb, m);
    observe(L.w_up, xb, m);
    matmul_shared(pool, {{hb_.data(), &L.w_gate}, {hb2_.data(), &L.w_up}}, xb, m, ms);
    if (fast) kernels::swiglu(pool, hb_.data(), hb2_.data(), m, h.n_ff);
    else ref::swiglu(hb_.data(), hb2_.data(), m * h.n_ff);
    observe(L.w_down, hb_.data(), m);
    matmul(pool, xb, hb_.data(), m, L.w_down, ms);
    for (int64_t i = 0; i < m * d; ++i) x[i] += xb[i];
    if (next_hidden < hidden_layers.size() && l == hidden_layers[next_hidden]) {
      std::memcpy(hidden_.data() + static_cast<int64_t>(next_hidden) * m * d, x, sizeof(float) * m * d);
      ++next_hidden;
    }
  }
  hidden_rows_ = hidden_layers.empty() ? 0 : m;

  if (logits_out == nullptr) return Status::ok();
  // The LM head runs only for the rows whose logits are wanted.
  const int64_t first = all_logits ? 0 : m - 1;
  const int64_t rows = m - first;
  norm_rows(xb, x + first * d, w.output_norm, rows);
  observe(w.output, xb, rows);
  matmul(pool, logits_out, xb, rows, w.output, ms);
  return Status::ok();
}

void Transformer::qkv_fast(int64_t layer, int64_t m) {
  const HParams& h = model_->hparams();
  const LayerWeights& L = model_->weights().layers[static_cast<size_t>(layer)];
  const int64_t qd = h.q_dim(), kvd = h.kv_dim(), hd = h.head_dim;
  ThreadPool& pool = *pool_;
  if (h.qkv_bias) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < qd; ++j) q_[static_cast<size_t>(i * qd + j)] += L.bq.f32()[j];
      for (int64_t j = 0; j < kvd; ++j) k_[static_cast<size_t>(i * kvd + j)] += L.bk.f32()[j];
      for (int64_t j = 0; j < kvd; ++j) v_[static_cast<size_t>(i * kvd + j)] += L.bv.f32()[j];
    }
  }
  if (h.qk_norm) {  // per head: the rows of [m * n_heads, head_dim]
    kernels::rmsnorm(pool, q_.data(), q_.data(), L.q_norm.f32(), m * h.n_heads, hd, h.norm_eps);
    kernels::rmsnorm(pool, k_.data(), k_.data(), L.k_norm.f32(), m * h.n_kv_heads, hd, h.norm_eps);
  }
  const auto style = h.rope_style == RopeStyle::kNeox ? kernels::RopeStyle::kNeox : kernels::RopeStyle::kInterleaved;
  kernels::rope(pool, q_.data(), m, h.n_heads, hd, rope_cs_.data(), rope_sn_.data(), style);
  kernels::rope(pool, k_.data(), m, h.n_kv_heads, hd, rope_cs_.data(), rope_sn_.data(), style);
  // kv head h of position p at layer * n_ctx * kv_dim + h * kv16_head_stride() + p * head_dim.
  const int64_t at = layer * shape_.n_ctx * kvd + n_past_ * hd;
  kernels::to_f16_heads(pool, k16() + at, kv16_head_stride(), k_.data(), m, h.n_kv_heads, hd);
  kernels::to_f16_heads(pool, v16() + at, kv16_head_stride(), v_.data(), m, h.n_kv_heads, hd);
}

void Transformer::attention(int64_t layer, int64_t m) {
  const HParams& h = model_->hparams();
  const int64_t hd = h.head_dim, qd = h.q_dim(), kvd = h.kv_dim();
  const int64_t group = h.n_heads / h.n_kv_heads;
  const float sqrt_hd = std::sqrt(static_cast<float>(hd));
  const float* kc = k_cache_.data() + layer * shape_.n_ctx * kvd;
  const float* vc = v_cache_.data() + layer * shape_.n_ctx * kvd;
  pool_->run(m * h.n_heads, [&](int64_t b, int64_t e, int t) {
    float* att = att_.data() + t * shape_.n_ctx;
    for (int64_t job = b; job < e; ++job) {
      const int64_t i = job / h.n_heads, hh = job % h.n_heads;
      const int64_t pos = n_past_ + i;
      const int64_t kvh = hh / group;
      const float* q = q_.data() + i * qd + hh * hd;
      for (int64_t tt = 0; tt <= pos; ++tt) att[tt] = ref::dot_f32(q, kc + tt * kvd + kvh * hd, hd) / sqrt_hd;
      ref::softmax(att, pos + 1);
      float* out = xb2_.data() + i * qd + hh * hd;
      std::memset(out, 0, sizeof(float) * hd);
      for (int64_t tt = 0; tt <= pos; ++tt) {
        const float a = att[tt];
        const float* v = vc + tt * kvd + kvh * hd;
        for (int64_t j = 0; j < hd; ++j) out[j] += a * v[j];
      }
    }
  });
}

}  // namespace pocket
