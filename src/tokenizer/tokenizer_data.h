// TokenizerData: the plain description of a vocabulary that every loader produces (llama2.c, tokenizer.json,
// GGUF, the .pocket section) and that build_tokenizer() validates (RELIABILITY.md item 9) and compiles.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace pocket {

enum class TokenizerModel : uint32_t {
  kSentencePiece = 1,  // merges chosen by score, dummy prefix, space marker, <0xNN> byte fallback
  kByteLevelBpe = 2,   // regex pre-tokeniser, GPT-2 byte<->unicode map, merges by rank
};

inline constexpr int32_t kMaxVocab = 1 << 22;        // 4,194,304 tokens
inline constexpr int32_t kMaxMerges = 1 << 23;
inline constexpr uint32_t kMaxPieceBytes = 1 << 16;  // longest token text accepted

struct TokenizerData {
  TokenizerModel model = TokenizerModel::kSentencePiece;
  // Token texts as the vocabulary spells them: SentencePiece with its space marker (▁ or a real space),
  // byte-level BPE in the GPT-2 byte-to-unicode form; control/user-defined tokens literally.
  std::vector<std::string> pieces;
  std::vector<float> scores;      // n_vocab entries (SentencePiece: merge priority), or empty
  std::vector<TokenType> types;   // n_vocab entries, or empty (= all normal)
  std::vector<std::pair<int32_t, int32_t>> merges;  // byte-level BPE, rank order: (left id, right id)

  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  bool add_bos = false;           // the model expects BOS at the start of a prompt
  bool add_eos = false;
  bool add_dummy_prefix = false;  // SentencePiece: a space is prepended to each text fragment
  std::string space_marker = "\xE2\x96\x81";  // SentencePiece: "▁" (Llama) or " " (llama2.c)
  std::string pre_tokenizer;      // byte-level BPE: "gpt2", "llama3" or "qwen2"
  std::string normalizer;         // "" or "nfc"
  bool ignore_merges = false;     // byte-level BPE (Llama 3): a word that is a token is emitted whole
  std::string chat_template;      // built-in template name ("chatml", "llama2", "llama3") or ""
  uint32_t max_token_length = 0;  // informational (llama2.c header)

  std::string source;  // the file it came from, for error messages
};

// Checks everything a hostile file could get wrong; the error names the token/merge and `source`.
Status validate_tokenizer_data(const TokenizerData& data);

// Validates, then builds the tokenizer for data.model.
Expected<std::unique_ptr<Tokenizer>> build_tokenizer(TokenizerData data);

// Every Tokenizer built by pocket is one of these: the data it was built from stays inspectable.
class DataTokenizer : public Tokenizer {
 public:
  DataTokenizer(const DataTokenizer&) = delete;  // lookup tables point into data_
  DataTokenizer& operator=(const DataTokenizer&) = delete;

  const TokenizerData& data() const { return data_; }
  std::vector<uint8_t> serialize() const override;

  int32_t n_vocab() const override { return static_cast<int32_t>(data_.pieces.size()); }
  int32_t bos_id() const override { return data_.bos_id; }
  int32_t eos_id() const override { return data_.eos_id; }
  std::string_view piece_text(int32_t id) const override;
  TokenType token_type(int32_t id) const override;
  std::string_view chat_template_name() const override { return data_.chat_template; }

 protected:
  explicit DataTokenizer(TokenizerData data) : data_(std::move(data)) {}
  TokenizerData data_;
};

// "<0x0A>" -> 10; -1 when `piece` is not exactly "<0x" + two upper- or lower-case hex digits + ">".
int parse_byte_token(std::string_view piece);
// True when `piece` looks like a byte token ("<0x" .. ">", 6 bytes) whatever its digits.
bool looks_like_byte_token(std::string_view piece);

}  // namespace pocket
