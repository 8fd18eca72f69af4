// Function-preserving widening (widen.h has the construction and why it keeps the function).
#include "convert/widen.h"

#include <algorithm>
#include <cmath>

#include "convert/quantize_model.h"
#include "convert/tensor_fill.h"
#include "format/package.h"
#include "format/package_writer.h"
#include "model/model.h"
#include "sampling/rng.h"

namespace pocket {

namespace {

constexpr int64_t kGroup = 32;  // the block formats' group width: real and random columns never share one

Status grow(const char* field, int64_t small, int64_t wide) {
  if (wide < small) {
    return invalid_argument("[widen] the wide shape's " + std::string(field) + " (" + std::to_string(wide) +
                            ") is smaller than the model's (" + std::to_string(small) + ")");
  }
  return Status::ok();
}

// rows x cols of N(0, 1/cols)-like values (a sum of 4 uniforms, as synth writes), from `seed`.
std::vector<float> random_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(rows * cols));
  const float k = std::sqrt(3.0f / static_cast<float>(cols));
  for (auto& x : v)
    x = static_cast<float>(rng.uniform() + rng.uniform() + rng.uniform() + rng.uniform() - 2.0) * k;
  return v;
}

}  // namespace

Expected<Widening> Widening::create(const HParams& small, const HParams& shape) {
  POCKET_RETURN_IF_ERROR(small.validate());
  if (small.qkv_bias || small.qk_norm) {
    return unsupported("[widen] only plain Llama blocks can be widened ('" + small.name + "' has " +
                       (small.qkv_bias ? "q/k/v biases" : "q/k norms") + ")");
  }
  POCKET_RETURN_IF_ERROR(grow("n_embd", small.n_embd, shape.n_embd));
  POCKET_RETURN_IF_ERROR(grow("n_layers", small.n_layers, shape.n_layers));
  POCKET_RETURN_IF_ERROR(grow("n_heads", small.n_heads, shape.n_heads));
  POCKET_RETURN_IF_ERROR(grow("n_kv_heads", small.n_kv_heads, shape.n_kv_heads));
  POCKET_RETURN_IF_ERROR(grow("n_ff", small.n_ff, shape.n_ff));
  if (shape.n_kv_heads <= 0 || shape.n_heads % shape.n_kv_heads != 0) {
    return invalid_argument("[widen] the wide shape's n_heads must be a multiple of its n_kv_heads");
  }
  POCKET_RETURN_IF_ERROR(
      grow("heads per KV head", small.n_heads / small.n_kv_heads, shape.n_heads / shape.n_kv_heads));
  if (shape.head_dim < small.head_dim || shape.head_dim % small.head_dim != 0) {
    return invalid_argument("[widen] the wide shape's head_dim (" + std::to_string(shape.head_dim) +
                            ") must be a multiple of the model's (" + std::to_string(small.head_dim) +
                            "), so every RoPE pair keeps its frequency");
  }
  Widening w;
  w.small_ = small;
  HParams h = shape;
  h.family = small.family;
  h.name = small.name + "@" + shape.name;
  h.n_vocab = std::max(small.n_vocab, shape.n_vocab);
  h.n_ctx_train = std::max(small.n_ctx_train, shape.n_ctx_train);
  h.rope_theta = small.rope_theta;
  h.rope_style = small.rope_style;
  h.norm_eps = static_cast<float>(static_cast<double>(small.norm_eps) * static_cast<double>(small.n_embd) /
                                  static_cast<double>(shape.n_embd));
  h.tied_embeddings = small.tied_embeddings;
  h.qkv_bias = false;
  h.qk_norm = false;
  if (Status st = h.validate(); !st.is_ok())
    return invalid_argument("[widen] the wide shape: " + st.message());
  w.wide_ = h;
  for (int64_t l = 0; l < small.n_layers; ++l) {
    w.layer_map_.push_back(static_cast<int32_t>((l + 1) * h.n_layers / small.n_layers - 1));
  }
  return w;
}

int64_t Widening::pad_from() const {
  return std::min(wide_.n_embd, (small_.n_embd + kGroup - 1) / kGroup * kGroup);
}

