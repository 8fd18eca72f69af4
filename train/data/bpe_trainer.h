// Byte-level BPE training (torch-free): NFC, the "pocket" bilingual pre-tokeniser, word counts, then greedy
// merges of the most frequent adjacent pair with incremental pair counts. The result is a TokenizerData that
// build_tokenizer() accepts and that encodes exactly as the trainer segmented its own text.
//
// Vocabulary layout (ids): the special tokens (control type) first, then the 256 single-byte tokens in byte
// order (GPT-2 byte-to-unicode spelling; they are the byte fallback: any input encodes losslessly), then one
// token per merge in merge order. Merge m makes token n_special + 256 + m, so the first k merges of a run are
// exactly the run for vocabulary n_special + 256 + k: bpe_vocabulary_prefix() cuts a big run down to any
// smaller size without retraining.
//
// Algorithm: words are counted in a hash map; each distinct word is a vector of symbol ids. Pair counts and
// a pair -> words index are kept incrementally: merging (a, b) visits only the words that contain it and
// adjusts the counts of the neighbouring pairs. The best pair comes from a max-heap with lazy invalidation
// (a popped entry whose count is stale is pushed back with the current count). Ties in count go to the
// smaller (left id, right id), so a run is deterministic. A merge whose text is already a token (e.g.
// "ab"+"c" after "a"+"bc"), or longer than max_token_bytes, is skipped and the pair never merged: every token
// is then made by exactly one merge, which is what keeps the runtime's lowest-rank-first merging identical to
// the trainer's merge-by-merge replay.
//
// Not thread-safe; one trainer per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket::train {

struct BpeTrainOptions {
  int32_t vocab_size = 32768;  // total tokens: specials + 256 bytes + merges
  int64_t min_frequency = 2;   // a pair seen fewer times than this (weighted by word counts) is never merged
  std::string pre_tokenizer = "pocket";
  std::string normalizer = "nfc";  // "" or "nfc"
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  std::string eos_token = "<|endoftext|>";  // must be one of special_tokens ("" for none)
  std::string chat_template = "chatml";
  int32_t max_token_bytes = 64;  // a merge that would make a longer token is never made (1..32768)
  // Called every `progress_every` merges with (merges so far, count of the last merged pair).
  std::function<void(int32_t, int64_t)> progress;
  int32_t progress_every = 1000;
};

struct BpeTrainStats {
  int64_t n_bytes = 0;  // text bytes counted (after NFC)
  int64_t n_words = 0;  // pre-tokenised words counted
  int64_t n_distinct_words = 0;
  int32_t n_merges = 0;
  int32_t n_skipped_duplicates = 0;  // merges skipped because their text was already a token
  int32_t n_skipped_long = 0;        // merges skipped because the token would exceed max_token_bytes
  int64_t last_pair_count = 0;       // frequency of the last merge made
  bool stopped_by_min_frequency = false;
};

class BpeTrainer {
 public:
  static Expected<std::unique_ptr<BpeTrainer>> create(BpeTrainOptions opts);
  ~BpeTrainer();
  BpeTrainer(const BpeTrainer&) = delete;
  BpeTrainer& operator=(const BpeTrainer&) = delete;

  // Counts the words of `text` (invalid UTF-8 replaced by U+FFFD, then normalised, as encode() does; special
  // token spellings are plain text, as encode() without parse_special treats them). Only before train().
  Status add_text(std::string_view text);

  // Learns merges until the vocabulary reaches opts.vocab_size or no pair reaches opts.min_frequency.
  Status train();

  // The vocabulary and merges learned (after train()); validated by build_tokenizer.
  TokenizerData tokenizer_data() const;

  // The trainer's own segmentation of `text` into token ids: every word must have been counted by add_text.
  Status segment(std::string_view text, std::vector<int32_t>* out) const;

  const BpeTrainStats& stats() const { return stats_; }

 private:
  explicit BpeTrainer(BpeTrainOptions opts);
  struct State;

  BpeTrainOptions opts_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unique_ptr<State> st_;
  BpeTrainStats stats_;
  bool trained_ = false;
};

// The tokenizer of the first `vocab_size` tokens of a trained byte-level vocabulary laid out as above:
// pieces [0, vocab_size) and the merges that make them (a prefix of the merge list). Fails when a special
// token (BOS/EOS/...) or a merge input would fall outside, or vocab_size exceeds the vocabulary.
Expected<TokenizerData> bpe_vocabulary_prefix(const TokenizerData& full, int32_t vocab_size);

// Training text from files: all of them concatenated (a blank line between files) when their total size is
// at most `max_bytes` (0: no limit); otherwise a sample of about `max_bytes` spread evenly over each file in
// proportion to its size (64 runs of whole lines per file), so a corpus sorted by language or source is
// still sampled across all of it.
Expected<std::string> read_training_text(const std::vector<std::string>& paths, int64_t max_bytes);

}  // namespace pocket::train
