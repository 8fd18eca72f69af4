// VocabIndex: the preorder byte trie of a vocabulary, built from the tokens sorted by their bytes (each
// token adds the nodes past its common prefix with the previous one).
#include "constrain/vocab_index.h"

#include <algorithm>
#include <numeric>

#include "tokenizer/tokenizer.h"

namespace pocket {

std::shared_ptr<const VocabIndex> VocabIndex::build(const Tokenizer& tokenizer) {
  const int32_t n = tokenizer.n_vocab();
  std::vector<std::string> tokens(static_cast<size_t>(std::max(n, 0)));
  for (int32_t id = 0; id < n; ++id) {
    const TokenType type = tokenizer.token_type(id);
    if (type == TokenType::kControl || type == TokenType::kUnused || type == TokenType::kUnknown) continue;
    tokens[static_cast<size_t>(id)] = std::string(tokenizer.token_bytes(id));
  }
  return from_tokens(tokens);
}

std::shared_ptr<const VocabIndex> VocabIndex::from_tokens(const std::vector<std::string>& tokens) {
  auto index = std::make_shared<VocabIndex>();
  index->n_vocab_ = static_cast<int32_t>(tokens.size());
  index->offsets_.reserve(tokens.size() + 1);
  index->offsets_.push_back(0);
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].size() <= kMaxTokenBytes) index->blob_ += tokens[id];
    index->offsets_.push_back(index->blob_.size());
  }
  std::vector<int32_t> order;
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (!tokens[id].empty() && tokens[id].size() <= kMaxTokenBytes) order.push_back(static_cast<int32_t>(id));
  }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return tokens[static_cast<size_t>(a)] < tokens[static_cast<size_t>(b)];
  });
  // `path[d]` = the node at depth d + 1 on the current token's path. Nodes are appended in preorder;
  // a node's subtree ends when a later token leaves its prefix.
  std::vector<int32_t> path;
  std::string_view prev;
  std::vector<int32_t> node_of_token(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const std::string_view t = tokens[static_cast<size_t>(order[k])];
    size_t common = 0;
    while (common < prev.size() && common < t.size() && prev[common] == t[common]) ++common;
    while (path.size() > common) {
      index->end_[static_cast<size_t>(path.back())] = static_cast<int32_t>(index->label_.size());
      path.pop_back();
    }
    for (size_t d = common; d < t.size(); ++d) {
      path.push_back(static_cast<int32_t>(index->label_.size()));
      index->label_.push_back(static_cast<uint8_t>(t[d]));
      index->depth_.push_back(static_cast<uint16_t>(d + 1));
      index->end_.push_back(-1);
    }
    node_of_token[k] = path.back();
    index->max_depth_ = std::max(index->max_depth_, static_cast<int32_t>(t.size()));
    prev = t;
  }
  while (!path.empty()) {
    index->end_[static_cast<size_t>(path.back())] = static_cast<int32_t>(index->label_.size());
    path.pop_back();
  }
  // Tokens grouped by node: `order` is sorted by bytes, so a node's tokens are adjacent and nodes appear
  // in preorder = increasing node index.
  const size_t n_nodes = index->label_.size();
  index->tok_begin_.assign(n_nodes + 1, 0);
  for (size_t k = 0; k < order.size(); ++k) ++index->tok_begin_[static_cast<size_t>(node_of_token[k]) + 1];
  std::partial_sum(index->tok_begin_.begin(), index->tok_begin_.end(), index->tok_begin_.begin());
  index->ids_ = order;  // node_of_token is non-decreasing along `order`
  return std::shared_ptr<const VocabIndex>(std::move(index));
}

size_t VocabIndex::memory_bytes() const {
  return blob_.capacity() + offsets_.capacity() * sizeof(size_t) + label_.capacity() + depth_.capacity() * 2 +
         (end_.capacity() + tok_begin_.capacity() + ids_.capacity()) * sizeof(int32_t);
}

}  // namespace pocket
