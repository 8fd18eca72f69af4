// The .pocket tokenizer section (section 3 of a package), version 1: reader and writer. Normative spec:
//
// All integers little-endian; floats IEEE-754 binary32.
//   0   u32  magic        0x4B4F5450 ("PTOK" in file order)
//   4   u32  version      1 (0 and later versions are rejected)
//   8   u32  model        1 SentencePiece-style BPE (by score), 2 byte-level BPE (by rank)
//   12  u32  n_vocab      1..4,194,304
//   16  u32  n_merges     0..8,388,608
//   20  u32  meta_len     0..1,048,576
//   24  u8   meta[meta_len]  UTF-8 JSON object, extensible fields; unknown keys are ignored, all optional:
//          "bos", "eos", "unk", "pad": int (-1 = none)     "add_bos", "add_eos", "add_dummy_prefix": bool
//          "space_marker": string (SentencePiece, default "▁")   "pre_tokenizer": "gpt2" | "llama3" | "qwen2"
//          "normalizer": "" | "nfc"   "chat_template": built-in template name   "max_token_length": int
//          "ignore_merges": bool (byte-level BPE: a word that is a token is not split)
//   then n_vocab entries, in id order:
//          u32 len (0..65,536)   u32 type (TokenType: 0 normal .. 5 unused)   f32 score   u8 text[len] (UTF-8)
//   then n_merges entries, in rank order:   i32 left id   i32 right id
//   and nothing after. Every count is checked against the bytes left before anything is allocated, and the
//   content is validated as in validate_tokenizer_data (RELIABILITY.md item 9).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket {

inline constexpr uint32_t kTokenizerSectionMagic = 0x4B4F5450;
inline constexpr uint32_t kTokenizerSectionVersion = 1;
inline constexpr uint32_t kMaxTokenizerMetaBytes = 1u << 20;

std::vector<uint8_t> serialize_tokenizer_data(const TokenizerData& data);

// Parses and validates a section; `name` is used in error messages.
Expected<TokenizerData> parse_tokenizer_section(std::span<const uint8_t> bytes, const std::string& name);

// Reads a llama2.c tok*.bin: i32 max_token_length, then n_vocab x {f32 score, i32 len, u8 bytes[len]}.
// Ids 0, 1, 2 are <unk>, BOS, EOS; <0xNN> pieces are byte tokens; pieces use a real space.
Expected<TokenizerData> read_llama2c_tokenizer(std::span<const uint8_t> bytes, int32_t n_vocab,
                                               const std::string& name);

}  // namespace pocket
