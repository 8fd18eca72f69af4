// Loading a Hugging Face tokenizer.json (byte-level BPE: GPT-2, Llama 3, Qwen2/3), with the special tokens,
// BOS/EOS and chat template of the tokenizer_config.json beside it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket {

// `config_json` may be empty (no tokenizer_config.json). `name` is used in error messages.
Expected<TokenizerData> read_hf_tokenizer(std::string_view tokenizer_json, std::string_view config_json,
                                          const std::string& name);

// Reads `path` (a tokenizer.json) and, when present, tokenizer_config.json in the same folder.
Expected<std::unique_ptr<Tokenizer>> load_hf_tokenizer(const std::string& path);

}  // namespace pocket
