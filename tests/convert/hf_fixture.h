// Test fixture: tiny random Hugging Face checkpoints (Llama, Qwen2 with q/k/v bias, Qwen3 with q/k-norm)
// written as safetensors + config.json + tokenizer.json, and an independent reference forward pass over the
// Hugging Face weights (plain loops, rotate-half RoPE) that the imported packages are compared against.
#pragma once

#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "model/transformer.h"
#include "test_util.h"

namespace pocket::testing {

struct HfTensor {
  std::vector<uint64_t> shape;
  std::vector<float> v;  // row-major; already rounded to the dtype the file stores
};

struct HfModel {
  std::string arch = "llama";  // llama | qwen2 | qwen3
  int64_t vocab = 260, dim = 64, layers = 2, heads = 4, kv_heads = 2, head_dim = 16, ff = 96, ctx = 64;
  float theta = 10000.0f, eps = 1e-6f;
  bool tied = false;
  std::map<std::string, HfTensor> w;

  bool bias() const { return arch == "qwen2"; }
  bool qk_norm() const { return arch == "qwen3"; }
};

// dtype: "F32", "F16" or "BF16"; weights are rounded to it so the reference sees what the file holds.
inline HfModel make_hf_model(const std::string& arch, bool tied, const std::string& dtype, uint32_t seed = 7) {
  HfModel m;
  m.arch = arch;
  m.tied = tied;
  if (arch == "qwen3") m.head_dim = 32;  // decoupled from dim / heads, as Qwen3 does
  std::mt19937 rng(seed);
  auto round = [&](float x) {
    if (dtype == "F16") return f16_to_f32(f32_to_f16(x));
    if (dtype == "BF16") return bf16_to_f32(f32_to_bf16(x));
    return x;
  };
  auto add = [&](const std::string& n, std::vector<uint64_t> shape, float scale, float center = 0.0f) {
    HfTensor t;
    t.shape = shape;
    uint64_t count = 1;
    for (uint64_t s : shape) count *= s;
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (uint64_t i = 0; i < count; ++i) t.v.push_back(round(center + scale * u(rng)));
    m.w[n] = std::move(t);
  };
  const uint64_t d = m.dim, q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim, ff = m.ff;
  add("model.embed_tokens.weight", {uint64_t(m.vocab), d}, 1.0f);
  for (int64_t l = 0; l < m.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {d}, 0.2f, 1.0f);
    add(p + "self_attn.q_proj.weight", {q, d}, 1.7f / std::sqrt(float(d)));
    add(p + "self_attn.k_proj.weight", {kv, d}, 1.7f / std::sqrt(float(d)));
    add(p + "self_attn.v_proj.weight", {kv, d}, 1.7f / std::sqrt(float(d)));
    add(p + "self_attn.o_proj.weight", {d, q}, 1.7f / std::sqrt(float(q)));
    if (m.bias()) {
      add(p + "self_attn.q_proj.bias", {q}, 0.3f);
      add(p + "self_attn.k_proj.bias", {kv}, 0.3f);
      add(p + "self_attn.v_proj.bias", {kv}, 0.3f);
    }
    if (m.qk_norm()) {
      add(p + "self_attn.q_norm.weight", {uint64_t(m.head_dim)}, 0.2f, 1.0f);
      add(p + "self_attn.k_norm.weight", {uint64_t(m.head_dim)}, 0.2f, 1.0f);
    }
    add(p + "post_attention_layernorm.weight", {d}, 0.2f, 1.0f);
    add(p + "mlp.gate_proj.weight", {ff, d}, 1.7f / std::sqrt(float(d)));
    add(p + "mlp.up_proj.weight", {ff, d}, 1.7f / std::sqrt(float(d)));
    add(p + "mlp.down_proj.weight", {d, ff}, 1.7f / std::sqrt(float(ff)));
  }
  add("model.norm.weight", {d}, 0.2f, 1.0f);
  if (!tied) add("lm_head.weight", {uint64_t(m.vocab), d}, 1.7f / std::sqrt(float(d)));
  return m;
}

