// Generated training material for tests, demos and smoke runs: a character vocabulary with ChatML control
// tokens, a small-grammar story corpus and an "opposites" chat task. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/chat_data.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket::train {

// SentencePiece-style vocabulary: <unk>, <s>, </s>, <|im_start|>, <|im_end|>, 256 <0xNN> byte-fallback
// tokens, then "\n" and printable ASCII as single-character pieces (357 tokens). Chat template "chatml".
TokenizerData char_vocabulary();

// `n_docs` short stories (a few sentences each) from a fixed small grammar.
std::vector<std::string> synthetic_stories(uint64_t seed, int64_t n_docs);

// The opposites task: "opposite of hot?" -> "cold", over a fixed list of word pairs (both directions).
std::vector<Conversation> synthetic_opposites(uint64_t seed, int64_t n_examples);
// The fixed word pairs the task draws from.
const std::vector<std::pair<std::string, std::string>>& opposite_pairs();

}  // namespace pocket::train
