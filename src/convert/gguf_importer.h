// Importer: a GGUF v2/v3 model (llama.cpp's llama, qwen2 and qwen3 architectures) → a .pocket package.
// Metadata becomes the descriptor and inference config, tokenizer.ggml.* the tokenizer (with the chat
// template's family), and each tensor is carried over byte for byte where pocket has the same block layout
// (F32, F16, BF16, Q8_0 = q8_g32, Q4_0 = q4_g32, Q4_1 = q4_g32a) or dequantised (Q4_K, Q5_K, Q6_K, or any
// type when another target is asked for) and re-encoded. llama GGUFs keep llama.cpp's interleaved RoPE
// order (rope_style interleaved); qwen2/qwen3 use rotate-half (neox).
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "format/dtype.h"

namespace pocket {

struct GgufImportOptions {
  // Weight matrices: nullopt carries each tensor's own type where pocket has it and writes K-quants as
  // q8_g32; a value re-encodes every matrix whose type differs. Norms and biases are always f32.
  std::optional<DType> dtype;
  std::string name;            // model name; default: general.name, else the file name
  int64_t context_length = 0;  // default session context; 0: min(n_ctx_train, 4096)
};

Status import_gguf(const std::string& gguf_path, const std::string& out_path, const GgufImportOptions& opts);

}  // namespace pocket
