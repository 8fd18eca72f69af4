// Vocabulary from GGUF metadata (tokenizer.ggml.*): SentencePiece ("llama") and byte-level BPE ("gpt2")
// models, for `pocket tokenize` on a .gguf and for the GGUF importer.
#pragma once

#include <memory>
#include <string>

#include "convert/gguf_reader.h"
#include "core/status.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket {

Expected<TokenizerData> tokenizer_data_from_gguf(const GgufFile& gguf);

// Opens a .gguf (vocabulary-only or a full model) and builds its tokenizer.
Expected<std::unique_ptr<Tokenizer>> load_gguf_tokenizer(const std::string& path);

}  // namespace pocket
