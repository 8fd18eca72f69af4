// The GBNF parser: a hand-written recursive-descent reader over the grammar text that builds a Grammar with
// its builder API. Recursion happens only through ( ... ) groups, bounded by GbnfLimits::kMaxNesting.
#include "constrain/gbnf.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pocket {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Expected<Grammar> parse() {
    skip_space(true);
    while (pos_ < text_.size()) {
      POCKET_RETURN_IF_ERROR(parse_rule());
      skip_space(true);
    }
    const std::string* undefined = nullptr;  // the first in the text, so that the error is deterministic
    for (const auto& [name, info] : rules_) {
      if (!info.defined && (undefined == nullptr || info.first_use < rules_[*undefined].first_use)) undefined = &name;
    }
    if (undefined != nullptr) {
      return error_at(rules_[*undefined].first_use, "rule '" + *undefined + "' is used but never defined");
    }
    auto root = rules_.find("root");
    if (root == rules_.end()) return invalid_argument("[gbnf] no rule named 'root' (the start rule)");
    POCKET_RETURN_IF_ERROR(check_unbounded_repeats());
    POCKET_RETURN_IF_ERROR(grammar_.finalize(root->second.id));
    return std::move(grammar_);
  }

 private:
  // An unbounded repetition of an item that can match the empty string would loop without consuming a
  // byte (the grammar refuses it as left recursion); found here to name the place in the text.
  Status check_unbounded_repeats() {
    std::vector<bool> nullable(static_cast<size_t>(grammar_.n_rules()), false);
    auto seq_nullable = [&](const GrammarSeq& seq) {
      for (const GrammarElem& e : seq) {
        if (e.kind == ElemKind::kBytes) return false;
        if (e.kind == ElemKind::kCopy && e.lo > 0) return false;
        if (e.kind == ElemKind::kRule && !nullable[static_cast<size_t>(e.rule)]) return false;
      }
      return true;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (int32_t r = 0; r < grammar_.n_rules(); ++r) {
        if (nullable[static_cast<size_t>(r)]) continue;
        for (const GrammarSeq& alt : grammar_.alts(r)) {
          if (seq_nullable(alt)) {
            nullable[static_cast<size_t>(r)] = changed = true;
            break;
          }
        }
      }
    }
    for (const auto& [body, at] : unbounded_) {
      if (seq_nullable(body)) {
        return error_at(at, "the repeated item can match the empty string, so the repetition would loop; make the "
                            "item non-empty (e.g. (x)+ instead of (x?)*)");
      }
    }
    return Status::ok();
  }

  struct RuleInfo {
    int32_t id = -1;
    bool defined = false;
    size_t first_use = 0;  // byte offset of the first reference or the definition
    size_t defined_at = 0;
  };

  // "[gbnf] line:column: what" with the column counted in characters (code points), both from 1.
  Status error_at(size_t at, const std::string& what) const {
    at = std::min(at, text_.size());
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < at; ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    size_t col = 1;
    for (size_t i = line_start; i < at; ++i) {
      if ((static_cast<uint8_t>(text_[i]) & 0xC0) != 0x80) ++col;
    }
    return invalid_argument("[gbnf] " + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
  }
  std::string position(size_t at) const {
    const std::string m = error_at(at, "").message();  // "[gbnf] L:C: "
    return m.substr(7, m.size() - 9);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  // Skips blanks and # comments; newlines too when `newlines`.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  // Does a rule definition (`name ::=`) start at `pos_`? Rules run until the next one, so a sequence ends
  // there; `::=` cannot appear inside a sequence, which makes this unambiguous.
  bool definition_ahead() const {
    size_t p = pos_;
    while (p < text_.size() && is_word_char(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size()) {
      const char c = text_[p];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++p;
      } else if (c == '#') {
        while (p < text_.size() && text_[p] != '\n') ++p;
      } else {
        break;
      }
    }
    return text_.substr(p, 3) == "::=";
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_word_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  Expected<int32_t> rule_for(const std::string& name, size_t at) {
    auto it = rules_.find(name);
    if (it != rules_.end()) return it->second.id;
    if (grammar_.n_rules() >= GbnfLimits::kMaxRules) {
      return error_at(at, "more than " + std::to_string(GbnfLimits::kMaxRules) + " rules");
    }
    RuleInfo info;
    info.id = grammar_.add_rule(name);
    info.first_use = at;
    rules_.emplace(name, info);
    return info.id;
  }

  Status parse_rule() {
    const size_t start = pos_;
    if (!is_word_char(peek())) {
      if (peek() == ')') return error_at(pos_, "')' without a matching '('");
      if (peek() == '|') return error_at(pos_, "'|' outside a rule (a rule is `name ::= alternatives`)");
      return error_at(pos_, "expected a rule name (letters, digits, '_' or '-')");
    }
    const std::string name = parse_name();
    if (name == "copy" || name == "copy-any") {
      return error_at(start, "'" + name + "' is reserved (the copy-from-source terminal); rename the rule");
    }
    skip_space(true);
    if (text_.substr(pos_, 3) != "::=") return error_at(pos_, "expected '::=' after the rule name '" + name + "'");
    pos_ += 3;
    POCKET_ASSIGN_OR_RETURN(const int32_t id, rule_for(name, start));
    RuleInfo& info = rules_[name];
    if (info.defined) {
      return error_at(start, "rule '" + name + "' is defined twice (first at " + position(info.defined_at) + ")");
    }
    info.defined = true;
    info.defined_at = start;
    std::vector<GrammarSeq> alts;
    POCKET_RETURN_IF_ERROR(parse_alternatives(&alts));
    for (auto& seq : alts) grammar_.add_alt(id, std::move(seq));
    return Status::ok();
  }

  // alternatives := sequence ('|' sequence)*; stops before ')' or the next rule definition.
  Status parse_alternatives(std::vector<GrammarSeq>* alts) {
    for (;;) {
      GrammarSeq seq;
      POCKET_RETURN_IF_ERROR(parse_sequence(&seq));
      alts->push_back(std::move(seq));
      skip_space(true);
      if (peek() != '|') return Status::ok();
      ++pos_;
    }
  }

  Status parse_sequence(GrammarSeq* seq) {
    for (;;) {
      skip_space(true);
      if (at_end()) return Status::ok();
      const char c = peek();
      if (c == '|' || c == ')') return Status::ok();
      if (is_word_char(c) && definition_ahead()) return Status::ok();
      const size_t item_start = pos_;
      GrammarSeq item;
      bool is_copy = false;
      POCKET_RETURN_IF_ERROR(parse_item(&item, &is_copy));
      skip_space(false);
      POCKET_RETURN_IF_ERROR(parse_postfix(&item, is_copy));
      seq->insert(seq->end(), item.begin(), item.end());
      if (seq->size() > Grammar::kMaxElems / 4) return error_at(item_start, "a sequence too long to compile");
    }
  }

  Status parse_item(GrammarSeq* item, bool* is_copy) {
    const char c = peek();
    if (c == '"') return parse_literal(item);
    if (c == '[') return parse_class(item);
    if (c == '.') {
      ++pos_;
      Grammar::append_rule(*item, grammar_.char_class_rule({{0, 0x10FFFF}}, false));
      return Status::ok();
    }
    if (c == '(') return parse_group(item);
    if (is_word_char(c)) {
      const size_t start = pos_;
      const std::string name = parse_name();
      // copy: whole words of the source; copy-any: any substring (CopyMode).
      if (name == "copy" || name == "copy-any") {
        *is_copy = true;
        item->push_back(copy_elem(0, name == "copy" ? CopyMode::kWords : CopyMode::kSubstring));
        return Status::ok();
      }
      POCKET_ASSIGN_OR_RETURN(const int32_t id, rule_for(name, start));
      Grammar::append_rule(*item, id);
      return Status::ok();
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      return error_at(pos_, std::string("'") + c + "' must follow an item (a repetition applies to the item before it)");
    }
    return error_at(pos_, "expected an item (a \"literal\", a [class], a rule name, '(', '.' or copy), found " +
                              describe(pos_));
  }

  std::string describe(size_t at) const {
    if (at >= text_.size()) return "the end of the text";
    const char c = text_[at];
    if (c == '\n') return "the end of the line";
    if (static_cast<uint8_t>(c) < 0x20 || static_cast<uint8_t>(c) >= 0x80) {
      static const char* kHex = "0123456789ABCDEF";
      return std::string("byte 0x") + kHex[static_cast<uint8_t>(c) >> 4] + kHex[static_cast<uint8_t>(c) & 15];
    }
    return std::string("'") + c + "'";
  }

  Status parse_group(GrammarSeq* item) {
    const size_t open = pos_;
    if (++depth_ > GbnfLimits::kMaxNesting) {
      return error_at(open, "groups nested more than " + std::to_string(GbnfLimits::kMaxNesting) + " deep");
    }
    ++pos_;
    std::vector<GrammarSeq> alts;
    POCKET_RETURN_IF_ERROR(parse_alternatives(&alts));
    if (peek() != ')') {
      return error_at(pos_, "expected ')' to close the group opened at " + position(open) + ", found " + describe(pos_));
    }
    ++pos_;
    --depth_;
    if (alts.size() == 1) {
      *item = std::move(alts[0]);  // a group of one sequence is that sequence
    } else {
      POCKET_RETURN_IF_ERROR(count_rule(open));
      Grammar::append_rule(*item, grammar_.alt_rule(std::move(alts), "group"));
    }
    return Status::ok();
  }

  Status count_rule(size_t at) {
    if (grammar_.n_rules() >= GbnfLimits::kMaxRules) {
      return error_at(at, "more than " + std::to_string(GbnfLimits::kMaxRules) + " rules");
    }
    return Status::ok();
  }

  // Reads one character of a literal or class at pos_: an escape or a whole UTF-8 character.
  Status read_char(uint32_t* cp, bool in_class) {
    const size_t start = pos_;
    const uint8_t b = static_cast<uint8_t>(text_[pos_]);
    if (b == '\\') return read_escape(cp, in_class);
    if (b < 0x80) {
      *cp = b;
      ++pos_;
      return Status::ok();
    }
    int n = 0;
    uint32_t v = 0, min = 0;
    if ((b & 0xE0) == 0xC0) {
      n = 1, v = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      n = 2, v = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      n = 3, v = b & 0x07, min = 0x10000;
    } else {
      return error_at(start, "invalid UTF-8 (" + describe(start) + ")");
    }
    for (int i = 1; i <= n; ++i) {
      if (start + i >= text_.size() || (static_cast<uint8_t>(text_[start + i]) & 0xC0) != 0x80) {
        return error_at(start, "invalid UTF-8 (a truncated multi-byte character)");
      }
      v = (v << 6) | (static_cast<uint8_t>(text_[start + i]) & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
      return error_at(start, "invalid UTF-8 (an overlong, surrogate or out-of-range character)");
    }
    pos_ += static_cast<size_t>(n) + 1;
    *cp = v;
    return Status::ok();
  }

  Status read_escape(uint32_t* cp, bool in_class) {
    const size_t start = pos_;
    ++pos_;  // the backslash
    if (at_end()) return error_at(start, "a '\\' at the end of the text");
    const char c = text_[pos_++];
    int digits = 0;
    switch (c) {
      case 'n': *cp = '\n'; return Status::ok();
      case 't': *cp = '\t'; return Status::ok();
      case 'r': *cp = '\r'; return Status::ok();
      case 'f': *cp = '\f'; return Status::ok();
      case 'b': *cp = '\b'; return Status::ok();
      case '0': *cp = 0; return Status::ok();
      case '\\': case '"': case '\'': case '/': case '[': case ']': case '-': case '^':
        *cp = static_cast<uint8_t>(c);
        return Status::ok();
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      default:
        pos_ = start;
        return error_at(start, "unknown escape '\\" + std::string(1, c) +
                                   "' (known: \\n \\t \\r \\f \\b \\0 \\\\ \\\" \\' \\/ \\[ \\] \\- \\^ \\xHH "
                                   "\\uHHHH \\UHHHHHHHH)");
    }
    uint64_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) {
        return error_at(pos_, "expected " + std::to_string(digits) + " hex digits after '\\" + std::string(1, c) +
                                  "', found " + describe(pos_));
      }
      v = v * 16 + static_cast<uint64_t>(h);
      ++pos_;
    }
    if (v > 0x10FFFF) return error_at(start, "escape beyond U+10FFFF (the last Unicode code point)");
    if (!in_class && v >= 0xD800 && v <= 0xDFFF) {
      return error_at(start, "escape of a surrogate (U+D800..U+DFFF are not characters)");
    }
    *cp = static_cast<uint32_t>(v);
    return Status::ok();
  }

  Status parse_literal(GrammarSeq* item) {
    const size_t open = pos_;
    ++pos_;
    std::string bytes;
    for (;;) {
      if (at_end() || peek() == '\n') {
        return error_at(pos_, "expected '\"' to close the string opened at " + position(open));
      }
      if (peek() == '"') break;
      uint32_t cp = 0;
      POCKET_RETURN_IF_ERROR(read_char(&cp, false));
      append_utf8(bytes, cp);
    }
    ++pos_;
    Grammar::append_bytes(*item, bytes);
    return Status::ok();
  }

  Status parse_class(GrammarSeq* item) {
    const size_t open = pos_;
    ++pos_;
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CodepointRange> ranges;
    for (;;) {
      if (at_end() || peek() == '\n') return error_at(pos_, "expected ']' to close the character class");
      if (peek() == ']') break;
      const size_t at = pos_;
      uint32_t lo = 0;
      POCKET_RETURN_IF_ERROR(read_char(&lo, true));
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size() && peek(1) != '\n') {
        ++pos_;
        POCKET_RETURN_IF_ERROR(read_char(&hi, true));
        if (hi < lo) return error_at(at, "character range with its end before its start");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    if (ranges.empty()) return error_at(open, negated ? "empty negated class [^] (use . for any character)"
                                                      : "empty character class []");
    POCKET_RETURN_IF_ERROR(count_rule(open));
    Grammar::append_rule(*item, grammar_.char_class_rule(std::move(ranges), negated));
    return Status::ok();
  }

  Expected<int32_t> parse_count() {
    const size_t start = pos_;
    int64_t v = 0;
    if (!(peek() >= '0' && peek() <= '9')) return error_at(pos_, "expected a repetition count, found " + describe(pos_));
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      ++pos_;
      if (v > GbnfLimits::kMaxRepeat) {
        while (peek() >= '0' && peek() <= '9') ++pos_;
        return error_at(start, "repetition count " + std::string(text_.substr(start, pos_ - start)) +
                                   " is more than the " + std::to_string(GbnfLimits::kMaxRepeat) + " allowed");
      }
    }
    return static_cast<int32_t>(v);
  }

  Status parse_postfix(GrammarSeq* item, bool is_copy) {
    const char c = peek();
    int32_t min = 0, max = 0;
    const size_t at = pos_;
    if (c == '*') {
      min = 0, max = -1;
      ++pos_;
    } else if (c == '+') {
      min = 1, max = -1;
      ++pos_;
    } else if (c == '?') {
      min = 0, max = 1;
      ++pos_;
    } else if (c == '{') {
      ++pos_;
      skip_space(false);
      POCKET_ASSIGN_OR_RETURN(min, parse_count());
      skip_space(false);
      max = min;
      if (peek() == ',') {
        ++pos_;
        skip_space(false);
        if (peek() == '}') {
          max = -1;
        } else {
          POCKET_ASSIGN_OR_RETURN(max, parse_count());
          skip_space(false);
          if (max < min) return error_at(at, "repetition {m,n} with n < m");
        }
      }
      if (peek() != '}') return error_at(pos_, "expected '}' to close the repetition, found " + describe(pos_));
      ++pos_;
    } else {
      return Status::ok();
    }
    if (is_copy) {
      if (c != '+') {
        const std::string name = copy_mode((*item)[0]) == CopyMode::kWords ? "copy" : "copy-any";
        return error_at(at, name + " takes no repetition other than '+' (" + name + "+: at least one character)");
      }
      (*item)[0].lo = 1;
    } else {
      budget_ += (max < 0 ? min + 1 : max) + 1;
      if (budget_ > GbnfLimits::kMaxRepeatBudget) {
        return error_at(at, "the repetitions build more than " + std::to_string(GbnfLimits::kMaxRepeatBudget) +
                                " elements; use smaller counts");
      }
      POCKET_RETURN_IF_ERROR(count_rule(at));
      if (max == 0) {
        item->clear();
      } else if (!(min == 1 && max == 1)) {
        GrammarSeq body = std::move(*item);
        if (body.size() > 1 && (max < 0 || max > 1)) {
          // Repeating a long literal copies it once per count; one rule keeps the expansion linear.
          body = {GrammarElem{ElemKind::kRule, 0, 0, grammar_.alt_rule({std::move(body)}, "item")}};
        }
        item->clear();
        if (max < 0) unbounded_.emplace_back(body, at);
        Grammar::append_rule(*item, grammar_.repeat_rule(body, min, max, "repeat"));
      }
    }
    skip_space(false);
    const char next = peek();
    if (next == '*' || next == '+' || next == '?' || next == '{') {
      return error_at(pos_, "a repetition cannot follow another; group the item with ( ... ) first");
    }
    return Status::ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar grammar_;
  std::unordered_map<std::string, RuleInfo> rules_;
  int depth_ = 0;
  int64_t budget_ = 0;
  std::vector<std::pair<GrammarSeq, size_t>> unbounded_;  // items of '*', '+', {m,} and where they are
};

}  // namespace

Expected<Grammar> parse_gbnf(std::string_view text) {
  if (text.size() > GbnfLimits::kMaxTextBytes) {
    return invalid_argument("[gbnf] the grammar text is " + std::to_string(text.size()) + " bytes, more than the " +
                            std::to_string(GbnfLimits::kMaxTextBytes) + " allowed");
  }
  return GbnfParser(text).parse();
}

}  // namespace pocket
