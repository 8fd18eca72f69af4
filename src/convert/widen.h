// Function-preserving widening: a trained small Llama-family model written in a larger shape (wider residual
// stream, more and wider heads, a wider FFN, more layers, a larger vocabulary) that computes the same logits
// over the small model's vocabulary. `pocket synth --arch pocket-0.3b --widen SMALL.pocket` uses it to get a
// target with the cost of pocket-0.3b and the behaviour of a trained model (docs/speculative.md, "Widened
// target"); speculative/block_drafter_widen.h does the same for a block drafter trained for SMALL.
//
// How the function is kept (d = small width, D = wide width; every added weight that is not forced to zero
// is random, so every matmul does the same work as in a real model of the wide shape):
// - The residual stream is [x, 0]: the embedding, every output projection (attn_output, ffn_down) and the
//   drafter's fuse write zeros past d, so those coordinates stay exactly zero.
// - RMSNorm over D of [x, 0] is sqrt(D/d) times RMSNorm over d of x when eps is scaled by d/D: the wide eps
// is
//   small eps * d/D and the real part of every norm weight is multiplied by sqrt(d/D).
// - Heads: small head h (of group h / g, g = heads per KV head) is wide head (h / g) * g' + h % g, its KV
//   head the same index; within a head, dimension pair p of RoPE becomes pair r * p (r = wide head_dim /
//   small head_dim), which has the same rotation frequency; q rows are scaled by sqrt(r) for the softmax
//   scale 1/sqrt(head_dim). The real KV heads' added dimensions have zero k rows (they add nothing to q.k);
//   the outputs of added heads and added dimensions meet zero attn_output columns.
// - FFN: added neurons have random gate/up rows and zero ffn_down columns.
// - Layers: small layer l sits at wide layer layer_map()[l] = round((l + 1) * L' / L) - 1; the other layers
//   have random q/k/v/gate/up and zero attn_output/ffn_down, so they leave the residual stream unchanged.
// - Vocabulary: tokens past the small vocabulary have zero weights over the first d columns, so their logit
//   is exactly 0 (they never win greedy decoding while the best real logit is positive; the tokenizer keeps
//   the small vocabulary).
// Random entries in a row that carries real weights start only at the first 32-column group past d, so block
// quantisation sees the real groups exactly as in the small model.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/dtype.h"
#include "model/hparams.h"

namespace pocket {

class Model;
class Package;
class PackageWriter;

// One transformer block's weights in float32, row-major, with the package's tensor shapes.
struct DenseLayer {
  std::vector<float> attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down;
};

class Widening {
 public:
  // `small` and `wide` must be plain Llama blocks (no q/k/v bias, no q/k norm) with the same RoPE; `wide` is
  // filled in from `shape` (its widths, heads, layers, vocabulary; name, eps, RoPE and tying from `small`).
  // Refused, naming the field, when a dimension would shrink or the heads cannot be mapped.
  static Expected<Widening> create(const HParams& small, const HParams& shape);

  const HParams& small() const { return small_; }
  const HParams& wide() const { return wide_; }
  const std::vector<int32_t>& layer_map() const { return layer_map_; }

  // Wide tensors from small ones; `seed` drives the random entries (a different one per tensor).
  std::vector<float> norm(std::span<const float> g) const;             // [d] -> [D]
  std::vector<float> residual_vector(std::span<const float> v) const;  // [d] -> [D], zeros past d
  DenseLayer layer(const DenseLayer& s, uint64_t seed) const;          // a small layer, widened
  DenseLayer identity_layer(uint64_t seed) const;                      // an added layer
  // [V', D] from [V, d]: rows < V keep their weights (zeros past d when `input_rows_zero_padded`, as the
  // token embedding needs; random past the first group past d otherwise), rows >= V are zero over the first d
  // columns (logit exactly 0).
  std::vector<float> vocab_matrix(std::span<const float> s, bool input_rows_zero_padded, uint64_t seed) const;
  // [D, taps * D] from [d, taps * d] (a block drafter's fuse): the same map per tapped block of columns.
  std::vector<float> fuse_matrix(std::span<const float> s, int64_t taps, uint64_t seed) const;

  // Wide q/k row of small head h's dimension k (k < small head_dim), and the KV head of a small KV head.
  int64_t q_row(int64_t h, int64_t k) const;
  int64_t kv_row(int64_t g, int64_t k) const;

 private:
  Widening() = default;
  int64_t pad_from() const;  // first column that may hold random values in a row carrying real weights
  HParams small_, wide_;
  std::vector<int32_t> layer_map_;
};

// Reads one named tensor of `p` as float32 (its first `max_rows` rows when >= 0), checking its shape.
Status read_f32_tensor(const Package& p, const std::string& name, std::vector<uint64_t> shape,
                       std::vector<float>* out, int64_t max_rows = -1);
// The small model's layer `l` in float32.
Expected<DenseLayer> read_dense_layer(const Package& p, const HParams& h, int64_t l);

// Adds a [rows, cols] matrix (stored in `dtype`, q4_g32 as q4_g32r8) or a vector (always f32) to `pw`.
Status add_f32_tensor(PackageWriter& pw, const std::string& name, std::vector<uint64_t> shape,
                      const std::vector<float>& v, DType dtype);
// Adds layer `l`'s nine tensors (shapes from `h`).
Status add_dense_layer(PackageWriter& pw, const HParams& h, int64_t l, const DenseLayer& w, DType dtype);

struct WidenOptions {
  DType dtype = DType::kF32;  // weight matrices (norms stay f32); q4_g32 matrices are stored as q4_g32r8
  uint64_t seed = 1;
};

// Writes `small` widened to `shape` (e.g. architecture_preset("pocket-0.3b")) at `path`: the small model's
// tokenizer and inference config, the wide descriptor.
Status write_widened_model(const Model& small, const HParams& shape, const WidenOptions& o,
                           const std::string& path);

}  // namespace pocket
