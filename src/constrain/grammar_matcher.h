// GrammarMatcher: the byte-level pushdown recogniser behind grammar-constrained decoding. A configuration
// is a SET of stacks (the grammar is nondeterministic); stacks are persistent, hash-consed nodes, and sets
// of them are interned as configurations with memoised byte transitions (a lazily built DFA), all kept in a
// GrammarEngine shared by every generation of one grammar. The COPY terminal is matched per generation
// against a suffix automaton of the source text (CopySource).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "constrain/grammar.h"
#include "core/status.h"

namespace pocket {

// A stack whose top is a COPY element being matched: `node` is the stack (top = the copy element), `state`
// the per-generation copy state (CopySource::State packing). Ordered for canonical sets.
struct CopyStack {
  int32_t node = 0;
  uint32_t state = 0;
  friend bool operator==(const CopyStack&, const CopyStack&) = default;
  friend bool operator<(const CopyStack& a, const CopyStack& b) {
    return a.node != b.node ? a.node < b.node : a.state < b.state;
  }
};

// The source text of COPY spans, indexed by a suffix automaton (every substring is a path from the root).
// The automaton is built over the source with a sentinel byte inserted at every word boundary (word
// characters: CopyMode's [A-Za-z0-9]): kWordStart before each word, kWordEnd after it ("EU 36" is indexed
// as "\1EU\2 \1" "36\2"). Between two source bytes there is at most one sentinel and which one is fixed by
// the classes of the two bytes, so a span is followed by stepping each byte behind the sentinel its
// class and the previous byte's call for; a whole-word span starts with kWordStart when its first byte is
// a word character and may end only where its last byte is not one or a kWordEnd follows. Sentinels never
// appear in the output. A raw 0x01 or 0x02 in the source cannot be copied (a control JSON content never
// holds) and is never mistaken for a sentinel: a sentinel is stepped only right after a word character
// (kWordEnd) or right before one (kWordStart), where the indexed text always holds the sentinel itself.
// A copy state packs the automaton state with the JSON-escape and UTF-8 progress of the span so far:
// state = sam << 3 | pending_continuation_bytes << 1 | in_escape (the indexed text holds at most
// 2 x kMaxBytes + 1 bytes, a word needing a separator, so the automaton's states fit in 29 bits with room
// to spare). State 0 = nothing copied yet; the mode
// matters only there (the first byte) and at the end (can_exit, bytes_to_exit).
// Immutable after build; one per generation.
class CopySource {
 public:
  static constexpr size_t kMaxBytes = size_t{1} << 20;
  static constexpr uint8_t kWordStart = 0x01, kWordEnd = 0x02;

  // The source must be valid UTF-8 and at most kMaxBytes.
  static Expected<std::unique_ptr<CopySource>> build(std::string_view source);

  // Advances a copy state by one byte of JSON string content; false when the byte cannot continue a span.
  bool step(uint32_t* state, uint8_t byte, CopyMode mode) const;
  // The span may end here: at least one character copied, on a character boundary, not inside an escape,
  // and (whole words) some occurrence of the span, all of which start at a word boundary, ends at one.
  bool can_exit(uint32_t state, CopyMode mode) const {
    if ((state & 7u) != 0 || (state >> 3) == 0) return false;
    return mode == CopyMode::kSubstring || (flags_[state >> 3] & kExitOk) != 0;
  }
  // Some byte can still extend the span.
  bool can_continue(uint32_t state) const;
  // Fewest bytes before the span may end (`lo` = 1: at least one character).
  int32_t bytes_to_exit(uint32_t state, int lo, CopyMode mode) const;
  size_t size() const { return size_; }

 private:
  // flags_ bits of an automaton state.
  static constexpr uint8_t kLastWord = 1;    // the last source byte read is a word character
  static constexpr uint8_t kExitOk = 2;      // a whole-word span may end here
  static constexpr uint8_t kExtendable = 4;  // some copyable source byte follows (behind a sentinel or not)

