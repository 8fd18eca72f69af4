// Exporter: a .pocket package → a GGUF v3 model that llama.cpp loads (architectures llama, qwen2, qwen3),
// so both engines can run the very same weights. Metadata follows llama.cpp's key names; the tokenizer is
// written as tokenizer.ggml.* (SentencePiece → "llama", byte-level BPE → "gpt2"). q/k rows are permuted
// when the package's RoPE convention differs from the one llama.cpp uses for the architecture (llama:
// interleaved pairs; qwen2/qwen3: rotate-half).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace pocket {

enum class GgufExportType {
  kKeep,  // carry each matrix's dtype: f32, f16, bf16, q8_g32 → Q8_0, q4_g32 → Q4_0, q4_g32a → Q4_1 (q4_g64 → Q4_0)
  kF32,
  kF16,
  kQ8_0,
  kQ4_0,
};

struct GgufExportOptions {
  GgufExportType type = GgufExportType::kKeep;
};

struct GgufExportReport {
  std::string arch;
  // Tensors written in another type than asked (a row that is not a whole number of 32-element blocks
  // goes to F16), as "name: reason".
  std::vector<std::string> notes;
};

Status export_gguf(const std::string& pocket_path, const std::string& out_path, const GgufExportOptions& opts,
                   GgufExportReport* report = nullptr);

}  // namespace pocket