// Serialises tensors (a subset of m.w, by name) as one safetensors file in `dtype`.
inline std::vector<uint8_t> safetensors_bytes(const std::map<std::string, HfTensor>& w, const std::string& dtype) {
  const uint64_t es = dtype == "F32" ? 4 : 2;
  nlohmann::json h = nlohmann::json::object();
  h["__metadata__"] = {{"format", "pt"}};
  std::vector<uint8_t> data;
  for (const auto& [name, t] : w) {
    const uint64_t begin = data.size();
    for (float x : t.v) {
      uint8_t b[4];
      if (dtype == "F32") std::memcpy(b, &x, 4);
      else {
        const uint16_t hv = dtype == "F16" ? f32_to_f16(x) : f32_to_bf16(x);
        std::memcpy(b, &hv, 2);
      }
      data.insert(data.end(), b, b + es);
    }
    h[name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = h.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::vector<uint8_t> out(8);
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

inline std::string hf_config_json(const HfModel& m) {
  const char* cls = m.arch == "llama" ? "LlamaForCausalLM" : m.arch == "qwen2" ? "Qwen2ForCausalLM" : "Qwen3ForCausalLM";
  nlohmann::json c = {{"architectures", {cls}},
                      {"model_type", m.arch},
                      {"vocab_size", m.vocab},
                      {"hidden_size", m.dim},
                      {"num_hidden_layers", m.layers},
                      {"num_attention_heads", m.heads},
                      {"num_key_value_heads", m.kv_heads},
                      {"intermediate_size", m.ff},
                      {"max_position_embeddings", m.ctx},
                      {"rope_theta", m.theta},
                      {"rms_norm_eps", m.eps},
                      {"hidden_act", "silu"},
                      {"tie_word_embeddings", m.tied},
                      {"rope_scaling", nullptr}};
  if (m.arch == "qwen3" || m.dim / m.heads != m.head_dim) c["head_dim"] = m.head_dim;
  return c.dump(2);
}

// GPT-2's byte-to-unicode map: printable bytes stand for themselves, the rest move to U+0100 onwards.
inline std::string gpt2_byte_char(int b) {
  int cp = b, n = 0;
  const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  if (!printable) {
    for (int x = 0; x < b; ++x) {
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
    }
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) s += char(cp);
  else {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

// A byte-level BPE vocabulary: the 256 byte tokens, "ab" (256), "abc" (257); the model has 260 rows.
inline std::string tiny_tokenizer_json() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[gpt2_byte_char(b)] = b;
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  nlohmann::json t = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b", "ab c"}}}}};
  return t.dump();
}

// Writes the checkpoint folder: config.json, tokenizer.json, and one file or `n_shards` shards + index.
inline void write_hf_checkpoint(const HfModel& m, const std::string& dir, const std::string& dtype, int n_shards = 1) {
  std::filesystem::create_directories(dir);
  auto put = [&](const std::string& name, const std::string& text) {
    write_file(dir + "/" + name, std::vector<uint8_t>(text.begin(), text.end()));
  };
  put("config.json", hf_config_json(m));
  put("tokenizer.json", tiny_tokenizer_json());
  if (n_shards == 1) {
    write_file(dir + "/model.safetensors", safetensors_bytes(m.w, dtype));
    return;
  }
  std::vector<std::map<std::string, HfTensor>> shards(n_shards);
  nlohmann::json wm = nlohmann::json::object();
  int i = 0;
  for (const auto& [name, t] : m.w) {
    const int s = i++ % n_shards;
    shards[s][name] = t;
    wm[name] = "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(n_shards) + ".safetensors";
  }
  for (int s = 0; s < n_shards; ++s) {
    write_file(dir + "/model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(n_shards) + ".safetensors",
               safetensors_bytes(shards[s], dtype));
  }
  put("model.safetensors.index.json", nlohmann::json({{"metadata", {{"total_size", 0}}}, {"weight_map", wm}}).dump());
}

// Reference forward over the Hugging Face weights: logits [n_tokens][vocab], every position.
inline std::vector<std::vector<float>> hf_reference_logits(const HfModel& m, const std::vector<int32_t>& tokens) {
  const int64_t d = m.dim, hd = m.head_dim, nh = m.heads, nkv = m.kv_heads, T = static_cast<int64_t>(tokens.size());
  auto W = [&](const std::string& n) -> const std::vector<float>& { return m.w.at(n).v; };
  auto matvec = [](const std::vector<float>& w, const std::vector<float>& x, int64_t rows) {
    const int64_t cols = static_cast<int64_t>(x.size());
    std::vector<float> y(rows, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) s += double(w[r * cols + c]) * x[c];
      y[r] = float(s);
    }
    return y;
  };
  auto rmsnorm = [&](const float* x, const float* w, int64_t n, float* out) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    const double s = 1.0 / std::sqrt(ss / n + m.eps);
    for (int64_t i = 0; i < n; ++i) out[i] = float(w[i] * (x[i] * s));
  };
  auto rope = [&](float* x, int64_t pos) {  // rotate_half: pairs (i, i + hd/2)
    for (int64_t i = 0; i < hd / 2; ++i) {
      const double inv = 1.0 / std::pow(double(m.theta), double(2 * i) / double(hd));
      const double a = pos * inv, c = std::cos(a), s = std::sin(a);
      const double x0 = x[i], x1 = x[i + hd / 2];
      x[i] = float(x0 * c - x1 * s);
      x[i + hd / 2] = float(x1 * c + x0 * s);
    }
  };
  std::vector<std::vector<float>> xs(T), ks(T), vs(T), logits(T);
  for (int64_t t = 0; t < T; ++t) {
    xs[t].assign(W("model.embed_tokens.weight").begin() + tokens[t] * d, W("model.embed_tokens.weight").begin() + (tokens[t] + 1) * d);
  }
  for (int64_t l = 0; l < m.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    std::vector<std::vector<float>> qs(T);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<float> xn(d);
      rmsnorm(xs[t].data(), W(p + "input_layernorm.weight").data(), d, xn.data());
      qs[t] = matvec(W(p + "self_attn.q_proj.weight"), xn, nh * hd);
      ks[t] = matvec(W(p + "self_attn.k_proj.weight"), xn, nkv * hd);
      vs[t] = matvec(W(p + "self_attn.v_proj.weight"), xn, nkv * hd);
      if (m.bias()) {
        for (int64_t i = 0; i < nh * hd; ++i) qs[t][i] += W(p + "self_attn.q_proj.bias")[i];
        for (int64_t i = 0; i < nkv * hd; ++i) ks[t][i] += W(p + "self_attn.k_proj.bias")[i];
        for (int64_t i = 0; i < nkv * hd; ++i) vs[t][i] += W(p + "self_attn.v_proj.bias")[i];
      }
      for (int64_t h = 0; h < nh; ++h) {
        if (m.qk_norm()) rmsnorm(&qs[t][h * hd], W(p + "self_attn.q_norm.weight").data(), hd, &qs[t][h * hd]);
        rope(&qs[t][h * hd], t);
      }
      for (int64_t h = 0; h < nkv; ++h) {
        if (m.qk_norm()) rmsnorm(&ks[t][h * hd], W(p + "self_attn.k_norm.weight").data(), hd, &ks[t][h * hd]);
        rope(&ks[t][h * hd], t);
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<float> att(nh * hd, 0.0f);
      for (int64_t h = 0; h < nh; ++h) {
        const int64_t kh = h / (nh / nkv);
        std::vector<double> sc(t + 1);
        double mx = -1e300;
        for (int64_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i) dot += double(qs[t][h * hd + i]) * ks[s][kh * hd + i];
          sc[s] = dot / std::sqrt(double(hd));
          mx = std::max(mx, sc[s]);
        }
        double sum = 0;
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int64_t s = 0; s <= t; ++s) {
          for (int64_t i = 0; i < hd; ++i) att[h * hd + i] += float(sc[s] / sum * vs[s][kh * hd + i]);
        }
      }
      const auto o = matvec(W(p + "self_attn.o_proj.weight"), att, d);
      for (int64_t i = 0; i < d; ++i) xs[t][i] += o[i];
      std::vector<float> xn(d);
      rmsnorm(xs[t].data(), W(p + "post_attention_layernorm.weight").data(), d, xn.data());
      auto g = matvec(W(p + "mlp.gate_proj.weight"), xn, m.ff);
      const auto u = matvec(W(p + "mlp.up_proj.weight"), xn, m.ff);
      for (int64_t i = 0; i < m.ff; ++i) g[i] = float(g[i] / (1.0 + std::exp(-double(g[i]))) * u[i]);
      const auto dn = matvec(W(p + "mlp.down_proj.weight"), g, d);
      for (int64_t i = 0; i < d; ++i) xs[t][i] += dn[i];
    }
  }
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> xn(d);
    rmsnorm(xs[t].data(), W("model.norm.weight").data(), d, xn.data());
    logits[t] = matvec(W(m.tied ? "model.embed_tokens.weight" : "lm_head.weight"), xn, m.vocab);
  }
  return logits;
}

