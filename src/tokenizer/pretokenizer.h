// Regex pre-tokeniser for byte-level BPE: splits text into the words that BPE then merges, with the
// model's own pattern (GPT-2, Llama 3, Qwen2/Qwen3, or pocket's bilingual "pocket") run by PCRE2 in UTF +
// UCP mode, JIT-compiled, so \p{L}, \p{N} and \s follow the Unicode categories. Immutable after creation;
// split() is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace pocket {

// The pattern behind a pre-tokenizer name, or "" when the name is unknown.
std::string_view pre_tokenizer_pattern(std::string_view name);

class PreTokenizer {
 public:
  static Expected<std::unique_ptr<PreTokenizer>> create(std::string_view name);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Calls on_word(word) for each match, in order. `text` must be valid UTF-8 (callers sanitise first).
  // Bytes between matches (none for the built-in patterns, whose last branch is \s+) are passed as words.
  // Returns an error only if PCRE2 itself fails (e.g. out of memory).
  template <typename OnWord>
  Status split(std::string_view text, OnWord&& on_word) const {
    Matcher m(*this, text);
    size_t start, end;
    while (true) {
      const int rc = m.next(&start, &end);
      if (rc < 0) return m.error(rc);
      if (rc == 0) break;
      on_word(text.substr(start, end - start));
    }
    return Status::ok();
  }

 private:
  PreTokenizer() = default;

  class Matcher {
   public:
    Matcher(const PreTokenizer& pt, std::string_view text);
    ~Matcher();
    // 1 and [*start, *end) on a match (gaps between matches come out as words too), 0 at the end, < 0 on error.
    int next(size_t* start, size_t* end);
    Status error(int rc) const;

   private:
    const PreTokenizer& pt_;
    std::string_view text_;
    void* match_data_;
    size_t pos_ = 0;
    size_t gap_end_ = 0;     // a pending match after a gap
    size_t match_start_ = 0;
    bool have_pending_ = false;
  };

  std::string name_;
  void* code_ = nullptr;  // pcre2_code_8*
};

}  // namespace pocket