namespace {

int64_t head_dim_map(const HParams& s, const HParams& w, int64_t k) {
  const int64_t r = w.head_dim / s.head_dim;
  if (s.rope_style == RopeStyle::kNeox) {
    const int64_t half = s.head_dim / 2;
    return (k / half) * (w.head_dim / 2) + r * (k % half);
  }
  return 2 * r * (k / 2) + k % 2;  // interleaved: pair k/2 -> pair r * (k/2)
}

}  // namespace

int64_t Widening::q_row(int64_t h, int64_t k) const {
  const int64_t g = small_.n_heads / small_.n_kv_heads, gw = wide_.n_heads / wide_.n_kv_heads;
  const int64_t head = (h / g) * gw + h % g;
  return head * wide_.head_dim + head_dim_map(small_, wide_, k);
}

int64_t Widening::kv_row(int64_t g, int64_t k) const {
  return g * wide_.head_dim + head_dim_map(small_, wide_, k);
}

std::vector<float> Widening::norm(std::span<const float> g) const {
  std::vector<float> out(static_cast<size_t>(wide_.n_embd), 1.0f);
  const float s =
      static_cast<float>(std::sqrt(static_cast<double>(small_.n_embd) / static_cast<double>(wide_.n_embd)));
  for (size_t i = 0; i < g.size(); ++i) out[i] = g[i] * s;
  return out;
}

std::vector<float> Widening::residual_vector(std::span<const float> v) const {
  std::vector<float> out(static_cast<size_t>(wide_.n_embd), 0.0f);
  std::copy(v.begin(), v.end(), out.begin());
  return out;
}

DenseLayer Widening::layer(const DenseLayer& s, uint64_t seed) const {
  const int64_t d = small_.n_embd, D = wide_.n_embd, hd = small_.head_dim, pf = pad_from();
  DenseLayer w = identity_layer(seed);
  w.attn_norm = norm(s.attn_norm);
  w.ffn_norm = norm(s.ffn_norm);
  auto put_row = [&](std::vector<float>& dst, int64_t wide_row, const float* src, float scale) {
    float* row = dst.data() + wide_row * D;
    std::fill(row, row + pf, 0.0f);
    if (src != nullptr) {
      for (int64_t c = 0; c < d; ++c) row[c] = src[c] * scale;
    }
  };
  const float qscale =
      static_cast<float>(std::sqrt(static_cast<double>(wide_.head_dim) / static_cast<double>(hd)));
  for (int64_t h = 0; h < small_.n_heads; ++h) {
    for (int64_t k = 0; k < hd; ++k)
      put_row(w.attn_q, q_row(h, k), s.attn_q.data() + (h * hd + k) * d, qscale);
  }
  // A real KV head's added dimensions: k rows zero over the real columns (nothing added to q.k).
  for (int64_t g = 0; g < small_.n_kv_heads; ++g) {
    for (int64_t k = 0; k < wide_.head_dim; ++k) put_row(w.attn_k, g * wide_.head_dim + k, nullptr, 0.0f);
    for (int64_t k = 0; k < hd; ++k) {
      put_row(w.attn_k, kv_row(g, k), s.attn_k.data() + (g * hd + k) * d, 1.0f);
      put_row(w.attn_v, kv_row(g, k), s.attn_v.data() + (g * hd + k) * d, 1.0f);
    }
  }
  // attn_output: only the real heads' real dimensions, only into the real residual coordinates.
  const int64_t qw = wide_.q_dim(), qs = small_.q_dim();
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t h = 0; h < small_.n_heads; ++h) {
      for (int64_t k = 0; k < hd; ++k)
        w.attn_output[i * qw + q_row(h, k)] = s.attn_output[i * qs + h * hd + k];
    }
  }
  const int64_t ff = small_.n_ff, ffw = wide_.n_ff;
  for (int64_t r = 0; r < ff; ++r) {
    put_row(w.ffn_gate, r, s.ffn_gate.data() + r * d, 1.0f);
    put_row(w.ffn_up, r, s.ffn_up.data() + r * d, 1.0f);
  }
  for (int64_t i = 0; i < d; ++i) std::copy_n(s.ffn_down.data() + i * ff, ff, w.ffn_down.data() + i * ffw);
  return w;
}

