// Finds special-token text (control and user-defined tokens) in user text, leftmost-longest.
// Control and unknown tokens are matched only when the caller asks (EncodeOptions::parse_special);
// user-defined (added) tokens always, as Hugging Face tokenizers and llama.cpp do.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_data.h"

namespace pocket {

class SpecialTokenMatcher {
 public:
  struct Match {
    size_t pos = 0;
    size_t len = 0;
    int32_t id = -1;
  };

  // Collects the tokens; `data` must outlive the matcher (entries point into its pieces).
  void build(const TokenizerData& data);

  // The first match at or after `from`; false when none. Cost: one byte test per text byte, plus a
  // comparison with the candidates sharing a first byte.
  bool find(std::string_view text, size_t from, bool parse_special, Match* m) const;

  // Calls on_text(fragment, after_special) for the plain-text fragments (after_special is true for the
  // first fragment and after a matched token) and on_token(id) for the matched tokens, in order.
  template <typename OnText, typename OnToken>
  void split(std::string_view text, bool parse_special, OnText&& on_text, OnToken&& on_token) const {
    size_t pos = 0;
    bool after_special = true;
    Match m;
    while (pos < text.size()) {
      if (!find(text, pos, parse_special, &m)) break;
      if (m.pos > pos) on_text(text.substr(pos, m.pos - pos), after_special);
      on_token(m.id);
      after_special = true;
      pos = m.pos + m.len;
    }
    if (pos < text.size()) on_text(text.substr(pos), after_special);
  }

 private:
  struct Entry {
    std::string_view text;
    int32_t id;
    bool always;  // user-defined: matched even without parse_special
  };
  std::vector<Entry> entries_;               // longest first
  std::vector<uint32_t> by_first_[256];      // indices into entries_, longest first
  bool any_always_ = false;
};

}  // namespace pocket