  int32_t next(int32_t s, uint8_t b) const;
  // next() by a source byte, through the sentinel the byte classes call for; from the root (nothing
  // copied), a word character starts behind kWordStart in whole-word mode.
  int32_t next_source(int32_t s, uint8_t b, CopyMode mode) const;
  std::vector<int32_t> root_next_;     // [256] transitions of the root (-1: none)
  std::vector<int32_t> edge_begin_;    // [n_states + 1] CSR offsets of each state's edges, sorted by byte
  std::vector<uint8_t> edge_byte_;
  std::vector<int32_t> edge_to_;
  std::vector<uint8_t> flags_;         // [n_states] kLastWord | kExitOk | kExtendable
  std::vector<int32_t> to_word_end_;   // [n_states] fewest word bytes from here to a word end (0: exit ok)
  int32_t min_char_bytes_ = 1 << 20;   // shortest character of the source as written in JSON
  int32_t min_word_span_bytes_ = 1 << 20;  // shortest whole-word span: a non-word character or a word
  size_t size_ = 0;
};

// Shared, source-independent matcher state of one grammar: stack nodes and interned configurations with
// their memoised transitions. Grows monotonically (ids stay valid). NOT thread-safe by itself: callers
// hold mutex() around every call (GrammarMatcher and GrammarConstraint do).
class GrammarEngine {
 public:
  static Expected<std::shared_ptr<GrammarEngine>> create(Grammar grammar);

  const Grammar& grammar() const { return grammar_; }
  std::mutex& mutex() const { return mu_; }

  // Configuration ids (cid >= 0); -1 is the empty set (a dead end).
  int32_t start_config() const { return start_; }
  // The configuration after one byte, from its stacks whose top is a byte range (COPY tops excluded).
  int32_t advance(int32_t cid, uint8_t byte) {
    if (trans_base_[static_cast<size_t>(cid)] >= 0) {
      const int32_t t = trans_[static_cast<size_t>(trans_base_[static_cast<size_t>(cid)]) + byte];
      if (t != kUnknown) return t;
    }
    return advance_slow(cid, byte);
  }
  // The configuration after the element on top of `node` (a byte range matched, a copy span left).
  int32_t succ(int32_t node);
  // The configuration holding the stacks of all of `cids`.
  int32_t merge(std::span<const int32_t> cids);

  bool can_end(int32_t cid) const { return configs_[static_cast<size_t>(cid)].can_end; }
  // Only the empty stack: nothing can follow.
  bool only_end(int32_t cid) const { return configs_[static_cast<size_t>(cid)].only_end; }
  // Fewest bytes to complete from the byte-range stacks (COPY-top stacks counted by copy_nodes).
  int32_t min_plain(int32_t cid) const { return configs_[static_cast<size_t>(cid)].min_plain; }
  // The stacks whose top is a COPY element not started yet.
  std::span<const int32_t> copy_nodes(int32_t cid) const {
    const Config& c = configs_[static_cast<size_t>(cid)];
    return {copy_nodes_.data() + c.copy_begin, static_cast<size_t>(c.copy_count)};
  }
  bool has_copy(int32_t cid) const { return configs_[static_cast<size_t>(cid)].copy_count > 0; }

  // Fewest bytes to complete the stack `node`, counting its top element.
  int32_t node_min(int32_t node) const { return nodes_[static_cast<size_t>(node)].min_total; }
  const GrammarElem& node_elem(int32_t node) const {
    return grammar_.flat()[static_cast<size_t>(nodes_[static_cast<size_t>(node)].pos)];
  }

  size_t n_configs() const { return configs_.size(); }
  size_t n_nodes() const { return nodes_.size(); }
  size_t memory_bytes() const;

