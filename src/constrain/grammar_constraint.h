// CompiledGrammar and GrammarConstraint: a finalized grammar over a vocabulary, turned into token masks.
// The allowed tokens of a configuration are found by one preorder pass over the VocabIndex trie carrying
// the matcher state; masks of configurations without COPY stacks are cached (shared by all generations
// of the grammar), and COPY stacks are walked per generation (pruned by the source's suffix automaton).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "constrain/grammar.h"
#include "constrain/grammar_matcher.h"
#include "constrain/vocab_index.h"
#include "core/status.h"
#include "sampling/token_constraint.h"

namespace pocket {

// A finalized grammar + a vocabulary + a mask cache. Thread-safe: many generations (sessions on several
// threads) share one; its engine and cache are guarded by the engine's mutex.
class CompiledGrammar : public std::enable_shared_from_this<CompiledGrammar> {
 public:
  // `cache_bytes` bounds the cached masks (a mask is n_vocab / 8 bytes; past the bound masks are
  // computed without being stored).
  static Expected<std::shared_ptr<CompiledGrammar>> create(Grammar grammar, std::shared_ptr<const VocabIndex> vocab,
                                                           size_t cache_bytes = 64u << 20);

  // One generation's constraint; `source` (copied) is the text COPY spans come from (valid UTF-8, at
  // most CopySource::kMaxBytes).
  Expected<std::unique_ptr<TokenConstraint>> start(std::string_view source = {}) const;
  // A byte-level matcher over the same engine (tests, tools).
  Expected<GrammarMatcher> matcher(std::string_view source = {}) const;

  const Grammar& grammar() const { return engine_->grammar(); }
  const VocabIndex& vocab() const { return *vocab_; }
  const std::shared_ptr<GrammarEngine>& engine() const { return engine_; }

  struct CacheStats {
    uint64_t hits = 0, misses = 0;  // lookups of cacheable configurations
    size_t entries = 0, bytes = 0;   // stored masks
    size_t engine_bytes = 0;         // stack nodes, configurations and transitions
  };
  CacheStats cache_stats() const;

 private:
  friend class GrammarConstraint;
  struct Entry {
    std::vector<uint64_t> bits;  // [words]: bit t = token t allowed
    int32_t max_rest = 0;        // the largest completion length among the allowed tokens (budget unlimited)
  };
  CompiledGrammar(std::shared_ptr<GrammarEngine> engine, std::shared_ptr<const VocabIndex> vocab, size_t cache_bytes);
  // The caller holds engine_->mutex().
  const Entry* find(int32_t cid, int32_t budget) const;
  void store(int32_t cid, int32_t budget, const uint64_t* bits, int32_t max_rest) const;

  std::shared_ptr<GrammarEngine> engine_;
  std::shared_ptr<const VocabIndex> vocab_;
  size_t cache_bytes_;
  size_t words_;
  mutable std::unordered_map<uint64_t, Entry> cache_;  // (cid, budget) -> mask
  mutable std::vector<uint8_t> uncacheable_;            // per cid: its walk meets COPY stacks
  mutable size_t used_bytes_ = 0;
  mutable uint64_t hits_ = 0, misses_ = 0;
};

// The TokenConstraint of one generation. Not thread-safe (one per generation); buffers are allocated at
// start, so mask/accept do not allocate once the configurations seen are interned and cached.
class GrammarConstraint final : public TokenConstraint {
 public:
  Status mask(float* logits, int32_t n_vocab, int64_t n_left) override;
  Status accept(int32_t id) override;
  bool can_stop() const override;
  bool done() const override;

  // The allowed tokens as a bitset (words of 64 tokens; the vocabulary's size), for tests and tools.
  Status allowed(int64_t n_left, std::vector<uint64_t>* bits);
  const MatchState& state() const { return state_; }

 private:
  friend class CompiledGrammar;
  GrammarConstraint(std::shared_ptr<const CompiledGrammar> grammar, std::unique_ptr<CopySource> source);
  // Fills bits_ for the current state; the caller holds the engine's mutex.
  Status compute(int64_t n_left);
  void or_config(int32_t cid, int32_t budget);
  // One pass over the trie from `start`: ORs allowed tokens into `bits`; returns the largest completion
  // length among them; *touched_copy when a COPY stack was met (the result depends on the source).
  int32_t walk(const MatchState& start, int32_t budget, uint64_t* bits, bool* touched_copy);

  std::shared_ptr<const CompiledGrammar> g_;
  std::unique_ptr<CopySource> source_;
  MatchState state_, next_, tmp_;
  std::vector<MatchState> depth_;    // [max_depth + 1] per-depth states of the trie walk
  std::vector<int32_t> plain_;       // [max_depth + 1] the same for grammars without COPY: one config each
  std::vector<uint64_t> bits_, scratch_;
};

}  // namespace pocket
