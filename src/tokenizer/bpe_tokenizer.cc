// Byte-level BPE. The vocabulary is compiled at load time to raw bytes: every token id knows its bytes,
// every merge (left id, right id) maps to (rank, merged id) in an open-addressing table, so encoding never
// builds strings. Per word: words of up to kSmallWord symbols use a flat array of pair ranks (O(n^2) worst,
// fastest for the short words that dominate real text); longer words use a binary heap with lazy
// invalidation over a linked list of symbols, O(n log n), so 1 MB of one repeated character stays bounded.
#include "tokenizer/bpe_tokenizer.h"

#include <climits>
#include <queue>
#include <unordered_map>

#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/utf8.h"

namespace pocket {

bool is_known_pre_tokenizer(std::string_view name) { return !pre_tokenizer_pattern(name).empty(); }

namespace {

constexpr size_t kSmallWord = 48;

// GPT-2's byte -> code point table: printable bytes map to themselves, the rest to U+0100 upwards.
void byte_level_alphabet(uint32_t byte_to_cp[256]) {
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    byte_to_cp[b] = printable ? b : next++;
  }
}

// (left id, right id) -> (rank, merged id); open addressing, linear probing, load factor <= 1/2.
class MergeTable {
 public:
  struct Value {
    int32_t rank;
    int32_t id;
  };
  void init(size_t n) {
    size_t cap = 16;
    bits_ = 4;
    while (cap < 2 * n) {
      cap <<= 1;
      ++bits_;
    }
    slots_.assign(cap, Slot{kEmpty, {0, 0}});
  }
  void insert(int32_t a, int32_t b, Value v) {  // keeps the first (lowest-rank) entry of a repeated pair
    const uint64_t k = key(a, b);
    for (size_t i = hash(k);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == kEmpty) {
        slots_[i] = {k, v};
        return;
      }
      if (slots_[i].key == k) return;
    }
  }
  const Value* find(int32_t a, int32_t b) const {
    const uint64_t k = key(a, b);
    for (size_t i = hash(k);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == k) return &slots_[i].value;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }
  int32_t rank(int32_t a, int32_t b) const {
    const Value* v = find(a, b);
    return v ? v->rank : INT32_MAX;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key;
    Value value;
  };
  static uint64_t key(int32_t a, int32_t b) { return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b); }
  size_t hash(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> (64 - bits_)); }
  std::vector<Slot> slots_;
  int bits_ = 4;
};

// Reused across the words of one encode() call.
struct Scratch {
  struct Sym {
    int32_t id, prev, next;
  };
  struct Cand {
    int32_t rank, left, left_id, right_id;
    bool operator<(const Cand& o) const { return rank > o.rank || (rank == o.rank && left > o.left); }
  };
  std::vector<int32_t> ids;
  std::vector<int32_t> ranks;
  std::vector<Sym> sym;
  std::vector<Cand> heap;
  std::string normalized;
};

class BpeTokenizer final : public DataTokenizer {
 public:
  explicit BpeTokenizer(TokenizerData data) : DataTokenizer(std::move(data)) {}

  Status init() {
    uint32_t byte_to_cp[256];
    byte_level_alphabet(byte_to_cp);
    int16_t cp_to_byte[324];
    for (int16_t& v : cp_to_byte) v = -1;
    for (int b = 0; b < 256; ++b) cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);

