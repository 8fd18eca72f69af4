// Validation of TokenizerData (RELIABILITY.md item 9) and dispatch to the model implementations.
#include "tokenizer/tokenizer_data.h"

#include <cmath>
#include <string_view>
#include <unordered_map>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/utf8.h"

namespace pocket {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 40)) {
    if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) out += '?';
    else out += c;
  }
  if (s.size() > 40) out += "...";
  return out + "'";
}

}  // namespace

bool looks_like_byte_token(std::string_view p) {
  return p.size() == 6 && p.substr(0, 3) == "<0x" && p.back() == '>';
}

int parse_byte_token(std::string_view p) {
  if (!looks_like_byte_token(p)) return -1;
  const int hi = hex_digit(p[3]), lo = hex_digit(p[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

Status validate_tokenizer_data(const TokenizerData& d) {
  const std::string& src = d.source;
  const size_t n = d.pieces.size();
  if (n == 0) return corrupt_file("[tokenizer] the vocabulary is empty: " + src);
  if (n > static_cast<size_t>(kMaxVocab)) {
    return corrupt_file("[tokenizer] vocabulary of " + std::to_string(n) + " tokens exceeds the limit of " +
                        std::to_string(kMaxVocab) + ": " + src);
  }
  if (!d.scores.empty() && d.scores.size() != n) {
    return corrupt_file("[tokenizer] " + std::to_string(d.scores.size()) + " scores for " + std::to_string(n) +
                        " tokens: " + src);
  }
  if (!d.types.empty() && d.types.size() != n) {
    return corrupt_file("[tokenizer] " + std::to_string(d.types.size()) + " token types for " +
                        std::to_string(n) + " tokens: " + src);
  }
  std::unordered_map<std::string_view, int32_t> seen;
  seen.reserve(n);
  int byte_owner[256];
  for (int& b : byte_owner) b = -1;
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = d.pieces[i];
    const std::string id = "token " + std::to_string(i);
    if (p.size() > kMaxPieceBytes) {
      return corrupt_file("[tokenizer] " + id + " is " + std::to_string(p.size()) + " bytes long (limit " +
                          std::to_string(kMaxPieceBytes) + "): " + src);
    }
    if (!is_valid_utf8(p)) return corrupt_file("[tokenizer] " + id + " is not valid UTF-8: " + src);
    if (!d.scores.empty() && !std::isfinite(d.scores[i])) {
      return corrupt_file("[tokenizer] " + id + " has a non-finite score: " + src);
    }
    const TokenType type = d.types.empty() ? TokenType::kNormal : d.types[i];
    if (static_cast<uint32_t>(type) > static_cast<uint32_t>(TokenType::kUnused)) {
      return corrupt_file("[tokenizer] " + id + " has unknown type " + std::to_string(static_cast<uint32_t>(type)) +
                          ": " + src);
    }
    if (type == TokenType::kByte || (d.model == TokenizerModel::kSentencePiece && looks_like_byte_token(p))) {
      const int b = parse_byte_token(p);
      if (b < 0) return corrupt_file("[tokenizer] " + id + " is a malformed byte token " + quoted(p) + ": " + src);
      if (type == TokenType::kByte) {
        if (byte_owner[b] >= 0) {
          return corrupt_file("[tokenizer] tokens " + std::to_string(byte_owner[b]) + " and " + std::to_string(i) +
                              " both stand for byte " + quoted(p) + ": " + src);
        }
        byte_owner[b] = static_cast<int>(i);
      }
    }
    if (p.empty() && (type == TokenType::kNormal || type == TokenType::kUserDefined)) {
      return corrupt_file("[tokenizer] " + id + " is empty: " + src);
    }
    if (!p.empty()) {
      auto [it, inserted] = seen.emplace(p, static_cast<int32_t>(i));
      if (!inserted) {
        return corrupt_file("[tokenizer] tokens " + std::to_string(it->second) + " and " + std::to_string(i) +
                            " are both " + quoted(p) + " (duplicate token): " + src);
      }
    }
  }
  const std::pair<const char*, int32_t> specials[] = {
      {"BOS", d.bos_id}, {"EOS", d.eos_id}, {"UNK", d.unk_id}, {"PAD", d.pad_id}};
  for (const auto& [name, sid] : specials) {
    if (sid < -1 || sid >= static_cast<int64_t>(n)) {
      return corrupt_file(std::string("[tokenizer] ") + name + " id " + std::to_string(sid) +
                          " is outside the vocabulary of " + std::to_string(n) + " tokens: " + src);
    }
  }
  if (d.merges.size() > static_cast<size_t>(kMaxMerges)) {
    return corrupt_file("[tokenizer] " + std::to_string(d.merges.size()) + " merges exceed the limit: " + src);
  }
  std::string joined;
  for (size_t m = 0; m < d.merges.size(); ++m) {
    const auto [a, b] = d.merges[m];
    if (a < 0 || b < 0 || a >= static_cast<int64_t>(n) || b >= static_cast<int64_t>(n)) {
      return corrupt_file("[tokenizer] merge " + std::to_string(m) + " names token " +
                          std::to_string(a < 0 || a >= static_cast<int64_t>(n) ? a : b) + ", outside the vocabulary of " +
                          std::to_string(n) + " tokens: " + src);
    }
    joined = d.pieces[a];
    joined += d.pieces[b];
    if (seen.find(joined) == seen.end()) {
      return corrupt_file("[tokenizer] merge " + std::to_string(m) + " (" + quoted(d.pieces[a]) + " + " +
                          quoted(d.pieces[b]) + ") makes a token that is not in the vocabulary: " + src);
    }
  }
  if (d.normalizer != "" && d.normalizer != "nfc") {
    return unsupported("[tokenizer] unknown normalizer '" + d.normalizer + "': " + src);
  }
  if (d.model == TokenizerModel::kSentencePiece) {
    if (d.space_marker.empty() || !is_valid_utf8(d.space_marker)) {
      return corrupt_file("[tokenizer] SentencePiece space marker is empty or not UTF-8: " + src);
    }
  } else if (d.model == TokenizerModel::kByteLevelBpe) {
    if (!is_known_pre_tokenizer(d.pre_tokenizer)) {
      return unsupported("[tokenizer] unknown pre-tokenizer '" + d.pre_tokenizer + "': " + src);
    }
  } else {
    return unsupported("[tokenizer] unknown tokenizer model " + std::to_string(static_cast<uint32_t>(d.model)) +
                       ": " + src);
  }
  return Status::ok();
}

Expected<std::unique_ptr<Tokenizer>> build_tokenizer(TokenizerData data) {
  POCKET_RETURN_IF_ERROR(validate_tokenizer_data(data));
  if (data.model == TokenizerModel::kSentencePiece) return make_spm_tokenizer(std::move(data));
  return make_bpe_tokenizer(std::move(data));
}

std::string_view DataTokenizer::piece_text(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  return data_.pieces[id];
}

TokenType DataTokenizer::token_type(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return TokenType::kUnknown;
  return data_.types.empty() ? TokenType::kNormal : data_.types[id];
}

}  // namespace pocket
