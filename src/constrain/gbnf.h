// GBNF text -> Grammar: llama.cpp's grammar syntax (rules, "literals", [character classes], groups,
// repetition) plus pocket's `copy` / `copy+` terminal (a span of the source text as JSON string content).
// The syntax and its limits are documented in docs/constrained-decoding.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "constrain/grammar.h"
#include "core/status.h"

namespace pocket {

// Bounds that keep a hostile or mistaken grammar text from exhausting memory or the stack.
struct GbnfLimits {
  static constexpr size_t kMaxTextBytes = 1 << 20;  // grammar text size
  static constexpr int kMaxNesting = 64;            // ( ... ) groups inside one another
  static constexpr int32_t kMaxRepeat = 10000;      // m and n in {m}, {m,}, {m,n}
  // Sum over every repetition of its count (the elements its expansion builds): a grammar of many
  // {m,n} repetitions is refused before it is built.
  static constexpr int64_t kMaxRepeatBudget = 1 << 20;
  static constexpr int32_t kMaxRules = 1 << 17;     // named and generated rules
};

// Parses GBNF text into a finalized Grammar whose start rule is `root`. Errors are kInvalidArgument
// with the position and what was expected: "[gbnf] 3:14: expected ']' to close the character class".
Expected<Grammar> parse_gbnf(std::string_view text);

}  // namespace pocket
