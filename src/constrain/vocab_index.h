// VocabIndex: every token's bytes in a byte trie laid out in depth-first preorder, so a token mask is one
// pass over flat arrays that skips a whole subtree as soon as no grammar stack accepts its byte.
// Built once per tokenizer; immutable and shared by every grammar and generation (thread-safe to read).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pocket {

class Tokenizer;

class VocabIndex {
 public:
  // Tokens with empty bytes, control and unused tokens (and the unknown token) are left out: a
  // constraint never allows them. So are tokens longer than kMaxTokenBytes (none in real vocabularies).
  static std::shared_ptr<const VocabIndex> build(const Tokenizer& tokenizer);
  // From raw token bytes ("" = left out), for tests and tools.
  static std::shared_ptr<const VocabIndex> from_tokens(const std::vector<std::string>& tokens);
  static constexpr size_t kMaxTokenBytes = 65535;  // depths are 16-bit

  int32_t n_vocab() const { return n_vocab_; }
  std::string_view token_bytes(int32_t id) const {
    return {blob_.data() + offsets_[static_cast<size_t>(id)],
            offsets_[static_cast<size_t>(id) + 1] - offsets_[static_cast<size_t>(id)]};
  }
  bool in_trie(int32_t id) const { return !token_bytes(id).empty(); }
  int32_t n_indexed() const { return static_cast<int32_t>(ids_.size()); }

  // The trie, preorder, without the root: node i has byte label(i) at depth(i) >= 1 (its token's length
  // so far); its subtree is [i, subtree_end(i)); the tokens whose bytes end here are
  // ids()[token_begin(i) .. token_begin(i + 1)).
  size_t n_nodes() const { return label_.size(); }
  int32_t max_depth() const { return max_depth_; }
  const uint8_t* labels() const { return label_.data(); }
  const uint16_t* depths() const { return depth_.data(); }
  const int32_t* subtree_ends() const { return end_.data(); }
  const int32_t* token_begins() const { return tok_begin_.data(); }  // [n_nodes + 1]
  const int32_t* ids() const { return ids_.data(); }
  size_t memory_bytes() const;

 private:
  int32_t n_vocab_ = 0;
  int32_t max_depth_ = 0;
  std::string blob_;
  std::vector<size_t> offsets_;  // [n_vocab + 1]
  std::vector<uint8_t> label_;
  std::vector<uint16_t> depth_;
  std::vector<int32_t> end_, tok_begin_, ids_;
};

}  // namespace pocket
