// Model: an opened package with its weights bound to the Llama-family decoder. Immutable after load and
// shared by every Session (std::shared_ptr<const Model>); the weights stay in the memory map.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/package.h"
#include "model/hparams.h"
#include "tokenizer/tokenizer.h"

namespace pocket {

// A weight matrix or vector in the map. Matrices are row-major [rows, cols]: y = W x reads row r for y[r].
struct WeightRef {
  const uint8_t* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const std::string* name = nullptr;
  bool present() const { return data != nullptr; }
  const float* f32() const { return reinterpret_cast<const float*>(data); }
};

struct LayerWeights {
  WeightRef attn_norm;    // [n_embd], f32
  WeightRef wq;           // [n_heads * head_dim, n_embd]
  WeightRef wk;           // [n_kv_heads * head_dim, n_embd]
  WeightRef wv;           // [n_kv_heads * head_dim, n_embd]
  WeightRef wo;           // [n_embd, n_heads * head_dim]
  WeightRef bq, bk, bv;   // [q_dim], [kv_dim], [kv_dim], f32 — only with qkv_bias
  WeightRef q_norm, k_norm;  // [head_dim], f32 — only with qk_norm
  WeightRef ffn_norm;     // [n_embd], f32
  WeightRef w_gate;       // [n_ff, n_embd]
  WeightRef w_up;         // [n_ff, n_embd]
  WeightRef w_down;       // [n_embd, n_ff]
};

struct ModelWeights {
  WeightRef token_embd;   // [n_vocab, n_embd]
  std::vector<LayerWeights> layers;
  WeightRef output_norm;  // [n_embd], f32
  WeightRef output;       // [n_vocab, n_embd]; the token embedding when tied
};

// The tensor names of the package (GGUF-style, so exporting to GGUF is a straight mapping).
std::string layer_tensor_name(int64_t layer, const char* suffix);  // "blk.3.attn_q.weight"

class Model {
 public:
  static Expected<std::shared_ptr<const Model>> load(const std::string& path, const OpenOptions& opts = {});
  static Expected<std::shared_ptr<const Model>> from_package(Package pkg);

  const HParams& hparams() const { return hparams_; }
  const InferenceConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelWeights& weights() const { return weights_; }
  const Package& package() const { return package_; }
  // Bytes of weights read per decoded token (every matrix once; the embedding row is negligible).
  uint64_t weight_bytes_per_token() const;
  // The dtype most of the weight bytes are in ("f32", "q4_g32", or "mixed").
  std::string weight_type_label() const;

 private:
  Model(Package pkg) : package_(std::move(pkg)) {}
  Status bind();

  Package package_;
  HParams hparams_;
  InferenceConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  ModelWeights weights_;
};

}  // namespace pocket
