// Token shards: a memory-mapped array of token ids with document boundaries and an optional per-token loss
// mask (SFT). The byte layout is specified below; TokenShard::open validates all of it before use.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"

namespace pocket::train {

// File layout (little-endian), version 1:
//   [0, 8)    magic "PKTSHARD"
//   [8, 12)   u32 version = 1
//   [12, 16)  u32 flags: bit 0 = a loss mask follows the tokens; other bits must be 0
//   [16, 20)  u32 n_vocab: every token id is in [0, n_vocab)
//   [20, 24)  u32 reserved = 0
//   [24, 32)  u64 n_tokens
//   [32, 40)  u64 n_docs (>= 1 unless n_tokens == 0)
//   [40, 48)  u64 reserved = 0
//   [48, ..)  u64 doc_offsets[n_docs + 1]: doc_offsets[0] = 0, non-decreasing, doc_offsets[n_docs] = n_tokens
//   then      i32 tokens[n_tokens]
//   then      u8 mask[n_tokens] when flag bit 0 (1 = the token is a training target), zero-padded to 8 bytes
// The file size must equal exactly what the header implies.
inline constexpr char kShardMagic[8] = {'P', 'K', 'T', 'S', 'H', 'A', 'R', 'D'};
inline constexpr uint32_t kShardVersion = 1;
inline constexpr uint64_t kShardHeaderBytes = 48;

class TokenShard {
 public:
  static Expected<TokenShard> open(const std::string& path);

  uint64_t n_docs() const { return n_docs_; }
  uint64_t n_tokens() const { return n_tokens_; }
  uint32_t n_vocab() const { return n_vocab_; }
  bool has_mask() const { return mask_ != nullptr; }
  std::span<const int32_t> doc(uint64_t i) const;   // the tokens of document i
  std::span<const uint8_t> doc_mask(uint64_t i) const;  // empty when the shard has no mask
  const std::string& path() const { return file_.path(); }

 private:
  MappedFile file_;
  uint64_t n_docs_ = 0, n_tokens_ = 0;
  uint32_t n_vocab_ = 0;
  const uint64_t* offsets_ = nullptr;
  const int32_t* tokens_ = nullptr;
  const uint8_t* mask_ = nullptr;
};

// Collects documents in memory and writes a shard (to path.tmp, renamed into place when complete).
class TokenShardWriter {
 public:
  explicit TokenShardWriter(uint32_t n_vocab, bool with_mask) : n_vocab_(n_vocab), with_mask_(with_mask) {}
  // `mask` must be empty (all targets) or as long as `tokens`.
  Status add_document(std::span<const int32_t> tokens, std::span<const uint8_t> mask = {});
  Status write(const std::string& path) const;
  uint64_t n_docs() const { return offsets_.size() - 1; }
  uint64_t n_tokens() const { return tokens_.size(); }

 private:
  uint32_t n_vocab_;
  bool with_mask_;
  std::vector<uint64_t> offsets_{0};
  std::vector<int32_t> tokens_;
  std::vector<uint8_t> mask_;
};

}  // namespace pocket::train