// Teacher-forced logits of every position from a package, through the runtime.
inline std::vector<std::vector<float>> package_logits(const std::string& path, const std::vector<int32_t>& tokens,
                                                      std::string* error = nullptr) {
  auto model = Model::load(path);
  if (!model) {
    if (error) *error = model.status().to_string();
    return {};
  }
  ThreadPool pool(2);
  SessionShape shape;
  shape.n_ctx = static_cast<int64_t>(tokens.size());
  shape.n_batch = shape.n_ctx;
  shape.n_threads = 2;
  shape.n_logit_rows = shape.n_ctx;
  auto tf = Transformer::create(*model, shape, &pool);
  if (!tf) {
    if (error) *error = tf.status().to_string();
    return {};
  }
  Status st = (*tf)->forward(tokens, true);
  if (!st.is_ok()) {
    if (error) *error = st.to_string();
    return {};
  }
  std::vector<std::vector<float>> out;
  const int64_t V = (*model)->hparams().n_vocab;
  for (size_t i = 0; i < tokens.size(); ++i) out.emplace_back((*tf)->logits(int64_t(i)), (*tf)->logits(int64_t(i)) + V);
  return out;
}

inline float max_abs_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return INFINITY;
  float m = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return INFINITY;
    for (size_t j = 0; j < a[i].size(); ++j) m = std::max(m, std::fabs(a[i][j] - b[i][j]));
  }
  return m;
}

}  // namespace pocket::testing
