// Hyper-parameters of the Llama-family decoder (the package's model descriptor) and the inference config.
// One structure covers Llama 2/3, Qwen2 (q/k/v bias), Qwen3 (q/k RMSNorm) and SmolLM: importers only map
// names and fill these fields.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pocket {

enum class RopeStyle : uint32_t {
  kInterleaved = 0,  // rotate (x[2i], x[2i+1]) — llama2.c, Meta's Llama checkpoints
  kNeox = 1,         // rotate (x[i], x[i + head_dim/2]) — Hugging Face Llama/Qwen layouts
};

struct HParams {
  std::string family = "llama";  // the only family so far; the descriptor names it
  std::string name;              // human-readable model name
  int64_t n_vocab = 0;
  int64_t n_embd = 0;      // model width
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // grouped-query attention: n_heads % n_kv_heads == 0
  int64_t head_dim = 0;    // usually n_embd / n_heads; Qwen3 decouples it
  int64_t n_ff = 0;        // SwiGLU hidden width
  int64_t n_ctx_train = 0; // the context the model was trained for
  float rope_theta = 10000.0f;
  RopeStyle rope_style = RopeStyle::kInterleaved;
  float norm_eps = 1e-5f;
  bool tied_embeddings = true;  // output head reuses token_embd.weight
  bool qkv_bias = false;        // Qwen2: biases on q, k, v projections
  bool qk_norm = false;         // Qwen3: RMSNorm over each head of q and k before RoPE

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }

  // Checks internal consistency (every field in range, heads dividing, limits) naming the bad field.
  Status validate() const;
  std::string to_json() const;
  static Expected<HParams> from_json(std::string_view json);
  // Number of weights (parameters) the architecture implies.
  uint64_t n_params() const;
};

struct SamplingDefaults {
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
};

struct InferenceConfig {
  int64_t context_length = 0;  // default session context (<= n_ctx_train)
  SamplingDefaults sampling;
  std::vector<int32_t> stop_tokens;
  std::string chat_template = "none";  // a built-in template name (tokenizer/chat_template.h)
  bool add_bos = true;

  std::string to_json() const;
  static Expected<InferenceConfig> from_json(std::string_view json);
};

// Published architectures pocket can synthesise with random weights (for benchmarking).
Expected<HParams> architecture_preset(std::string_view name);
std::vector<std::string> architecture_preset_names();

}  // namespace pocket
