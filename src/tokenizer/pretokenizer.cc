// PCRE2-backed pre-tokeniser; see pretokenizer.h.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

namespace pocket {

std::string_view pre_tokenizer_pattern(std::string_view name) {
  // Each is the model's published pattern, verbatim.
  if (name == "gpt2") return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  if (name == "llama3") {
    return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  }
  if (name == "qwen2") {
    return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  }
  if (name == "pocket") {
    // pocket's own (bilingual): contractions; a run of Han letters, or a run of other letters (so "iPhone手机"
    // is two words), each with at most one leading space; one digit per word; a punctuation/symbol run (ASCII
    // or full-width) with any newlines after it; then whitespace as Qwen2 does. See docs/vocabulary.md.
    // [^\P{L}\P{Han}] is "letter and Han": PCRE2 >= 10.40 reads \p{Han} as Script_Extensions, which takes in
    // CJK punctuation such as "。"; intersecting with \p{L} keeps that punctuation out of the Han runs.
    return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)| ?[^\P{L}\P{Han}]+| ?[^\P{L}\p{Han}]+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  }
  return {};
}

Expected<std::unique_ptr<PreTokenizer>> PreTokenizer::create(std::string_view name) {
  const std::string_view pattern = pre_tokenizer_pattern(name);
  if (pattern.empty()) return unsupported("[tokenizer] unknown pre-tokenizer '" + std::string(name) + "'");
  int err = 0;
  PCRE2_SIZE err_off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_off, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return Status(ErrorCode::kInternal, "[tokenizer] pre-tokenizer '" + std::string(name) + "' does not compile at " +
                                            std::to_string(err_off) + ": " + reinterpret_cast<char*>(msg));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: the interpreter gives the same matches
  std::unique_ptr<PreTokenizer> pt(new PreTokenizer());
  pt->name_ = std::string(name);
  pt->code_ = code;
  return pt;
}

PreTokenizer::~PreTokenizer() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

PreTokenizer::Matcher::Matcher(const PreTokenizer& pt, std::string_view text)
    : pt_(pt), text_(text), match_data_(pcre2_match_data_create(2, nullptr)) {}

PreTokenizer::Matcher::~Matcher() { pcre2_match_data_free(static_cast<pcre2_match_data*>(match_data_)); }

int PreTokenizer::Matcher::next(size_t* start, size_t* end) {
  if (have_pending_) {
    have_pending_ = false;
    *start = match_start_;
    *end = gap_end_;
    pos_ = gap_end_;
    return 1;
  }
  if (pos_ >= text_.size()) return 0;
  if (match_data_ == nullptr) return PCRE2_ERROR_NOMEMORY;
  auto* md = static_cast<pcre2_match_data*>(match_data_);
  const int rc = pcre2_match(static_cast<const pcre2_code*>(pt_.code_), reinterpret_cast<PCRE2_SPTR>(text_.data()),
                             text_.size(), pos_, PCRE2_NO_UTF_CHECK, md, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) {  // the tail is a gap
    *start = pos_;
    *end = text_.size();
    pos_ = text_.size();
    return 1;
  }
  if (rc < 0) return rc;
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  size_t ms = ov[0], me = ov[1];
  if (me == ms) {  // an empty match cannot happen with the built-in patterns; step one character to be safe
    me = ms + 1;
    while (me < text_.size() && (static_cast<uint8_t>(text_[me]) & 0xC0) == 0x80) ++me;
  }
  if (ms > pos_) {  // a gap before the match: emit it first, then the match
    *start = pos_;
    *end = ms;
    match_start_ = ms;
    gap_end_ = me;
    have_pending_ = true;
    pos_ = ms;
    return 1;
  }
  *start = ms;
  *end = me;
  pos_ = me;
  return 1;
}

Status PreTokenizer::Matcher::error(int rc) const {
  PCRE2_UCHAR msg[256];
  pcre2_get_error_message(rc, msg, sizeof msg);
  return Status(rc == PCRE2_ERROR_NOMEMORY ? ErrorCode::kOutOfMemory : ErrorCode::kInternal,
                "[tokenizer] pre-tokenizer '" + pt_.name_ + "' failed at byte " + std::to_string(pos_) + ": " +
                    reinterpret_cast<char*>(msg));
}

}  // namespace pocket
