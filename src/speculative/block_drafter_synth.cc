// Random block-drafter packages: N(0, 1/cols) matrices (activations stay O(1)), unit norms, a random mask row.
#include "speculative/block_drafter_synth.h"

#include <cmath>

#include "convert/quantize_model.h"
#include "convert/tensor_fill.h"
#include "format/package_writer.h"
#include "model/model.h"
#include "sampling/rng.h"
#include "speculative/block_drafter_format.h"

namespace pocket {

Status write_random_block_drafter(const Model& target, const BlockDrafterSynthOptions& o, const std::string& path) {
  const HParams& th = target.hparams();
  BlockDrafterConfig c;
  c.blocks = th;
  c.blocks.name = th.name + "-block-drafter";
  c.blocks.n_layers = o.n_layers;
  c.blocks.tied_embeddings = true;
  c.blocks.qkv_bias = false;
  c.blocks.qk_norm = false;
  c.block_size = o.block_size;
  c.target_layers = o.target_layers;
  if (c.target_layers.empty()) {
    const int64_t L = th.n_layers, taps = std::min<int64_t>(3, L);
    for (int64_t i = 0; i < taps; ++i) {
      c.target_layers.push_back(static_cast<int32_t>(taps == 1 ? L - 1 : i * (L - 1) / (taps - 1)));
    }
  }
  c.target_name = th.name;
  c.target_fingerprint = package_fingerprint(target.package());
  c.target_n_layers = th.n_layers;
  c.target_n_vocab = th.n_vocab;
  c.target_n_embd = th.n_embd;
  if (Status st = c.validate(); !st.is_ok()) return invalid_argument("[synth] " + st.message());
  const HParams& h = c.blocks;

  PackageWriter pw;
  pw.set_descriptor(c.to_json());
  uint64_t tensor_index = 0;
  auto random = [&](const std::string& name, std::vector<uint64_t> shape, DType want, float stdev) {
    const uint64_t seed = o.seed * 1000003ull + tensor_index++;
    const uint64_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.back();
    const DType t = shape.size() == 2 ? storage_dtype(want, name, rows, /*interleave=*/true) : DType::kF32;
    return pw.add_tensor(name, t, shape, [=](std::span<uint8_t> out) {
      Rng rng(seed);
      std::vector<float> v(static_cast<size_t>(rows * cols));
      const float k = stdev * std::sqrt(3.0f);  // sum of 4 uniforms has variance 4/12
      for (auto& x : v) x = static_cast<float>(rng.uniform() + rng.uniform() + rng.uniform() + rng.uniform() - 2.0) * k;
      return convert_f32(v, t, rows, cols, out);
    });
  };
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    return random(name, {static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)}, o.dtype,
                  1.0f / std::sqrt(static_cast<float>(cols)));
  };
  auto ones = [&](const std::string& name, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n), 1.0f);
    return pw.add_tensor(name, DType::kF32, {static_cast<uint64_t>(n)},
                         std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4));
  };
  const int64_t d = h.n_embd;
  POCKET_RETURN_IF_ERROR(matrix(kDrafterFuse, d, c.n_taps() * d));
  POCKET_RETURN_IF_ERROR(ones(kDrafterFuseNorm, d));
  POCKET_RETURN_IF_ERROR(random(kDrafterMaskEmbd, {static_cast<uint64_t>(d)}, DType::kF32, 1.0f));
  for (int64_t l = 0; l < h.n_layers; ++l) {
    auto n = [&](const char* s) { return layer_tensor_name(l, s); };
    POCKET_RETURN_IF_ERROR(ones(n("attn_norm.weight"), d));
    POCKET_RETURN_IF_ERROR(matrix(n("attn_q.weight"), h.q_dim(), d));
    POCKET_RETURN_IF_ERROR(matrix(n("attn_k.weight"), h.kv_dim(), d));
    POCKET_RETURN_IF_ERROR(matrix(n("attn_v.weight"), h.kv_dim(), d));
    POCKET_RETURN_IF_ERROR(matrix(n("attn_output.weight"), d, h.q_dim()));
    POCKET_RETURN_IF_ERROR(ones(n("ffn_norm.weight"), d));
    POCKET_RETURN_IF_ERROR(matrix(n("ffn_gate.weight"), h.n_ff, d));
    POCKET_RETURN_IF_ERROR(matrix(n("ffn_up.weight"), h.n_ff, d));
    POCKET_RETURN_IF_ERROR(matrix(n("ffn_down.weight"), d, h.n_ff));
  }
  POCKET_RETURN_IF_ERROR(ones(kDrafterOutputNorm, d));
  return pw.write(path);
}

}  // namespace pocket
