// Depth growth (see grow.h).
#include "run/grow.h"

#include <algorithm>
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

}  // namespace

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
