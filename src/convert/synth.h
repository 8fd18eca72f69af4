// `pocket synth`: a random-weight package of a published architecture, with a placeholder tokenizer, for
// benchmarking size, memory and speed without a trained checkpoint.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "format/dtype.h"
#include "model/hparams.h"

namespace pocket {

struct SynthOptions {
  DType dtype = DType::kF16;  // weight matrices (norms stay f32)
  uint64_t seed = 1;
  int64_t context_length = 0;  // 0: min(n_ctx_train, 4096)
  bool interleave = true;      // q4_g32 layer matrices stored as q4_g32r8 (see QuantizePolicy::interleave)
  // A real tokenizer instead of the placeholder: a Hugging Face tokenizer.json (tokenizer_config.json beside
  // it is read too), at most the architecture's vocabulary. Its chat template, BOS rule and EOS come along, so
  // benchmarks of vocabulary-sized work (constrained decoding's masks) see the real vocabulary.
  std::string tokenizer_json;
};

// Writes the package for `h` (see architecture_preset()).
Status synthesize_model(const HParams& h, const std::string& out_path, const SynthOptions& opts);

}  // namespace pocket
