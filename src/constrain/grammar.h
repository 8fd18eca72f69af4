// Grammar: a byte-level context-free grammar, the one form every constraint compiles to (GBNF text,
// JSON schemas). Terminals are byte ranges (Unicode character classes are expanded to their UTF-8 byte
// sequences when built) plus one stateful terminal, COPY: a span of the request's source text written as
// JSON string content. finalize() checks the grammar (every rule defined, no left recursion, the root can
// derive a finite string) and lays it out flat for GrammarMatcher. Immutable after finalize; shareable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pocket {

enum class ElemKind : uint8_t {
  kEnd,    // end of an alternative (flat layout only)
  kBytes,  // one byte in [lo, hi]
  kRule,   // a nonterminal
  kCopy,   // a span of the source text as JSON string content (escapes \" \\ \/ \b \f \n \r \t), whole UTF-8
           // characters; lo = 1: at least one character; hi = its CopyMode
};

// Which spans of the source a kCopy element may write (GrammarElem::hi). Word characters are the ASCII
// letters and digits [A-Za-z0-9]; every other byte (punctuation, blanks, every byte of a non-ASCII
// character such as CJK) is a non-word character, so each CJK character is a boundary of its own.
enum class CopyMode : uint8_t {
  // Whole words: some occurrence of the span in the source neither starts with a word character preceded
  // by a word character nor ends with a word character followed by one ("EU 36" but not "U 36" from
  // "EU 36"; "329" from "¥329"). The default.
  kWords = 0,
  // Any substring on character boundaries ("withi" from "within").
  kSubstring = 1,
};

struct GrammarElem {
  ElemKind kind = ElemKind::kEnd;
  uint8_t lo = 0, hi = 0;
  int32_t rule = -1;
};

inline CopyMode copy_mode(const GrammarElem& e) { return static_cast<CopyMode>(e.hi); }
inline GrammarElem copy_elem(int lo, CopyMode mode) {
  return {ElemKind::kCopy, static_cast<uint8_t>(lo), static_cast<uint8_t>(mode), -1};
}

using GrammarSeq = std::vector<GrammarElem>;

struct CodepointRange {
  uint32_t lo, hi;  // inclusive
};

class Grammar {
 public:
  static constexpr int32_t kMaxRules = 1 << 20;
  // Flat layout limits (positions are 32-bit in the matcher's frames; keep grammars far below).
  static constexpr size_t kMaxElems = 1 << 24;

  // A new rule with no alternatives yet (names need not be unique: generated rules repeat stems).
  int32_t add_rule(std::string name);
  // The first rule of that name, or -1.
  int32_t find_rule(std::string_view name) const;
  void add_alt(int32_t rule, GrammarSeq seq);
  int32_t n_rules() const { return static_cast<int32_t>(rules_.size()); }
  const std::string& rule_name(int32_t r) const { return rules_[static_cast<size_t>(r)].name; }
  const std::vector<GrammarSeq>& alts(int32_t r) const { return rules_[static_cast<size_t>(r)].alts; }

  // Sequence builders.
  static void append_bytes(GrammarSeq& seq, std::string_view bytes);  // a literal
  static void append_rule(GrammarSeq& seq, int32_t rule) { seq.push_back({ElemKind::kRule, 0, 0, rule}); }
  static void append_range(GrammarSeq& seq, uint8_t lo, uint8_t hi) { seq.push_back({ElemKind::kBytes, lo, hi, -1}); }
  // A rule matching one character of the class (code points; surrogates never match; `negated` takes the
  // complement within U+0000..U+10FFFF). Identical classes share one rule.
  int32_t char_class_rule(std::vector<CodepointRange> ranges, bool negated);
  // A rule matching `item` between min and max times (max -1: unbounded), built by right recursion.
  int32_t repeat_rule(const GrammarSeq& item, int32_t min, int32_t max, std::string_view stem);
  // A rule whose alternatives are the given sequences.
  int32_t alt_rule(std::vector<GrammarSeq> alts, std::string_view stem);

  // Checks and lays out the grammar with `root` as the start rule. Errors name the rule.
  Status finalize(int32_t root);
  bool finalized() const { return !flat_.empty(); }

  // The flat layout (after finalize): position 0 holds {kRule root, kEnd}; each alternative of rule r is a
  // run of elements ending in kEnd starting at alt_starts(r)[i].
  const std::vector<GrammarElem>& flat() const { return flat_; }
  const std::vector<int32_t>& alt_starts(int32_t r) const { return alt_starts_[static_cast<size_t>(r)]; }
  // Fewest bytes the elements from `pos` to the end of its alternative can match (kCopy counts its
  // minimum: 0, or 1 with lo = 1).
  int32_t min_rest(int32_t pos) const { return min_rest_[static_cast<size_t>(pos)]; }
  bool uses_copy() const { return uses_copy_; }

  // The grammar as GBNF-like text (for --print-grammar and error reports).
  std::string to_text() const;

 private:
  struct Rule {
    std::string name;
    std::vector<GrammarSeq> alts;
  };
  std::vector<Rule> rules_;
  std::vector<std::pair<std::string, int32_t>> class_cache_;
  int32_t root_ = -1;
  std::vector<GrammarElem> flat_;
  std::vector<std::vector<int32_t>> alt_starts_;
  std::vector<int32_t> min_rest_;
  bool uses_copy_ = false;
};

// Appends to `out` the UTF-8 encoding of the code points [lo, hi] (no surrogates inside) as sequences of
// byte ranges: every byte string in the cross product of a sequence's ranges encodes a code point of the
// range, and every code point of the range is encoded by exactly one sequence.
void utf8_range_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out);

}  // namespace pocket
