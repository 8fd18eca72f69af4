// Byte-level BPE training; see bpe_trainer.h for the vocabulary layout and the algorithm.
#include "data/bpe_trainer.h"

#include <algorithm>
#include <fstream>
#include <queue>
#include <unordered_set>

#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace pocket::train {

namespace {

// GPT-2's byte -> code point map (the same table as src/tokenizer/bpe_tokenizer.cc, which reads it back):
// printable bytes stand for themselves, the others take U+0100 upwards in byte order.
std::vector<std::string> byte_level_spellings() {
  std::vector<std::string> out(256);
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    const uint32_t cp = printable ? b : next++;
    if (cp < 0x80) {
      out[b] = std::string(1, static_cast<char>(cp));
    } else {  // all below U+0800: two bytes
      out[b] = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
  }
  return out;
}

uint64_t pair_key(int32_t a, int32_t b) {
  return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
}
int32_t key_left(uint64_t k) {
  return static_cast<int32_t>(k >> 32);
}
int32_t key_right(uint64_t k) {
  return static_cast<int32_t>(k & 0xFFFFFFFFu);
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct HeapEntry {
  int64_t count;
  uint64_t key;
  // priority_queue pops the largest: higher count first, then the smaller (left, right).
  bool operator<(const HeapEntry& o) const { return count < o.count || (count == o.count && key > o.key); }
};

}  // namespace

struct BpeTrainer::State {
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> counts;  // while counting

  // After train(): distinct words in byte order, their symbols and counts.
  std::vector<std::string> word_text;
  std::vector<std::vector<int32_t>> syms;
  std::vector<int64_t> word_count;
  std::unordered_map<std::string_view, int32_t> word_index;  // keys point into word_text

  std::vector<std::string> pieces;  // spelled as the vocabulary stores them
  std::vector<TokenType> types;
  std::vector<int32_t> n_bytes;  // raw bytes per token (specials: their text)
  std::unordered_map<std::string, int32_t> piece_id;
  std::vector<std::pair<int32_t, int32_t>> merges;
  int32_t n_special = 0;

  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int32_t>> pair_words;  // may list words that lost the pair
  std::unordered_set<uint64_t> forbidden;                         // pairs whose text is already a token
  std::priority_queue<HeapEntry> heap;
  std::vector<uint64_t> touched;  // pairs made in the current merge

  void add(uint64_t key, int64_t delta, int32_t word) {
    auto it = pair_count.find(key);
    if (it == pair_count.end()) it = pair_count.emplace(key, 0).first;
    it->second += delta;
    if (delta > 0) {
      std::vector<int32_t>& ws = pair_words[key];
      if (ws.empty() || ws.back() != word) ws.push_back(word);
      touched.push_back(key);
    } else if (it->second == 0) {
      pair_count.erase(it);
    }
  }

