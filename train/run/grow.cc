// Depth growth (see grow.h).
#include "run/grow.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace pocket::train {
namespace {

// "blk.12.attn_q.weight" -> {12, "attn_q.weight"}; false for a tensor outside the blocks.
bool split_block_name(const std::string& name, int64_t* layer, std::string* rest) {
  if (name.rfind("blk.", 0) != 0) return false;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return false;
  int64_t n = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9' || n > 1'000'000) return false;
    n = n * 10 + (name[i] - '0');
  }
  *layer = n;
  *rest = name.substr(dot + 1);
  return true;
}

// `src` [rows, cols] (or [rows] when cols == 0) placed top-left in a [new_rows, new_cols] tensor whose other
// entries are `fill` (kZero) or Normal(0, 0.02) (kRandom).
enum class NewEntries { kZero, kRandom };
NamedTensor widen(const NamedTensor& src, int64_t new_rows, int64_t new_cols, NewEntries fill, std::mt19937_64* rng) {
  const int64_t rows = src.shape[0], cols = src.shape.size() == 2 ? src.shape[1] : 1;
  const int64_t nc = src.shape.size() == 2 ? new_cols : 1;
  NamedTensor t;
  t.name = src.name;
  t.shape = src.shape.size() == 2 ? std::vector<int64_t>{new_rows, new_cols} : std::vector<int64_t>{new_rows};
  t.data.assign(static_cast<size_t>(new_rows * nc), 0.0f);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (int64_t r = 0; r < new_rows; ++r) {
    for (int64_t c = 0; c < nc; ++c) {
      float& x = t.data[static_cast<size_t>(r * nc + c)];
      if (r < rows && c < cols) x = src.data[static_cast<size_t>(r * cols + c)];
      else if (fill == NewEntries::kRandom) x = normal(*rng);
    }
  }
  return t;
}

}  // namespace

Expected<GrownModel> grow_width(const HParams& from, const std::vector<NamedTensor>& weights, const WidthSpec& spec) {
  HParams h = from;
  h.n_embd = spec.n_embd > 0 ? spec.n_embd : from.n_embd;
  h.n_heads = spec.n_heads > 0 ? spec.n_heads : from.n_heads;
  h.n_kv_heads = spec.n_kv_heads > 0 ? spec.n_kv_heads : from.n_kv_heads;
  h.n_ff = spec.n_ff > 0 ? spec.n_ff : from.n_ff;
  if (h.n_embd < from.n_embd || h.n_heads < from.n_heads || h.n_kv_heads < from.n_kv_heads || h.n_ff < from.n_ff) {
    return invalid_argument("[grow] width growth cannot shrink: width " + std::to_string(from.n_embd) + " -> " +
                            std::to_string(h.n_embd) + ", heads " + std::to_string(from.n_heads) + "/" +
                            std::to_string(from.n_kv_heads) + " -> " + std::to_string(h.n_heads) + "/" +
                            std::to_string(h.n_kv_heads) + ", ffn " + std::to_string(from.n_ff) + " -> " +
                            std::to_string(h.n_ff));
  }
  if (h.n_embd == from.n_embd && h.n_heads == from.n_heads && h.n_kv_heads == from.n_kv_heads && h.n_ff == from.n_ff) {
    return invalid_argument("[grow] the requested width, heads and FFN are the source's: nothing to grow");
  }
  if (from.n_kv_heads <= 0 || h.n_kv_heads <= 0 || h.n_heads % h.n_kv_heads != 0 ||
      h.n_heads / h.n_kv_heads != from.n_heads / from.n_kv_heads) {
    return invalid_argument("[grow] the grown model must keep the source's " + std::to_string(from.n_heads) + ":" +
                            std::to_string(from.n_kv_heads) + " query:KV head ratio (query head h reads KV head h / " +
                            std::to_string(from.n_kv_heads > 0 ? from.n_heads / from.n_kv_heads : 0) +
                            "); got " + std::to_string(h.n_heads) + ":" + std::to_string(h.n_kv_heads));
  }
  const double ratio = static_cast<double>(from.n_embd) / static_cast<double>(h.n_embd);
  h.norm_eps = static_cast<float>(from.norm_eps * ratio);
  POCKET_RETURN_IF_ERROR(h.validate());
  const float norm_scale = static_cast<float>(std::sqrt(ratio));
  const int64_t d0 = from.n_embd, d = h.n_embd;
  std::mt19937_64 rng(spec.seed);
  GrownModel g;
  g.hparams = h;
  for (int64_t l = 0; l < from.n_layers; ++l) g.source_layer.push_back(l);
  for (const NamedTensor& t : weights) {
    int64_t layer = -1;
    std::string rest = t.name;
    split_block_name(t.name, &layer, &rest);
    // The source shape each tensor must have, and its grown shape and fill.
    struct Plan { int64_t r0, c0, r, c; NewEntries fill; bool norm; };
    Plan p{};
    if (rest == "token_embd.weight" || rest == "output.weight") p = {from.n_vocab, d0, h.n_vocab, d, NewEntries::kZero, false};
    else if (rest == "output_norm.weight" || rest == "attn_norm.weight" || rest == "ffn_norm.weight") p = {d0, 0, d, 0, NewEntries::kZero, true};
    else if (rest == "attn_q.weight") p = {from.q_dim(), d0, h.q_dim(), d, NewEntries::kRandom, false};
    else if (rest == "attn_k.weight" || rest == "attn_v.weight") p = {from.kv_dim(), d0, h.kv_dim(), d, NewEntries::kRandom, false};
    else if (rest == "attn_q.bias") p = {from.q_dim(), 0, h.q_dim(), 0, NewEntries::kZero, false};
    else if (rest == "attn_k.bias" || rest == "attn_v.bias") p = {from.kv_dim(), 0, h.kv_dim(), 0, NewEntries::kZero, false};
    else if (rest == "attn_q_norm.weight" || rest == "attn_k_norm.weight") p = {from.head_dim, 0, h.head_dim, 0, NewEntries::kZero, false};
    else if (rest == "attn_output.weight") p = {d0, from.q_dim(), d, h.q_dim(), NewEntries::kZero, false};
    else if (rest == "ffn_gate.weight" || rest == "ffn_up.weight") p = {from.n_ff, d0, h.n_ff, d, NewEntries::kRandom, false};
    else if (rest == "ffn_down.weight") p = {d0, from.n_ff, d, h.n_ff, NewEntries::kZero, false};
    else return invalid_argument("[grow] width growth does not know the tensor " + t.name);
    const std::vector<int64_t> want = p.c0 > 0 ? std::vector<int64_t>{p.r0, p.c0} : std::vector<int64_t>{p.r0};
    if (t.shape != want || static_cast<int64_t>(t.data.size()) != p.r0 * std::max<int64_t>(p.c0, 1)) {
      return invalid_argument("[grow] tensor " + t.name + " does not have the shape its architecture implies");
    }
    NamedTensor w = widen(t, p.r, p.c, p.fill, &rng);
    if (p.norm) {
      for (int64_t i = 0; i < p.r; ++i) {
        float& x = w.data[static_cast<size_t>(i)];
        x = (i < p.r0 ? x : 1.0f) * norm_scale;  // new entries: a unit gain, scaled like the rest
      }
    }
    g.weights.push_back(std::move(w));
  }
  return g;
}