DenseLayer Widening::identity_layer(uint64_t seed) const {
  const int64_t D = wide_.n_embd;
  DenseLayer w;
  w.attn_norm.assign(static_cast<size_t>(D), 1.0f);
  w.ffn_norm.assign(static_cast<size_t>(D), 1.0f);
  w.attn_q = random_matrix(wide_.q_dim(), D, seed * 16 + 1);
  w.attn_k = random_matrix(wide_.kv_dim(), D, seed * 16 + 2);
  w.attn_v = random_matrix(wide_.kv_dim(), D, seed * 16 + 3);
  w.attn_output.assign(static_cast<size_t>(D * wide_.q_dim()), 0.0f);
  w.ffn_gate = random_matrix(wide_.n_ff, D, seed * 16 + 4);
  w.ffn_up = random_matrix(wide_.n_ff, D, seed * 16 + 5);
  w.ffn_down.assign(static_cast<size_t>(D * wide_.n_ff), 0.0f);
  return w;
}

std::vector<float> Widening::vocab_matrix(std::span<const float> s, bool input_rows_zero_padded,
                                          uint64_t seed) const {
  const int64_t d = small_.n_embd, D = wide_.n_embd, V = small_.n_vocab, pf = pad_from();
  std::vector<float> w = random_matrix(wide_.n_vocab, D, seed);
  for (int64_t r = 0; r < wide_.n_vocab; ++r) {
    float* row = w.data() + r * D;
    std::fill(row, row + (r < V && input_rows_zero_padded ? D : pf), 0.0f);
    if (r < V) std::copy_n(s.data() + r * d, d, row);
  }
  return w;
}

std::vector<float> Widening::fuse_matrix(std::span<const float> s, int64_t taps, uint64_t seed) const {
  const int64_t d = small_.n_embd, D = wide_.n_embd, pf = pad_from();
  std::vector<float> w = random_matrix(D, taps * D, seed);
  for (int64_t i = 0; i < D; ++i) {
    for (int64_t t = 0; t < taps; ++t) {
      float* dst = w.data() + i * taps * D + t * D;
      std::fill(dst, dst + pf, 0.0f);
      if (i < d) std::copy_n(s.data() + i * taps * d + t * d, d, dst);
    }
  }
  return w;
}

Status read_f32_tensor(const Package& p, const std::string& name, std::vector<uint64_t> shape,
                       std::vector<float>* out, int64_t max_rows) {
  const TensorInfo* t = p.find(name);
  if (t == nullptr) return corrupt_file("[widen] tensor '" + name + "' is missing: " + p.path());
  if (t->shape != shape)
    return corrupt_file("[widen] tensor '" + name + "' has an unexpected shape: " + p.path());
  return tensor_to_f32(*t, out, max_rows);
}

Expected<DenseLayer> read_dense_layer(const Package& p, const HParams& h, int64_t l) {
  const auto d = static_cast<uint64_t>(h.n_embd), q = static_cast<uint64_t>(h.q_dim()),
             kv = static_cast<uint64_t>(h.kv_dim()), ff = static_cast<uint64_t>(h.n_ff);
  DenseLayer s;
  auto rd = [&](const char* suffix, std::vector<uint64_t> shape, std::vector<float>* out) {
    return read_f32_tensor(p, layer_tensor_name(l, suffix), std::move(shape), out);
  };
  POCKET_RETURN_IF_ERROR(rd("attn_norm.weight", {d}, &s.attn_norm));
  POCKET_RETURN_IF_ERROR(rd("attn_q.weight", {q, d}, &s.attn_q));
  POCKET_RETURN_IF_ERROR(rd("attn_k.weight", {kv, d}, &s.attn_k));
  POCKET_RETURN_IF_ERROR(rd("attn_v.weight", {kv, d}, &s.attn_v));
  POCKET_RETURN_IF_ERROR(rd("attn_output.weight", {d, q}, &s.attn_output));
  POCKET_RETURN_IF_ERROR(rd("ffn_norm.weight", {d}, &s.ffn_norm));
  POCKET_RETURN_IF_ERROR(rd("ffn_gate.weight", {ff, d}, &s.ffn_gate));
  POCKET_RETURN_IF_ERROR(rd("ffn_up.weight", {ff, d}, &s.ffn_up));
  POCKET_RETURN_IF_ERROR(rd("ffn_down.weight", {d, ff}, &s.ffn_down));
  return s;
}

