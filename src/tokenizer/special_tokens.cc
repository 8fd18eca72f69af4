// Special-token matching; see special_tokens.h.
#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <cstring>

namespace pocket {

void SpecialTokenMatcher::build(const TokenizerData& d) {
  entries_.clear();
  for (auto& v : by_first_) v.clear();
  any_always_ = false;
  if (d.types.empty()) return;
  for (size_t i = 0; i < d.pieces.size(); ++i) {
    const TokenType t = d.types[i];
    if (d.pieces[i].empty()) continue;
    if (t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUserDefined) {
      entries_.push_back({d.pieces[i], static_cast<int32_t>(i), t == TokenType::kUserDefined});
      any_always_ |= t == TokenType::kUserDefined;
    }
  }
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const Entry& a, const Entry& b) { return a.text.size() > b.text.size(); });
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    by_first_[static_cast<uint8_t>(entries_[i].text[0])].push_back(i);
  }
}

bool SpecialTokenMatcher::find(std::string_view text, size_t from, bool parse_special, Match* m) const {
  if (entries_.empty() || (!parse_special && !any_always_)) return false;
  for (size_t i = from; i < text.size(); ++i) {
    const auto& cands = by_first_[static_cast<uint8_t>(text[i])];
    if (cands.empty()) continue;
    for (uint32_t c : cands) {
      const Entry& e = entries_[c];
      if (!parse_special && !e.always) continue;
      if (text.size() - i >= e.text.size() && std::memcmp(text.data() + i, e.text.data(), e.text.size()) == 0) {
        *m = {i, e.text.size(), e.id};
        return true;
      }
    }
  }
  return false;
}

}  // namespace pocket
