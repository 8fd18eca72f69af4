// Tokenizer: text <-> token ids for every vocabulary family pocket supports. Immutable after loading;
// safe to share between threads (encode/decode are const and allocate only into their outputs).
//
// Families: SentencePiece-style BPE (llama2.c, Llama 1/2: merges chosen by score, dummy prefix, byte
// fallback) and byte-level BPE (GPT-2, Llama 3, Qwen2/3: regex pre-tokenisation, merges by rank).
// Stored in the .pocket tokenizer section (see tokenizer_io.h) so every package is self-contained.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pocket {

enum class TokenType : uint32_t {
  kNormal = 0,
  kUnknown = 1,
  kControl = 2,      // special tokens such as BOS/EOS/<|im_start|>
  kUserDefined = 3,  // added tokens matched literally
  kByte = 4,         // <0xNN> byte-fallback tokens
  kUnused = 5,
};

struct EncodeOptions {
  bool add_bos = false;           // prepend BOS when the vocabulary has one
  bool parse_special = false;     // text spelling a special token becomes that token (off: plain text)
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Appends the ids of `text` to `out`. Invalid UTF-8 is replaced by U+FFFD before tokenisation.
  virtual Status encode(std::string_view text, const EncodeOptions& opts, std::vector<int32_t>* out) const = 0;

  // The raw bytes a token stands for (a byte token yields its one byte; a control token yields "").
  // `prev` is the previous token id or -1: SentencePiece drops the dummy-prefix space after BOS.
  virtual std::string_view token_bytes(int32_t id) const = 0;
  // The bytes to print for `id` following `prev` (handles the leading-space rule after BOS).
  virtual std::string_view decode_piece(int32_t prev, int32_t id) const = 0;
  // Whole-sequence decode (pieces concatenated; invalid UTF-8 in the result becomes U+FFFD).
  std::string decode(std::span<const int32_t> ids) const;

  virtual int32_t n_vocab() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when none
  virtual int32_t eos_id() const = 0;  // -1 when none
  virtual std::string_view piece_text(int32_t id) const = 0;  // the vocabulary string, for inspection
  virtual TokenType token_type(int32_t id) const = 0;
  // The built-in chat template the model names ("chatml", "llama2", "llama3"), or "" (chat_template.h).
  virtual std::string_view chat_template_name() const { return {}; }

  // Serialises into the .pocket tokenizer section.
  virtual std::vector<uint8_t> serialize() const = 0;
};

// Loads a tokenizer from a .pocket tokenizer section (validated: RELIABILITY.md item 9).
Expected<std::unique_ptr<Tokenizer>> load_tokenizer_section(std::span<const uint8_t> bytes);

// Loads a llama2.c tokenizer file (tok*.bin) with `n_vocab` entries.
Expected<std::unique_ptr<Tokenizer>> load_llama2c_tokenizer(const std::string& path, int32_t n_vocab);

}  // namespace pocket