Status add_f32_tensor(PackageWriter& pw, const std::string& name, std::vector<uint64_t> shape,
                      const std::vector<float>& v, DType want) {
  const uint64_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.back();
  const DType t = shape.size() == 2 ? storage_dtype(want, name, rows, /*interleave=*/true) : DType::kF32;
  std::vector<uint8_t> bytes(*tensor_bytes(t, shape));
  POCKET_RETURN_IF_ERROR(convert_f32(v, t, rows, cols, bytes));
  return pw.add_tensor(name, t, std::move(shape), bytes);
}

Status add_dense_layer(PackageWriter& pw, const HParams& h, int64_t l, const DenseLayer& w, DType dtype) {
  const auto d = static_cast<uint64_t>(h.n_embd), q = static_cast<uint64_t>(h.q_dim()),
             kv = static_cast<uint64_t>(h.kv_dim()), ff = static_cast<uint64_t>(h.n_ff);
  auto add = [&](const char* suffix, std::vector<uint64_t> shape, const std::vector<float>& v) {
    return add_f32_tensor(pw, layer_tensor_name(l, suffix), std::move(shape), v, dtype);
  };
  POCKET_RETURN_IF_ERROR(add("attn_norm.weight", {d}, w.attn_norm));
  POCKET_RETURN_IF_ERROR(add("attn_q.weight", {q, d}, w.attn_q));
  POCKET_RETURN_IF_ERROR(add("attn_k.weight", {kv, d}, w.attn_k));
  POCKET_RETURN_IF_ERROR(add("attn_v.weight", {kv, d}, w.attn_v));
  POCKET_RETURN_IF_ERROR(add("attn_output.weight", {d, q}, w.attn_output));
  POCKET_RETURN_IF_ERROR(add("ffn_norm.weight", {d}, w.ffn_norm));
  POCKET_RETURN_IF_ERROR(add("ffn_gate.weight", {ff, d}, w.ffn_gate));
  POCKET_RETURN_IF_ERROR(add("ffn_up.weight", {ff, d}, w.ffn_up));
  POCKET_RETURN_IF_ERROR(add("ffn_down.weight", {d, ff}, w.ffn_down));
  return Status::ok();
}

Status write_widened_model(const Model& small, const HParams& shape, const WidenOptions& o,
                           const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(Widening w, Widening::create(small.hparams(), shape));
  const HParams& s = w.small();
  const HParams& h = w.wide();
  const Package& p = small.package();
  PackageWriter pw;
  pw.set_descriptor(h.to_json());
  pw.set_inference_config(std::string(p.config_json()));
  const auto tok = p.tokenizer_bytes();
  pw.set_tokenizer(std::vector<uint8_t>(tok.begin(), tok.end()));
  const auto V = static_cast<uint64_t>(s.n_vocab), d = static_cast<uint64_t>(s.n_embd);
  const auto Vw = static_cast<uint64_t>(h.n_vocab), D = static_cast<uint64_t>(h.n_embd);
  uint64_t seed = o.seed * 1000003ull;
  std::vector<float> t;
  POCKET_RETURN_IF_ERROR(read_f32_tensor(p, "token_embd.weight", {V, d}, &t));
  POCKET_RETURN_IF_ERROR(
      add_f32_tensor(pw, "token_embd.weight", {Vw, D}, w.vocab_matrix(t, true, ++seed), o.dtype));
  int64_t next = 0;  // the next small layer
  for (int64_t l = 0; l < h.n_layers; ++l) {
    DenseLayer wl;
    if (next < s.n_layers && w.layer_map()[static_cast<size_t>(next)] == l) {
      POCKET_ASSIGN_OR_RETURN(DenseLayer sl, read_dense_layer(p, s, next));
      wl = w.layer(sl, ++seed);
      ++next;
    } else {
      wl = w.identity_layer(++seed);
    }
    POCKET_RETURN_IF_ERROR(add_dense_layer(pw, h, l, wl, o.dtype));
  }
  POCKET_RETURN_IF_ERROR(read_f32_tensor(p, "output_norm.weight", {d}, &t));
  POCKET_RETURN_IF_ERROR(add_f32_tensor(pw, "output_norm.weight", {D}, w.norm(t), DType::kF32));
  if (!s.tied_embeddings) {
    POCKET_RETURN_IF_ERROR(read_f32_tensor(p, "output.weight", {V, d}, &t));
    POCKET_RETURN_IF_ERROR(
        add_f32_tensor(pw, "output.weight", {Vw, D}, w.vocab_matrix(t, false, ++seed), o.dtype));
  }
  return pw.write(path);
}

}  // namespace pocket