 private:
  static constexpr int32_t kUnknown = -2;
  struct Node {
    int32_t pos;        // flat position of the top element (a continuation position for parent frames)
    int32_t parent;     // node below, 0 = the empty stack
    int32_t min_total;  // min_rest(pos) + parent's min_total
    int32_t succ;       // configuration after the top element, kUnknown until computed
  };
  struct Config {
    int32_t begin, count;            // sorted node ids in config_nodes_
    int32_t copy_begin, copy_count;  // COPY-top nodes in copy_nodes_
    int32_t min_plain;
    bool can_end, only_end;
  };

  explicit GrammarEngine(Grammar grammar);
  int32_t intern_node(int32_t pos, int32_t parent);
  void closure(int32_t pos, int32_t parent, std::vector<int32_t>* out);
  int32_t intern_config(std::vector<int32_t>* nodes);  // sorts and dedupes *nodes
  int32_t advance_slow(int32_t cid, uint8_t byte);

  Grammar grammar_;
  mutable std::mutex mu_;
  std::vector<Node> nodes_;  // [0] = the empty stack
  std::unordered_map<uint64_t, int32_t> node_index_;
  std::vector<Config> configs_;
  std::vector<int32_t> config_nodes_, copy_nodes_;
  std::unordered_multimap<uint64_t, int32_t> config_index_;  // content hash -> ids
  std::vector<int32_t> trans_base_;  // per config: offset of its 256 transitions in trans_, -1 none
  std::vector<int32_t> trans_;
  std::unordered_map<uint64_t, uint8_t> closure_seen_;
  std::vector<int32_t> scratch_, scratch2_;
  int32_t start_ = -1;
};

// One configuration of a generation: interned configurations (their stacks united) plus the stacks inside
// a COPY span. Sorted and free of duplicates.
struct MatchState {
  std::vector<int32_t> cids;
  std::vector<CopyStack> copies;
  bool empty() const { return cids.empty() && copies.empty(); }
};

// Advances `from` by one byte into `to`; false (and `to` empty) when no stack accepts it. `src` may be
// null when the grammar has no COPY element. The caller holds engine.mutex().
bool advance_state(GrammarEngine& engine, const CopySource* src, const MatchState& from, uint8_t byte, MatchState* to);
bool state_can_end(const GrammarEngine& engine, const MatchState& s);
// Nothing can follow: only empty stacks remain.
bool state_done(const GrammarEngine& engine, const MatchState& s);
// Fewest bytes that complete the output from `s` (a byte per token in byte-level vocabularies).
int32_t state_min_rest(const GrammarEngine& engine, const CopySource* src, const MatchState& s);
// Unites the configurations of `s` into one (fewer parts to carry and a single cache key).
void canonicalize_state(GrammarEngine& engine, MatchState* s);

// Byte-level matcher for one generation (tests, tools): accept_bytes / can_end over a shared engine.
// Copyable (copies share the engine and the source); not thread-safe, but copies may be used from
// different threads (the engine is locked).
class GrammarMatcher {
 public:
  // A matcher with its own engine (the grammar is finalized here when it is not yet).
  static Expected<GrammarMatcher> create(Grammar grammar, std::string_view source = {});
  static Expected<GrammarMatcher> create(std::shared_ptr<GrammarEngine> engine, std::string_view source = {});

  // Advances by every byte; false and the state unchanged when some byte is not allowed.
  bool accept_bytes(std::string_view bytes);
  bool can_end() const;
  // Nothing can follow (the output is complete and cannot be extended).
  bool done() const;
  int32_t min_rest() const;

  const MatchState& state() const { return state_; }
  const std::shared_ptr<GrammarEngine>& engine() const { return engine_; }
  const std::shared_ptr<const CopySource>& source() const { return source_; }

 private:
  GrammarMatcher() = default;
  std::shared_ptr<GrammarEngine> engine_;
  std::shared_ptr<const CopySource> source_;
  MatchState state_, tmp_, tmp2_;
};

}  // namespace pocket
