// SentencePiece-style BPE by score. Complexity: O(n log n) in the number of characters of a fragment,
// a binary heap of candidate pairs with lazy invalidation and a doubly linked list of symbols.
#include "tokenizer/spm_tokenizer.h"

#include <queue>
#include <unordered_map>

#include "tokenizer/special_tokens.h"
#include "tokenizer/utf8.h"

namespace pocket {
namespace {

class SpmTokenizer final : public DataTokenizer {
 public:
  explicit SpmTokenizer(TokenizerData data) : DataTokenizer(std::move(data)) {
    const size_t n = data_.pieces.size();
    for (int32_t& b : byte_ids_) b = -1;
    piece_ids_.reserve(n);
    decoded_.resize(n);
    const bool marker_is_space = data_.space_marker == " ";
    for (size_t i = 0; i < n; ++i) {
      const std::string& p = data_.pieces[i];
      const TokenType t = token_type(static_cast<int32_t>(i));
      if (t == TokenType::kByte || (t != TokenType::kControl && looks_like_byte_token(p))) {
        const int b = parse_byte_token(p);
        if (b >= 0 && byte_ids_[b] < 0) byte_ids_[b] = static_cast<int32_t>(i);
        decoded_[i] = std::string(1, static_cast<char>(b));
        continue;
      }
      if (t == TokenType::kControl) continue;  // decodes to nothing, never formed by merges
      if (t == TokenType::kUnknown) {
        decoded_[i] = std::string(kReplacementUtf8);
        continue;
      }
      piece_ids_.emplace(p, static_cast<int32_t>(i));
      decoded_[i] = marker_is_space ? p : replace_marker(p);
    }
    special_.build(data_);
  }

  Status encode(std::string_view text, const EncodeOptions& opts, std::vector<int32_t>* out) const override {
    std::string storage;
    text = sanitize_utf8(text, &storage);
    if (opts.add_bos && data_.bos_id >= 0) out->push_back(data_.bos_id);
    special_.split(
        text, opts.parse_special,
        [&](std::string_view frag, bool after_special) { encode_fragment(frag, after_special, out); },
        [&](int32_t id) { out->push_back(id); });
    return Status::ok();
  }

  std::string_view token_bytes(int32_t id) const override {
    if (id < 0 || id >= n_vocab()) return {};
    return decoded_[id];
  }

  std::string_view decode_piece(int32_t prev, int32_t id) const override {
    std::string_view s = token_bytes(id);
    // The dummy prefix was added at the start of the text, i.e. after BOS (run.c drops it there).
    if (data_.add_dummy_prefix && (prev == -1 || (prev == data_.bos_id && prev >= 0)) && !s.empty() &&
        s[0] == ' ') {
      s.remove_prefix(1);
    }
    return s;
  }

 private:
  struct Symbol {
    int32_t prev, next;
    uint32_t start, len;  // bytes of the normalised fragment
  };
  struct Candidate {
    float score;
    int32_t left, right;
    uint32_t len;  // len of the merged text when pushed: a later change to either side invalidates it
    bool operator<(const Candidate& o) const {  // max-heap: higher score, then leftmost
      return score < o.score || (score == o.score && left > o.left);
    }
  };

  std::string replace_marker(std::string_view p) const {
    std::string out;
    const std::string& m = data_.space_marker;
    for (size_t i = 0; i < p.size();) {
      if (p.compare(i, m.size(), m) == 0) {
        out += ' ';
        i += m.size();
      } else {
        out += p[i++];
      }
    }
    return out;
  }

  int32_t lookup(std::string_view s) const {
    auto it = piece_ids_.find(s);
    return it == piece_ids_.end() ? -1 : it->second;
  }

  void encode_fragment(std::string_view frag, bool after_special, std::vector<int32_t>* out) const {
    std::string text;
    text.reserve(frag.size() + 8);
    if (data_.add_dummy_prefix && after_special) text += data_.space_marker;
    if (data_.space_marker == " ") {
      text += frag;
    } else {
      for (char c : frag) {
        if (c == ' ') text += data_.space_marker;
        else text += c;
      }
    }
    if (text.empty()) return;

    std::vector<Symbol> sym;
    sym.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      uint32_t cp;
      bool ok;
      const size_t n = utf8_decode(std::string_view(text).substr(i), &cp, &ok);
      const auto id = static_cast<int32_t>(sym.size());
      sym.push_back({id - 1, id + 1, static_cast<uint32_t>(i), static_cast<uint32_t>(n)});
      i += n;
    }
    sym.back().next = -1;

    std::priority_queue<Candidate> heap;
    auto try_pair = [&](int32_t l, int32_t r) {
      if (l < 0 || r < 0) return;
      const uint32_t len = sym[l].len + sym[r].len;
      const int32_t id = lookup(std::string_view(text).substr(sym[l].start, len));
      if (id < 0) return;
      heap.push({data_.scores.empty() ? 0.0f : data_.scores[id], l, r, len});
    };
    for (size_t i = 0; i + 1 < sym.size(); ++i) try_pair(static_cast<int32_t>(i), static_cast<int32_t>(i + 1));
    while (!heap.empty()) {
      const Candidate c = heap.top();
      heap.pop();
      Symbol& l = sym[c.left];
      Symbol& r = sym[c.right];
      if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;  // stale
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = c.left;
      try_pair(l.prev, c.left);
      try_pair(c.left, l.next);
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next) {
      const std::string_view s = std::string_view(text).substr(sym[i].start, sym[i].len);
      const int32_t id = lookup(s);
      if (id >= 0) {
        out->push_back(id);
        continue;
      }
      for (char ch : s) {  // byte fallback
        const int32_t b = byte_ids_[static_cast<uint8_t>(ch)];
        if (b >= 0) {
          out->push_back(b);
        } else if (data_.unk_id >= 0) {
          out->push_back(data_.unk_id);
          break;  // one <unk> per character, as SentencePiece does without byte fallback
        }
      }
    }
  }

  std::unordered_map<std::string_view, int32_t> piece_ids_;  // mergeable tokens (keys point into data_)
  std::vector<std::string> decoded_;                         // per id: the bytes it prints
  int32_t byte_ids_[256];
  SpecialTokenMatcher special_;
};

}  // namespace

Expected<std::unique_ptr<Tokenizer>> make_spm_tokenizer(TokenizerData data) {
  return std::unique_ptr<Tokenizer>(new SpmTokenizer(std::move(data)));
}

}  // namespace pocket