    const size_t n = data_.pieces.size();
    decoded_.resize(n);
    for (int32_t& b : byte_ids_) b = -1;
    std::unordered_map<std::string_view, int32_t> by_piece;
    by_piece.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const std::string& p = data_.pieces[i];
      const TokenType t = token_type(static_cast<int32_t>(i));
      by_piece.emplace(p, static_cast<int32_t>(i));
      if (t == TokenType::kControl) continue;  // prints nothing
      if (t == TokenType::kUserDefined || t == TokenType::kUnknown) {
        decoded_[i] = p;
        continue;
      }
      std::string raw;
      for (size_t k = 0; k < p.size();) {
        uint32_t cp;
        bool ok;
        k += utf8_decode(std::string_view(p).substr(k), &cp, &ok);
        if (cp >= 324 || cp_to_byte[cp] < 0) {
          return corrupt_file("[tokenizer] token " + std::to_string(i) + " has character U+" + hex(cp) +
                              ", outside the byte-level alphabet: " + data_.source);
        }
        raw.push_back(static_cast<char>(cp_to_byte[cp]));
      }
      if (raw.size() == 1 && byte_ids_[static_cast<uint8_t>(raw[0])] < 0) {
        byte_ids_[static_cast<uint8_t>(raw[0])] = static_cast<int32_t>(i);
      }
      decoded_[i] = std::move(raw);
    }
    for (int b = 0; b < 256; ++b) {
      if (byte_ids_[b] < 0) {
        return corrupt_file("[tokenizer] byte-level vocabulary has no token for byte 0x" + hex(b) + ": " +
                            data_.source);
      }
    }
    merges_.init(data_.merges.size());
    std::string joined;
    for (size_t m = 0; m < data_.merges.size(); ++m) {
      const auto [a, b] = data_.merges[m];
      joined = data_.pieces[a];
      joined += data_.pieces[b];
      merges_.insert(a, b, {static_cast<int32_t>(m), by_piece.at(joined)});  // existence checked by validation
    }
    if (data_.ignore_merges) {
      for (size_t i = 0; i < n; ++i) {
        const TokenType t = token_type(static_cast<int32_t>(i));
        if (t == TokenType::kNormal) whole_words_.emplace(decoded_[i], static_cast<int32_t>(i));
      }
    }
    POCKET_ASSIGN_OR_RETURN(pre_, PreTokenizer::create(data_.pre_tokenizer));
    special_.build(data_);
    return Status::ok();
  }

  Status encode(std::string_view text, const EncodeOptions& opts, std::vector<int32_t>* out) const override {
    std::string storage;
    text = sanitize_utf8(text, &storage);
    if (opts.add_bos && data_.bos_id >= 0) out->push_back(data_.bos_id);
    Scratch s;
    Status st;
    special_.split(
        text, opts.parse_special,
        [&](std::string_view frag, bool) {
          if (!st.is_ok()) return;
          if (data_.normalizer == "nfc" && !is_trivially_nfc(frag)) {
            s.normalized.clear();
            st = append_nfc(frag, &s.normalized);
            if (st.is_ok()) st = pre_->split(s.normalized, [&](std::string_view w) { encode_word(w, &s, out); });
          } else {
            st = pre_->split(frag, [&](std::string_view w) { encode_word(w, &s, out); });
          }
        },
        [&](int32_t id) { out->push_back(id); });
    return st;
  }

  std::string_view token_bytes(int32_t id) const override {
    if (id < 0 || id >= n_vocab()) return {};
    return decoded_[id];
  }
  std::string_view decode_piece(int32_t /*prev*/, int32_t id) const override { return token_bytes(id); }

 private:
  static std::string hex(uint32_t v) {
    static const char* d = "0123456789ABCDEF";
    std::string s;
    do {
      s.insert(s.begin(), d[v & 15]);
      v >>= 4;
    } while (v);
    if (s.size() < 2) s.insert(s.begin(), '0');
    return s;
  }

  void encode_word(std::string_view w, Scratch* s, std::vector<int32_t>* out) const {
    if (w.size() == 1) {
      out->push_back(byte_ids_[static_cast<uint8_t>(w[0])]);
      return;
    }
    if (data_.ignore_merges) {
      auto it = whole_words_.find(w);
      if (it != whole_words_.end()) {
        out->push_back(it->second);
        return;
      }
    }
    if (w.size() <= kSmallWord) {
      merge_small(w, s, out);
    } else {
      merge_large(w, s, out);
    }
  }

  // ids[i] and ranks[i] (rank of the pair ids[i], ids[i+1]); each step merges the leftmost lowest rank.
  void merge_small(std::string_view w, Scratch* s, std::vector<int32_t>* out) const {
    const size_t n0 = w.size();
    s->ids.resize(n0);
    s->ranks.resize(n0);
    int32_t* ids = s->ids.data();
    int32_t* ranks = s->ranks.data();
    for (size_t i = 0; i < n0; ++i) ids[i] = byte_ids_[static_cast<uint8_t>(w[i])];
    for (size_t i = 0; i + 1 < n0; ++i) ranks[i] = merges_.rank(ids[i], ids[i + 1]);
    size_t n = n0;
    while (n > 1) {
      size_t best = 0;
      for (size_t i = 1; i + 1 < n; ++i) {
        if (ranks[i] < ranks[best]) best = i;
      }
      if (ranks[best] == INT32_MAX) break;
      ids[best] = merges_.find(ids[best], ids[best + 1])->id;
      for (size_t i = best + 1; i + 1 < n; ++i) {
        ids[i] = ids[i + 1];
        ranks[i] = ranks[i + 1];
      }
      --n;
      if (best + 1 < n) ranks[best] = merges_.rank(ids[best], ids[best + 1]);
      if (best > 0) ranks[best - 1] = merges_.rank(ids[best - 1], ids[best]);
    }
    out->insert(out->end(), ids, ids + n);
  }

  void merge_large(std::string_view w, Scratch* s, std::vector<int32_t>* out) const {
    const auto n = static_cast<int32_t>(w.size());
    s->sym.resize(n);
    auto& sym = s->sym;
    for (int32_t i = 0; i < n; ++i) sym[i] = {byte_ids_[static_cast<uint8_t>(w[i])], i - 1, i + 1};
    sym[n - 1].next = -1;
    s->heap.clear();
    std::priority_queue<Scratch::Cand, std::vector<Scratch::Cand>> heap(std::less<Scratch::Cand>(),
                                                                        std::move(s->heap));
    auto push = [&](int32_t l) {
      if (l < 0 || sym[l].next < 0) return;
      const int32_t r = sym[l].next;
      const int32_t rank = merges_.rank(sym[l].id, sym[r].id);
      if (rank != INT32_MAX) heap.push({rank, l, sym[l].id, sym[r].id});
    };
    for (int32_t i = 0; i + 1 < n; ++i) push(i);
    while (!heap.empty()) {
      const Scratch::Cand c = heap.top();
      heap.pop();
      Scratch::Sym& l = sym[c.left];
      if (l.id != c.left_id || l.next < 0 || sym[l.next].id != c.right_id) continue;  // stale
      const int32_t r = l.next;
      l.id = merges_.find(c.left_id, c.right_id)->id;
      l.next = sym[r].next;
      if (l.next >= 0) sym[l.next].prev = c.left;
      sym[r].id = -1;
      push(l.prev);
      push(c.left);
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next) out->push_back(sym[i].id);
  }

  std::vector<std::string> decoded_;  // per id: raw bytes
  int32_t byte_ids_[256];
  MergeTable merges_;
  std::unordered_map<std::string_view, int32_t> whole_words_;  // ignore_merges only; keys in decoded_
  std::unique_ptr<PreTokenizer> pre_;
  SpecialTokenMatcher special_;
};

}  // namespace

Expected<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(TokenizerData data) {
  auto tok = std::make_unique<BpeTokenizer>(std::move(data));
  POCKET_RETURN_IF_ERROR(tok->init());
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

}  // namespace pocket
