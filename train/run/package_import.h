// Import: a .pocket package -> the float32 weights (NamedTensor, in the runtime's names and the shapes of
// runtime_tensor_shapes), hyper-parameters, tokenizer section and chat template that a training checkpoint
// holds, so a shipped model can be fine-tuned further (`pocket-train import`, docs/pocket-nano.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/hparams.h"
#include "run/named_tensor.h"

namespace pocket::train {

struct ImportedPackage {
  HParams hparams;                    // the package's model descriptor
  std::vector<NamedTensor> weights;   // runtime_tensor_shapes(hparams) order, f32
  std::vector<uint8_t> tokenizer;     // the tokenizer section's content (what train-tokenizer writes)
  std::string chat_template;          // the inference config's template name ("none" without one)
  int64_t context_length = 0;         // the inference config's default context
  std::string dominant_type;          // "q4_g32", "f32", "mixed": what the weights were stored as
};

// Loads `path` with the runtime's loader and decodes every tensor to f32 through the runtime's own row
// decoder (weight_row_to_f32: every block format, the 8-row interleaved q4_g32r8 included), so the weights
// are exactly what inference multiplies by. A tied output head is not a separate tensor (the runtime shares
// token_embd), matching what the exporter expects back.
Expected<ImportedPackage> import_package(const std::string& path);

}  // namespace pocket::train
