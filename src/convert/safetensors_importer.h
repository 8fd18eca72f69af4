// Importer for Hugging Face checkpoints: config.json + one or more .safetensors files (sharded through
// model.safetensors.index.json) + tokenizer.json/tokenizer_config.json (+ generation_config.json), for the
// Llama family as Hugging Face writes it (Llama 2/3, SmolLM/SmolLM2, Qwen2/2.5 with q/k/v bias, Qwen3 with
// q/k RMSNorm), into a .pocket package. Hugging Face stores q/k in the rotate-half ("neox") RoPE order, so
// the package records rope_style neox and the weights are copied without permutation.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "format/dtype.h"
#include "model/hparams.h"

namespace pocket {

struct SafetensorsImportOptions {
  DType dtype = DType::kF32;   // weight matrices: f32, f16, bf16, or a block type (quantised by quant/)
  std::string name;            // model name for the descriptor; default: the folder name
  int64_t context_length = 0;  // default session context; 0: min(n_ctx_train, 4096)
};

// The hyper-parameters a config.json describes. `arch` is "llama", "qwen2" or "qwen3"; anything else, or
// a feature pocket does not implement (rope_scaling, sliding windows, biases other than q/k/v, an activation
// other than SiLU) is kUnsupported naming it. `name` is used in error messages.
struct HfConfig {
  std::string arch;
  HParams hparams;
  bool tie_stated = false;  // config.json says tie_word_embeddings explicitly
};
Expected<HfConfig> parse_hf_config(std::string_view config_json, const std::string& name);

// The package tensor name for a Hugging Face tensor name ("model.layers.3.self_attn.q_proj.weight" ->
// "blk.3.attn_q.weight"); "" for a tensor the runtime does not need (rotary inv_freq); nullopt when unknown.
std::optional<std::string> hf_to_pocket_tensor_name(std::string_view hf_name);

// `path`: a checkpoint folder, a .safetensors file (config.json beside it) or a model.safetensors.index.json.
Status import_safetensors(const std::string& path, const std::string& out_path, const SafetensorsImportOptions& opts);

}  // namespace pocket
