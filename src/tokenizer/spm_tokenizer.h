// SentencePiece-style BPE (llama2.c tok*.bin, Llama 1/2 vocabularies): start from UTF-8 characters, merge
// the adjacent pair whose concatenation is a token with the highest score (leftmost on ties) until none is
// left, then map unknown characters to <0xNN> byte tokens. A dummy-prefix space is added before each text
// fragment when the model asks for it; spaces are spelled with the model's marker (▁, or a real space).
#pragma once

#include <memory>

#include "core/status.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket {

// `data` must already be validated (build_tokenizer does it).
Expected<std::unique_ptr<Tokenizer>> make_spm_tokenizer(TokenizerData data);

}  // namespace pocket