Expected<GrownModel> grow_depth(const HParams& from, const std::vector<NamedTensor>& weights, int64_t new_layers) {
  const int64_t L = from.n_layers;
  if (L <= 0) return invalid_argument("[grow] the source model has no layers");
  if (new_layers <= L || new_layers > 256) {
    return invalid_argument("[grow] the grown model needs more layers than the source's " + std::to_string(L) +
                            " and at most 256; got " + std::to_string(new_layers));
  }
  GrownModel g;
  g.hparams = from;
  g.hparams.n_layers = new_layers;
  std::vector<std::vector<const NamedTensor*>> per_layer(static_cast<size_t>(L));
  for (const NamedTensor& t : weights) {
    int64_t layer = 0;
    std::string rest;
    if (!split_block_name(t.name, &layer, &rest)) {
      g.weights.push_back(t);
      continue;
    }
    if (layer < 0 || layer >= L) {
      return invalid_argument("[grow] weight " + t.name + " names layer " + std::to_string(layer) + " of a " +
                              std::to_string(L) + "-layer model");
    }
    per_layer[static_cast<size_t>(layer)].push_back(&t);
  }
  for (int64_t i = 0; i < L; ++i) {
    for (const char* out : {"attn_output.weight", "ffn_down.weight"}) {
      const std::string want = "blk." + std::to_string(i) + "." + out;
      const auto& ts = per_layer[static_cast<size_t>(i)];
      if (std::none_of(ts.begin(), ts.end(), [&](const NamedTensor* t) { return t->name == want; })) {
        return invalid_argument("[grow] the source has no " + want + " (a residual output the growth zeroes)");
      }
    }
  }
  int64_t prev_source = -1;
  for (int64_t j = 0; j < new_layers; ++j) {
    const int64_t src = j * L / new_layers;
    const bool first_copy = src != prev_source;
    prev_source = src;
    g.source_layer.push_back(src);
    const std::string prefix = "blk." + std::to_string(src) + ".";
    for (const NamedTensor* t : per_layer[static_cast<size_t>(src)]) {
      NamedTensor c = *t;
      const std::string rest = c.name.substr(prefix.size());
      c.name = "blk." + std::to_string(j) + "." + rest;
      if (!first_copy && (rest == "attn_output.weight" || rest == "ffn_down.weight")) {
        std::fill(c.data.begin(), c.data.end(), 0.0f);
      }
      g.weights.push_back(std::move(c));
    }
  }
  return g;
}

}  // namespace pocket::train
