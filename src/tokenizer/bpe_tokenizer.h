// Byte-level BPE (GPT-2, Llama 3, Qwen2/Qwen3): optional NFC, split by the model's regex, map bytes to the
// GPT-2 byte<->unicode alphabet, then merge adjacent symbols by rank (lowest first).
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket {

bool is_known_pre_tokenizer(std::string_view name);

// `data` must already be validated (build_tokenizer does it).
Expected<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(TokenizerData data);

}  // namespace pocket