  // Replaces every (a, b) in word w, left to right, by `merged`, adjusting the neighbouring pairs' counts.
  void merge_word(int32_t w, int32_t a, int32_t b, int32_t merged) {
    std::vector<int32_t>& s = syms[w];
    const int64_t c = word_count[w];
    const size_t n = s.size();
    size_t i = 0, o = 0;  // read and write positions
    while (i < n) {
      if (i + 1 < n && s[i] == a && s[i + 1] == b) {
        if (o > 0) {
          add(pair_key(s[o - 1], a), -c, w);
          add(pair_key(s[o - 1], merged), c, w);
        }
        if (i + 2 < n) {
          add(pair_key(b, s[i + 2]), -c, w);
          add(pair_key(merged, s[i + 2]), c, w);
        }
        s[o++] = merged;
        i += 2;
      } else {
        s[o++] = s[i++];
      }
    }
    s.resize(o);
  }
};

Expected<std::unique_ptr<BpeTrainer>> BpeTrainer::create(BpeTrainOptions opts) {
  if (opts.normalizer != "" && opts.normalizer != "nfc") {
    return invalid_argument("[bpe_trainer] unknown normalizer '" + opts.normalizer + "'");
  }
  const int64_t min_vocab = static_cast<int64_t>(opts.special_tokens.size()) + 256;
  if (opts.vocab_size < min_vocab || opts.vocab_size > kMaxVocab) {
    return invalid_argument("[bpe_trainer] vocabulary size " + std::to_string(opts.vocab_size) +
                            " is outside [" + std::to_string(min_vocab) + ", " + std::to_string(kMaxVocab) +
                            "] (the specials and 256 byte tokens come first)");
  }
  if (opts.max_token_bytes < 1 || opts.max_token_bytes > static_cast<int32_t>(kMaxPieceBytes / 2)) {
    return invalid_argument("[bpe_trainer] max token bytes " + std::to_string(opts.max_token_bytes) +
                            " is outside [1, " + std::to_string(kMaxPieceBytes / 2) + "]");
  }
  if (opts.min_frequency < 1) return invalid_argument("[bpe_trainer] min frequency must be at least 1");
  if (!opts.eos_token.empty() && std::find(opts.special_tokens.begin(), opts.special_tokens.end(),
                                           opts.eos_token) == opts.special_tokens.end()) {
    return invalid_argument("[bpe_trainer] EOS token '" + opts.eos_token +
                            "' is not among the special tokens");
  }
  std::unique_ptr<BpeTrainer> t(new BpeTrainer(std::move(opts)));
  POCKET_ASSIGN_OR_RETURN(t->pre_, PreTokenizer::create(t->opts_.pre_tokenizer));
  t->st_ = std::make_unique<State>();
  State& s = *t->st_;
  for (const std::string& sp : t->opts_.special_tokens) {
    if (sp.empty() || !is_valid_utf8(sp) ||
        !s.piece_id.emplace(sp, static_cast<int32_t>(s.pieces.size())).second) {
      return invalid_argument("[bpe_trainer] special token '" + sp + "' is empty, not UTF-8 or repeated");
    }
    s.pieces.push_back(sp);
    s.types.push_back(TokenType::kControl);
    s.n_bytes.push_back(static_cast<int32_t>(sp.size()));
  }
  s.n_special = static_cast<int32_t>(s.pieces.size());
  for (std::string& p : byte_level_spellings()) {
    if (!s.piece_id.emplace(p, static_cast<int32_t>(s.pieces.size())).second) {
      return invalid_argument("[bpe_trainer] a special token is spelled like the byte token '" + p + "'");
    }
    s.pieces.push_back(std::move(p));
    s.types.push_back(TokenType::kNormal);
    s.n_bytes.push_back(1);
  }
  return t;
}

BpeTrainer::BpeTrainer(BpeTrainOptions opts) : opts_(std::move(opts)) {}
BpeTrainer::~BpeTrainer() = default;

Status BpeTrainer::add_text(std::string_view text) {
  if (trained_) return invalid_argument("[bpe_trainer] add_text after train()");
  std::string storage, normalized;
  text = sanitize_utf8(text, &storage);
  if (opts_.normalizer == "nfc" && !is_trivially_nfc(text)) {
    POCKET_RETURN_IF_ERROR(append_nfc(text, &normalized));
    text = normalized;
  }
  auto& counts = st_->counts;
  Status split = pre_->split(text, [&](std::string_view w) {
    auto it = counts.find(w);
    if (it == counts.end()) {
      counts.emplace(std::string(w), 1);
    } else {
      ++it->second;
    }
    ++stats_.n_words;
  });
  POCKET_RETURN_IF_ERROR(split);
  stats_.n_bytes += static_cast<int64_t>(text.size());
  return Status::ok();
}

Status BpeTrainer::train() {
  if (trained_) return invalid_argument("[bpe_trainer] train() called twice");
  trained_ = true;
  State& s = *st_;

  // Distinct words in byte order (the hash map's order is not portable), as byte-token symbols.
  s.word_text.reserve(s.counts.size());
  for (auto& [w, c] : s.counts) s.word_text.push_back(w);
  std::sort(s.word_text.begin(), s.word_text.end());
  const auto n_words = static_cast<int32_t>(s.word_text.size());
  s.syms.resize(n_words);
  s.word_count.resize(n_words);
  s.word_index.reserve(n_words);
  for (int32_t w = 0; w < n_words; ++w) {
    const std::string& text = s.word_text[w];
    s.word_count[w] = s.counts.find(text)->second;
    s.word_index.emplace(text, w);
    s.syms[w].reserve(text.size());
    for (char ch : text) s.syms[w].push_back(s.n_special + static_cast<uint8_t>(ch));
  }
  decltype(s.counts)().swap(s.counts);
  stats_.n_distinct_words = n_words;

  for (int32_t w = 0; w < n_words; ++w) {
    const std::vector<int32_t>& sy = s.syms[w];
    for (size_t i = 0; i + 1 < sy.size(); ++i) s.add(pair_key(sy[i], sy[i + 1]), s.word_count[w], w);
  }
  for (const auto& [k, c] : s.pair_count) s.heap.push({c, k});
  s.touched.clear();

  while (static_cast<int32_t>(s.pieces.size()) < opts_.vocab_size && !s.heap.empty()) {
    const HeapEntry top = s.heap.top();
    s.heap.pop();
    if (s.forbidden.count(top.key)) continue;
    const auto it = s.pair_count.find(top.key);
    const int64_t cur = it == s.pair_count.end() ? 0 : it->second;
    if (cur != top.count) {  // stale: counts of old pairs only fall, so re-queue at the current count
      if (cur > 0) s.heap.push({cur, top.key});
      continue;
    }
    if (cur < opts_.min_frequency) {
      stats_.stopped_by_min_frequency = true;
      break;
    }
    const int32_t a = key_left(top.key), b = key_right(top.key);
    if (s.n_bytes[a] + s.n_bytes[b] > opts_.max_token_bytes) {
      s.forbidden.insert(top.key);
      ++stats_.n_skipped_long;
      continue;
    }
    std::string text = s.pieces[a] + s.pieces[b];
    if (s.piece_id.count(text)) {
      s.forbidden.insert(top.key);
      ++stats_.n_skipped_duplicates;
      continue;
    }
    const auto merged = static_cast<int32_t>(s.pieces.size());
    s.piece_id.emplace(text, merged);
    s.pieces.push_back(std::move(text));
    s.types.push_back(TokenType::kNormal);
    s.n_bytes.push_back(s.n_bytes[a] + s.n_bytes[b]);
    s.merges.emplace_back(a, b);

    std::vector<int32_t> words = std::move(s.pair_words[top.key]);
    s.pair_words.erase(top.key);
    s.touched.clear();
    for (int32_t w : words) s.merge_word(w, a, b, merged);
    s.pair_count.erase(top.key);
    std::sort(s.touched.begin(), s.touched.end());
    s.touched.erase(std::unique(s.touched.begin(), s.touched.end()), s.touched.end());
    for (uint64_t k : s.touched) {
      const auto c = s.pair_count.find(k);
      if (c != s.pair_count.end() && c->second > 0) s.heap.push({c->second, k});
    }
    stats_.last_pair_count = cur;
    ++stats_.n_merges;
    if (opts_.progress && opts_.progress_every > 0 && stats_.n_merges % opts_.progress_every == 0) {
      opts_.progress(stats_.n_merges, cur);
    }
  }
  // The indexes are only needed while merging.
  decltype(s.pair_count)().swap(s.pair_count);
  decltype(s.pair_words)().swap(s.pair_words);
  decltype(s.heap)().swap(s.heap);
  return Status::ok();
}

TokenizerData BpeTrainer::tokenizer_data() const {
  const State& s = *st_;
  TokenizerData d;
  d.model = TokenizerModel::kByteLevelBpe;
  d.pieces = s.pieces;
  d.types = s.types;
  d.merges = s.merges;
  d.pre_tokenizer = opts_.pre_tokenizer;
  d.normalizer = opts_.normalizer;
  d.chat_template = opts_.chat_template;
  d.add_bos = false;
  if (!opts_.eos_token.empty()) d.eos_id = s.piece_id.at(opts_.eos_token);
  d.source = "bpe_trainer";
  return d;
}

Status BpeTrainer::segment(std::string_view text, std::vector<int32_t>* out) const {
  if (!trained_) return invalid_argument("[bpe_trainer] segment before train()");
  const State& s = *st_;
  std::string storage, normalized;
  text = sanitize_utf8(text, &storage);
  if (opts_.normalizer == "nfc" && !is_trivially_nfc(text)) {
    POCKET_RETURN_IF_ERROR(append_nfc(text, &normalized));
    text = normalized;
  }
  Status missing;
  Status split = pre_->split(text, [&](std::string_view w) {
    const auto it = s.word_index.find(w);
    if (it == s.word_index.end()) {
      if (missing.is_ok())
        missing =
            invalid_argument("[bpe_trainer] word '" + std::string(w) + "' was not in the training text");
      return;
    }
    const std::vector<int32_t>& sy = s.syms[it->second];
    out->insert(out->end(), sy.begin(), sy.end());
  });
  POCKET_RETURN_IF_ERROR(split);
  return missing;
}

Expected<TokenizerData> bpe_vocabulary_prefix(const TokenizerData& full, int32_t vocab_size) {
  const auto n = static_cast<int32_t>(full.pieces.size());
  if (full.model != TokenizerModel::kByteLevelBpe) {
    return invalid_argument("[bpe_trainer] a vocabulary prefix needs a byte-level BPE vocabulary: " +
                            full.source);
  }
  if (vocab_size < 1 || vocab_size > n) {
    return invalid_argument("[bpe_trainer] prefix of " + std::to_string(vocab_size) + " tokens asked of a " +
                            std::to_string(n) + "-token vocabulary: " + full.source);
  }
  for (int32_t id : {full.bos_id, full.eos_id, full.unk_id, full.pad_id}) {
    if (id >= vocab_size) {
      return invalid_argument("[bpe_trainer] special id " + std::to_string(id) +
                              " falls outside a prefix of " + std::to_string(vocab_size) +
                              " tokens: " + full.source);
    }
  }
  TokenizerData d = full;
  d.pieces.resize(vocab_size);
  if (!d.types.empty()) d.types.resize(vocab_size);
  if (!d.scores.empty()) d.scores.resize(vocab_size);
  std::unordered_map<std::string_view, int32_t> id_of;
  for (int32_t i = 0; i < vocab_size; ++i) id_of.emplace(d.pieces[i], i);
  // Merges make tokens in id order, so the ones whose inputs and output are all inside form a prefix.
  size_t keep = 0;
  std::string joined;
  for (; keep < full.merges.size(); ++keep) {
    const auto [a, b] = full.merges[keep];
    if (a >= vocab_size || b >= vocab_size) break;
    joined = full.pieces[a] + full.pieces[b];
    if (!id_of.count(joined)) break;
  }
  d.merges.resize(keep);
  return d;
}

namespace {

// Keeps whole lines of `chunk` (which was cut out of a file at `start`): drops a partial first line unless
// the chunk starts the file and a partial last line unless it ends it; a chunk with no newline keeps whole
// UTF-8 characters instead.
std::string_view whole_lines(std::string_view chunk, bool at_start, bool at_end) {
  size_t b = 0, e = chunk.size();
  if (!at_start) {
    const size_t nl = chunk.find('\n');
    if (nl != std::string_view::npos) {
      b = nl + 1;
    } else {
      while (b < e && (static_cast<uint8_t>(chunk[b]) & 0xC0) == 0x80) ++b;
    }
  }
  if (!at_end) {
    const size_t nl = chunk.rfind('\n');
    if (nl != std::string_view::npos && nl >= b) {
      e = nl + 1;
    } else {
      size_t k = e;  // back up over a trailing incomplete character
      while (k > b && (static_cast<uint8_t>(chunk[k - 1]) & 0xC0) == 0x80) --k;
      if (k > b && static_cast<uint8_t>(chunk[k - 1]) >= 0xC0) e = k - 1;
    }
  }
  return b < e ? chunk.substr(b, e - b) : std::string_view();
}

}  // namespace

Expected<std::string> read_training_text(const std::vector<std::string>& paths, int64_t max_bytes) {
  if (paths.empty()) return invalid_argument("[bpe_trainer] no input files");
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (const std::string& p : paths) {
    std::ifstream f(p, std::ios::binary | std::ios::ate);
    if (!f) return io_error("[bpe_trainer] cannot read " + p);
    sizes.push_back(static_cast<int64_t>(f.tellg()));
    total += sizes.back();
  }
  std::string out;
  const bool sample = max_bytes > 0 && total > max_bytes;
  out.reserve(
      static_cast<size_t>(sample ? max_bytes + 4096 : total + 2 * static_cast<int64_t>(paths.size())));
  constexpr int kRuns = 64;
  std::string buf;
  for (size_t i = 0; i < paths.size(); ++i) {
    std::ifstream f(paths[i], std::ios::binary);
    if (!f) return io_error("[bpe_trainer] cannot read " + paths[i]);
    if (!out.empty()) out += "\n\n";
    if (!sample) {
      buf.resize(static_cast<size_t>(sizes[i]));
      if (!f.read(buf.data(), sizes[i])) return io_error("[bpe_trainer] read failed: " + paths[i]);
      out += buf;
      continue;
    }
    const int64_t budget = static_cast<int64_t>(static_cast<double>(max_bytes) * sizes[i] / total);
    const int64_t run = budget / kRuns;
    if (run <= 0) continue;
    for (int k = 0; k < kRuns; ++k) {
      const int64_t start = sizes[i] * k / kRuns;
      const int64_t len = std::min(run, sizes[i] - start);
      buf.resize(static_cast<size_t>(len));
      f.clear();
      f.seekg(start);
      if (!f.read(buf.data(), len)) return io_error("[bpe_trainer] read failed: " + paths[i]);
      const std::string_view keep = whole_lines(buf, start == 0, start + len >= sizes[i]);
      if (keep.empty()) continue;
      if (!out.empty() && out.back() != '\n') out += '\n';
      out += keep;
    }
  }
  return out;
}

}  // namespace pocket::train
