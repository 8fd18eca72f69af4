// GrammarMatcher at the byte level: prefixes accepted exactly when PCRE2 (partial matching) says they can
// still match the equivalent regex, on random byte strings; nested brackets against a counter; UTF-8
// character classes; repeat bounds; COPY spans (any substring) against std::string::find on the unescaped
// text; whole-word COPY spans against a brute-force scan of every occurrence's boundaries.
#include "constrain/grammar_matcher.h"

#include <gtest/gtest.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

namespace pocket {
namespace {

GrammarSeq lit(std::string_view s) {
  GrammarSeq seq;
  Grammar::append_bytes(seq, s);
  return seq;
}
GrammarSeq cat(std::initializer_list<GrammarSeq> parts) {
  GrammarSeq out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
GrammarSeq ref(int32_t r) { return {{ElemKind::kRule, 0, 0, r}}; }
GrammarSeq range(uint8_t lo, uint8_t hi) { return {{ElemKind::kBytes, lo, hi, -1}}; }
GrammarSeq copy_span(int lo, CopyMode mode = CopyMode::kWords) { return {copy_elem(lo, mode)}; }

GrammarMatcher make(Grammar g, int32_t root, std::string_view source = {}) {
  const Status st = g.finalize(root);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  auto m = GrammarMatcher::create(std::move(g), source);
  EXPECT_TRUE(m.has_value()) << m.status().to_string();
  return std::move(m).value();
}

// An anchored regex: can `s` still be extended to a match, and is it a match.
class Regex {
 public:
  explicit Regex(const std::string& pattern) {
    int err = 0;
    PCRE2_SIZE off = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(), PCRE2_ANCHORED, &err, &off, nullptr);
    EXPECT_NE(code_, nullptr) << pattern;
    const std::string to_end = "(?:" + pattern + ")\\z";
    prefix_code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(to_end.c_str()), to_end.size(), PCRE2_ANCHORED, &err, &off, nullptr);
    EXPECT_NE(prefix_code_, nullptr) << to_end;
    data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~Regex() {
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
    pcre2_code_free(prefix_code_);
  }
  // Hard partial matching of pattern\z: a partial result means the subject can be extended to a match.
  bool viable(const std::string& s) const {
    const int rc = pcre2_match(prefix_code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, PCRE2_PARTIAL_HARD, data_, nullptr);
    return rc >= 0 || rc == PCRE2_ERROR_PARTIAL;
  }
  bool full(const std::string& s) const {
    const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, PCRE2_ENDANCHORED, data_, nullptr);
    return rc >= 0;
  }

 private:
  pcre2_code* code_ = nullptr;
  pcre2_code* prefix_code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
};

// Random strings over `alphabet`: after every byte the matcher agrees with the regex on viability and on
// completeness; once a byte is refused the state stays as it was.
void agree_with_regex(const GrammarMatcher& start, const std::string& pattern, const std::string& alphabet,
                      int trials, int max_len, uint32_t seed) {
  Regex re(pattern);
  std::mt19937 rng(seed);
  int accepted_full = 0;
  for (int t = 0; t < trials; ++t) {
    GrammarMatcher m = start;
    std::string s;
    ASSERT_EQ(m.can_end(), re.full(s));
    const int len = static_cast<int>(rng() % static_cast<uint32_t>(max_len + 1));
    for (int i = 0; i < len; ++i) {
      // Mostly bytes the regex still allows (so that strings get far), sometimes any byte.
      std::string ok_bytes;
      for (char a : alphabet) {
        if (re.viable(s + a)) ok_bytes += a;
      }
      const char c = !ok_bytes.empty() && rng() % 4 != 0 ? ok_bytes[rng() % ok_bytes.size()] : alphabet[rng() % alphabet.size()];
      const bool want = re.viable(s + c);
      ASSERT_EQ(m.accept_bytes(std::string(1, c)), want) << pattern << " after '" << s << "' byte '" << c << "'";
      if (!want) continue;  // state unchanged: keep extending the viable prefix
      s += c;
      ASSERT_EQ(m.can_end(), re.full(s)) << pattern << " on '" << s << "'";
      accepted_full += re.full(s);
    }
  }
  EXPECT_GT(accepted_full, 0) << "the random strings never completed " << pattern;
}

TEST(GrammarMatcher, JsonLikeObjectAgreesWithRegex) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const int32_t digits = g.repeat_rule(range('0', '9'), 1, 3, "digits");
  const int32_t abc = g.repeat_rule(range('a', 'c'), 0, -1, "abc");
  const int32_t b_field = g.alt_rule({cat({lit(",\"b\":\""), ref(abc), lit("\"")}), {}}, "b-field");
  g.add_alt(root, cat({lit("{\"a\":"), ref(digits), ref(b_field), lit("}")}));
  const GrammarMatcher m = make(std::move(g), root);
  agree_with_regex(m, R"(\{"a":[0-9]{1,3}(,"b":"[a-c]*")?\})", "{}\"ab:,0159c", 3000, 16, 1);
}

TEST(GrammarMatcher, AmbiguousAlternativesAgreeWithRegex) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const int32_t item = g.add_rule("item");
  g.add_alt(item, lit("x"));
  g.add_alt(item, lit("xy"));
  g.add_alt(item, cat({lit("y"), ref(g.repeat_rule(range('0', '2'), 2, -1, "num"))}));
  const int32_t more = g.repeat_rule(cat({lit(","), ref(item)}), 0, -1, "more");
  g.add_alt(root, cat({ref(item), ref(more)}));
  const GrammarMatcher m = make(std::move(g), root);
  agree_with_regex(m, R"((x|xy|y[0-2]{2,})(,(x|xy|y[0-2]{2,}))*)", "xy,012", 3000, 14, 2);
}

TEST(GrammarMatcher, NullableRulesAndBoundedRepeats) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const int32_t a = g.repeat_rule(lit("a"), 0, 2, "a");
  const int32_t b = g.repeat_rule(lit("bc"), 2, 3, "b");
  const int32_t opt = g.alt_rule({lit("z"), {}}, "opt");
  g.add_alt(root, cat({ref(a), ref(opt), ref(b)}));
  g.add_alt(root, cat({ref(opt), lit("q"), ref(opt)}));
  const GrammarMatcher m = make(std::move(g), root);
  agree_with_regex(m, R"(a{0,2}z?(bc){2,3}|z?qz?)", "abcqz", 3000, 10, 3);
}

TEST(GrammarMatcher, RepeatBoundsAreExact) {
  struct Bounds {
    int32_t min, max;
  };
  for (Bounds b : {Bounds{0, 0}, Bounds{0, 1}, Bounds{1, 1}, Bounds{3, 3}, Bounds{2, 5}, Bounds{0, -1}, Bounds{4, -1}}) {
    Grammar g;
    const int32_t root = g.add_rule("root");
    // A two-byte item, so that bounds count items, not bytes.
    g.add_alt(root, cat({lit("<"), ref(g.repeat_rule(lit("ab"), b.min, b.max, "items")), lit(">")}));
    const GrammarMatcher start = make(std::move(g), root);
    for (int32_t n = 0; n <= 9; ++n) {
      std::string text = "<";
      for (int32_t i = 0; i < n; ++i) text += "ab";
      GrammarMatcher m = start;
      const bool fits = n >= b.min && (b.max < 0 || n <= b.max);
      EXPECT_EQ(m.accept_bytes(text + ">") && m.can_end(), fits) << b.min << ".." << b.max << " n " << n;
      GrammarMatcher half = start;
      EXPECT_EQ(half.accept_bytes(text + "a"), b.max < 0 || n < b.max) << b.min << ".." << b.max << " n " << n;
    }
    GrammarMatcher m = start;
    ASSERT_TRUE(m.accept_bytes("<"));
    EXPECT_EQ(m.min_rest(), 2 * b.min + 1);
  }
}

TEST(GrammarMatcher, NestedBracketsAgreeWithACounter) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  g.add_alt(root, cat({lit("("), ref(root), lit(")"), ref(root)}));
  g.add_alt(root, {});
  const GrammarMatcher start = make(std::move(g), root);
  std::mt19937 rng(4);
  for (int t = 0; t < 300; ++t) {
    GrammarMatcher m = start;
    int depth = 0;
    for (int i = 0; i < 200; ++i) {
      const bool open = rng() % 2 == 0;
      const bool ok = open || depth > 0;
      ASSERT_EQ(m.accept_bytes(open ? "(" : ")"), ok);
      if (ok) depth += open ? 1 : -1;
      ASSERT_EQ(m.can_end(), depth == 0);
    }
  }
  // Deep nesting: the right-recursive tail keeps stacks bounded by the depth.
  GrammarMatcher deep = start;
  ASSERT_TRUE(deep.accept_bytes(std::string(1000, '(')));
  EXPECT_EQ(deep.min_rest(), 1000);
  ASSERT_TRUE(deep.accept_bytes(std::string(1000, ')')));
  EXPECT_TRUE(deep.can_end());
  EXPECT_FALSE(deep.accept_bytes(")"));
  EXPECT_LT(deep.engine()->n_nodes(), 5000u);
  // Past 65,536 configurations new ones get no transition table (bounded memory); matching is the same.
  GrammarMatcher deeper = start;
  ASSERT_TRUE(deeper.accept_bytes(std::string(70000, '(')));
  EXPECT_GT(deeper.engine()->n_configs(), 70000u);
  EXPECT_FALSE(deeper.can_end());
  ASSERT_TRUE(deeper.accept_bytes(std::string(70000, ')')));
  EXPECT_TRUE(deeper.can_end());
  EXPECT_FALSE(deeper.accept_bytes(")"));
  EXPECT_LT(deeper.engine()->memory_bytes(), size_t{200} << 20);
}

TEST(GrammarMatcher, Utf8CharacterClasses) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  // Greek lower case, CJK unified ideographs, and one emoji, 1 to 3 characters.
  const int32_t cls = g.char_class_rule({{0x3B1, 0x3C9}, {0x4E00, 0x9FFF}, {0x1F600, 0x1F600}}, false);
  g.add_alt(root, ref(g.repeat_rule(ref(cls), 1, 3, "chars")));
  const GrammarMatcher start = make(std::move(g), root);
  for (const char* ok : {"α", "ω", "世界", "中文字", "α世\xF0\x9F\x98\x80"}) {
    GrammarMatcher m = start;
    EXPECT_TRUE(m.accept_bytes(ok)) << ok;
    EXPECT_TRUE(m.can_end()) << ok;
  }
  for (const char* bad : {"a", "ä", "中文字世", "\xF0\x9F\x98\x81", "\xED\xA0\x80" /* a surrogate */, "\xC0\xB1"}) {
    GrammarMatcher m = start;
    EXPECT_TRUE(!m.accept_bytes(bad) || !m.can_end()) << bad;
  }
  GrammarMatcher half = start;
  ASSERT_TRUE(half.accept_bytes("\xE4\xB8"));  // two bytes of 世 (E4 B8 96)
  EXPECT_FALSE(half.can_end());
  EXPECT_EQ(half.min_rest(), 1);
  EXPECT_FALSE(half.accept_bytes("a"));
  EXPECT_TRUE(half.accept_bytes("\x96"));
  EXPECT_TRUE(half.can_end());
  // Negated class (JSON string character): every other code point, no quote, backslash or control byte.
  Grammar n;
  const int32_t nroot = n.add_rule("root");
  n.add_alt(nroot, ref(n.repeat_rule(ref(n.char_class_rule({{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true)), 0, -1, "s")));
  GrammarMatcher neg = make(std::move(n), nroot);
  EXPECT_TRUE(neg.accept_bytes("Hello, 世界 \xF0\x9F\x98\x80 ~\x7F"));
  EXPECT_FALSE(neg.accept_bytes("\""));
  EXPECT_FALSE(neg.accept_bytes("\\"));
  EXPECT_FALSE(neg.accept_bytes("\n"));
  EXPECT_FALSE(neg.accept_bytes("\x80"));
  EXPECT_TRUE(neg.can_end());
}

// ---- COPY spans ----

const std::string kSource = "Hello, 世界! She said \"hi\" to C:\\path/x\nand\ttab; 中文 text.";

std::string json_content(const std::string& raw) {
  const std::string quoted = nlohmann::json(raw).dump();
  return quoted.substr(1, quoted.size() - 2);
}

Grammar quoted_copy(int lo, int32_t* root, CopyMode mode = CopyMode::kSubstring) {
  Grammar g;
  *root = g.add_rule("root");
  g.add_alt(*root, cat({lit("\""), copy_span(lo, mode), lit("\"")}));
  return g;
}

TEST(GrammarMatcher, CopyAcceptsSpansOfTheSource) {
  int32_t root = 0;
  const GrammarMatcher start = make(quoted_copy(1, &root), root, kSource);
  // Every substring on character boundaries, written as JSON content, is accepted whole.
  std::vector<size_t> bounds;
  for (size_t i = 0; i <= kSource.size(); ++i) {
    if (i == kSource.size() || (static_cast<uint8_t>(kSource[i]) & 0xC0) != 0x80) bounds.push_back(i);
  }
  int n = 0;
  for (size_t a = 0; a < bounds.size(); ++a) {
    for (size_t b = a + 1; b < bounds.size(); ++b) {
      const std::string raw = kSource.substr(bounds[a], bounds[b] - bounds[a]);
      GrammarMatcher m = start;
      ASSERT_TRUE(m.accept_bytes("\"" + json_content(raw) + "\"")) << raw;
      ASSERT_TRUE(m.done()) << raw;
      ++n;
    }
  }
  EXPECT_GT(n, 1000);
}

TEST(GrammarMatcher, CopyRefusesWhatIsNotASpan) {
  int32_t root = 0;
  const GrammarMatcher start = make(quoted_copy(1, &root), root, kSource);
  auto accepts = [&](const std::string& text) {
    GrammarMatcher m = start;
    return m.accept_bytes(text) && m.can_end();
  };
  EXPECT_TRUE(accepts("\"Hello\""));
  EXPECT_TRUE(accepts("\"世界!\""));
  EXPECT_FALSE(accepts("\"\""));           // lo = 1: at least one character
  EXPECT_FALSE(accepts("\"Hellx\""));
  EXPECT_FALSE(accepts("\"界世\""));
  EXPECT_FALSE(accepts("\"said \"hi\"\""));  // a raw quote ends the string
  EXPECT_TRUE(accepts("\"said \\\"hi\\\"\""));
  EXPECT_TRUE(accepts("\"C:\\\\path\""));    // the backslash doubled
  EXPECT_FALSE(accepts("\"C:\\path\""));     // \p is no escape
  EXPECT_TRUE(accepts("\"path/x\""));
  EXPECT_TRUE(accepts("\"path\\/x\""));      // \/ stands for /
  EXPECT_TRUE(accepts("\"x\\nand\\ttab\""));
  EXPECT_FALSE(accepts("\"x\nand\""));       // raw newline is not JSON
  EXPECT_FALSE(accepts("\"\\u0048ello\""));  // \u escapes are not produced
  // Character boundaries: not inside 世 (E4 B8 96), not starting with its continuation bytes.
  GrammarMatcher m = start;
  ASSERT_TRUE(m.accept_bytes("\"\xE4\xB8"));
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_bytes("\""));
  EXPECT_FALSE(accepts("\"\xB8\x96\xE7\x95\x8C\""));
  // Inside an escape the span cannot end.
  GrammarMatcher esc = start;
  ASSERT_TRUE(esc.accept_bytes("\"said \\"));
  EXPECT_FALSE(esc.can_end());
  EXPECT_EQ(esc.min_rest(), 2);  // the escaped character, then the closing quote
  EXPECT_FALSE(esc.accept_bytes("x"));
  EXPECT_TRUE(esc.accept_bytes("\""));  // \" stands for the source's quote
}

TEST(GrammarMatcher, CopyAgreesWithFindOnRandomStrings) {
  int32_t root = 0;
  const GrammarMatcher start = make(quoted_copy(0, &root), root, kSource);
  // Characters of the source (and a few not in it), strung together at random.
  std::vector<std::string> chars;
  for (size_t i = 0; i < kSource.size();) {
    size_t n = 1;
    while (i + n < kSource.size() && (static_cast<uint8_t>(kSource[i + n]) & 0xC0) == 0x80) ++n;
    chars.push_back(kSource.substr(i, n));
    i += n;
  }
  chars.insert(chars.end(), {"Z", "é", "q"});
  std::mt19937 rng(5);
  int found = 0;
  for (int t = 0; t < 4000; ++t) {
    std::string raw;
    const int len = static_cast<int>(rng() % 5);
    // Start at a random place of the source half the time so that many strings are spans.
    size_t at = rng() % chars.size();
    for (int i = 0; i < len; ++i) raw += rng() % 4 != 0 ? chars[(at + static_cast<size_t>(i)) % chars.size()] : chars[rng() % chars.size()];
    const bool want = kSource.find(raw) != std::string::npos;
    found += want;
    GrammarMatcher m = start;
    const bool got = m.accept_bytes("\"" + json_content(raw) + "\"") && m.can_end();
    ASSERT_EQ(got, want) << "'" << raw << "'";
  }
  EXPECT_GT(found, 500);
}

TEST(GrammarMatcher, CopyFollowedByMoreText) {
  // Two spans separated by a literal that also occurs in the source: the matcher keeps both readings.
  Grammar g;
  const int32_t root = g.add_rule("root");
  g.add_alt(root, cat({lit("["), copy_span(1, CopyMode::kSubstring), lit(", "), copy_span(1, CopyMode::kSubstring), lit("]")}));
  const GrammarMatcher start = make(std::move(g), root, "a, b, c");
  GrammarMatcher m = start;
  ASSERT_TRUE(m.accept_bytes("[a, b, c, b]"));
  EXPECT_TRUE(m.done());
  m = start;
  ASSERT_TRUE(m.accept_bytes("[a, b"));
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept_bytes("]"));
  m = start;
  EXPECT_FALSE(m.accept_bytes("[a, b, d"));
}

TEST(GrammarMatcher, CopySourceLimits) {
  int32_t root = 0;
  Grammar g = quoted_copy(1, &root);
  ASSERT_TRUE(g.finalize(root).is_ok());
  auto big = GrammarMatcher::create(g, std::string(CopySource::kMaxBytes + 1, 'x'));
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.status().message().find("limit"), std::string::npos) << big.status().message();
  auto bad = GrammarMatcher::create(g, "ab\xC3");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("UTF-8"), std::string::npos);
  // The limit itself is fine and builds in bounded time.
  std::string max_src;
  std::mt19937 rng(6);
  while (max_src.size() < CopySource::kMaxBytes) max_src += static_cast<char>('a' + rng() % 26);
  auto ok = GrammarMatcher::create(g, max_src);
  ASSERT_TRUE(ok.has_value()) << ok.status().to_string();
  EXPECT_TRUE(ok->accept_bytes("\"" + max_src.substr(777777, 40) + "\""));
  EXPECT_TRUE(ok->done());
}

// ---- whole-word COPY spans (CopyMode::kWords) ----

// The rule written directly (independent of the automaton): [A-Za-z0-9] are word characters; `raw` is
// accepted when it is non-empty and some occurrence in `source` neither starts nor ends inside a word.
bool word_char(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool whole_word_span(const std::string& source, const std::string& raw) {
  if (raw.empty()) return false;
  for (size_t at = source.find(raw); at != std::string::npos; at = source.find(raw, at + 1)) {
    const size_t end = at + raw.size();
    if (word_char(raw.front()) && at > 0 && word_char(source[at - 1])) continue;
    if (word_char(raw.back()) && end < source.size() && word_char(source[end])) continue;
    return true;
  }
  return false;
}

std::vector<std::string> characters(const std::string& text) {
  std::vector<std::string> chars;
  for (size_t i = 0; i < text.size();) {
    size_t n = 1;
    while (i + n < text.size() && (static_cast<uint8_t>(text[i + n]) & 0xC0) == 0x80) ++n;
    chars.push_back(text.substr(i, n));
    i += n;
  }
  return chars;
}

TEST(GrammarMatcher, WholeWordsExamples) {
  const std::string source = "Zephyr running shoes, size: EU 36, colour: available in blue. Free returns within 30 "
                             "days! Price ￥329 (was 59.99), pickup 12:15 pm. 墨绿色款 boots";
  int32_t root = 0;
  const GrammarMatcher words = make(quoted_copy(1, &root, CopyMode::kWords), root, source);
  const GrammarMatcher any = make(quoted_copy(1, &root, CopyMode::kSubstring), root, source);
  auto accepts = [](const GrammarMatcher& start, const std::string& raw) {
    GrammarMatcher m = start;
    return m.accept_bytes("\"" + json_content(raw) + "\"") && m.can_end();
  };
  for (const char* ok : {"EU 36", "Zephyr", "12:15 pm", "329", "59.99", "墨绿色", "墨", "款 boots", "blue.", ", size",
                         ": EU", " ", "(was", "绿"}) {
    EXPECT_TRUE(accepts(words, ok)) << ok;
    EXPECT_TRUE(accepts(any, ok)) << ok;
  }
  for (const char* bad : {"U 36", "withi", "ble", "boo", "EU 3", "hoes", "ree returns", "9.99", "2:15", "in 3"}) {
    EXPECT_FALSE(accepts(words, bad)) << bad;
    EXPECT_TRUE(accepts(any, bad)) << bad;
  }
  // "in" is a whole word ("available in blue") though it also occurs inside "running" and "within".
  EXPECT_TRUE(accepts(words, "in"));
  // Prefixes inside a word stay open while some occurrence completes the word.
  GrammarMatcher m = words;
  ASSERT_TRUE(m.accept_bytes("\"wit"));
  EXPECT_FALSE(m.can_end());
  EXPECT_EQ(m.min_rest(), 4);  // "hin", then the closing quote
  EXPECT_FALSE(m.accept_bytes("\""));
  GrammarMatcher a = any;
  ASSERT_TRUE(a.accept_bytes("\"wit"));
  EXPECT_EQ(a.min_rest(), 1);
  // A span may not start inside a word: "U" and "ithin" have no occurrence at a word start.
  GrammarMatcher u = words;
  EXPECT_FALSE(u.accept_bytes("\"U"));
  u = words;
  EXPECT_FALSE(u.accept_bytes("\"ithin"));
  // The shortest whole-word span here is one byte (a blank or punctuation); before the first byte, a span
  // of lo = 1 needs it plus the quote.
  GrammarMatcher empty = words;
  ASSERT_TRUE(empty.accept_bytes("\""));
  EXPECT_EQ(empty.min_rest(), 2);
}

TEST(GrammarMatcher, WholeWordsMinRestCountsTheShortestWord) {
  // No non-word character and the shortest word is 3 bytes: a lo = 1 span needs 3 bytes.
  int32_t root = 0;
  GrammarMatcher m = make(quoted_copy(1, &root, CopyMode::kWords), root, "abc");
  ASSERT_TRUE(m.accept_bytes("\""));
  EXPECT_EQ(m.min_rest(), 4);  // "abc" and the closing quote
  GrammarMatcher c = m;
  ASSERT_TRUE(c.accept_bytes("ab"));
  EXPECT_EQ(c.min_rest(), 2);
  EXPECT_FALSE(m.accept_bytes("b"));
  ASSERT_TRUE(m.accept_bytes("abc\""));
  EXPECT_TRUE(m.done());
}

TEST(GrammarMatcher, WholeWordsEscapes) {
  const std::string source = "She said \"hi\" to C:\\path/x\nand\ttab";
  int32_t root = 0;
  const GrammarMatcher start = make(quoted_copy(1, &root, CopyMode::kWords), root, source);
  auto accepts = [&](const std::string& text) {
    GrammarMatcher m = start;
    return m.accept_bytes(text) && m.can_end();
  };
  EXPECT_TRUE(accepts(R"("said \"hi\"")"));
  EXPECT_TRUE(accepts(R"("\"hi\" to")"));
  EXPECT_TRUE(accepts(R"("\"")"));
  EXPECT_FALSE(accepts(R"("aid \"hi")"));
  EXPECT_FALSE(accepts(R"("said \"h")"));
  EXPECT_TRUE(accepts(R"("C:\\path\/x")"));
  EXPECT_TRUE(accepts(R"("\\path")"));
  EXPECT_FALSE(accepts(R"("\\pat")"));
  EXPECT_TRUE(accepts(R"("x\nand\ttab")"));
  EXPECT_FALSE(accepts(R"("x\nan")"));
  GrammarMatcher esc = start;
  ASSERT_TRUE(esc.accept_bytes("\"said \\"));
  EXPECT_EQ(esc.min_rest(), 2);
  EXPECT_FALSE(esc.accept_bytes("n"));  // no newline follows "said "
}

// Random sources of ASCII words, punctuation and CJK: the matcher accepts exactly the strings the brute
// force accepts, and a prefix of JSON content exactly when some accepted span's content extends it. The
// sources also hold raw 0x01 and 0x02 (the automaton's sentinel bytes): JSON content cannot copy those
// controls, and they must not be taken for word boundaries.
TEST(GrammarMatcher, WholeWordsAgreeWithBruteForceOnRandomSources) {
  const std::vector<std::string> words = {"a", "an", "in", "tin", "within", "EU", "U", "36", "3", "6", "bl",
                                          "blue", "available", "boots", "boo", "x9", "9x", "Zephyr"};
  const std::vector<std::string> seps = {" ", " ", ", ", ".", "-", ":", "/", "\"", "\\", "\n", "中", "文",
                                         "墨绿色", "￥", "é", "_", "\x01", "\x02"};
  // Raw controls other than \b \f \n \r \t have no JSON escape that the copy terminal accepts.
  auto copyable = [](const std::string& raw) { return raw.find_first_of(std::string("\x01\x02", 2)) == std::string::npos; };
  std::mt19937 rng(21);
  int accepted = 0, refused = 0, prefixes = 0;
  for (int trial = 0; trial < 30; ++trial) {
    std::string source;
    const int n = 4 + static_cast<int>(rng() % 10);
    for (int i = 0; i < n; ++i) {
      // Mostly words between separators, sometimes two words run together ("tinboots").
      source += words[rng() % words.size()];
      if (rng() % 5 != 0) source += seps[rng() % seps.size()];
    }
    int32_t root = 0;
    const GrammarMatcher start = make(quoted_copy(1, &root, CopyMode::kWords), root, source);
    const std::vector<std::string> chars = characters(source);
    // Every accepted span's JSON content, by brute force over all character-boundary substrings.
    std::set<std::string> contents;
    for (size_t i = 0; i < chars.size(); ++i) {
      std::string raw;
      for (size_t j = i; j < chars.size(); ++j) {
        raw += chars[j];
        if (copyable(raw) && whole_word_span(source, raw)) contents.insert(json_content(raw));
      }
    }
    std::vector<std::string> pool = chars;
    pool.insert(pool.end(), {"Z", "q", "é", "a", "3"});
    for (int t = 0; t < 300; ++t) {
      std::string raw;
      if (rng() % 2 == 0) {  // a substring of the source, often not whole words
        const size_t i = rng() % chars.size();
        const size_t len = 1 + rng() % 8;
        for (size_t j = i; j < std::min(chars.size(), i + len); ++j) raw += chars[j];
      } else {
        const int len = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < len; ++k) raw += pool[rng() % pool.size()];
      }
      const bool want = copyable(raw) && whole_word_span(source, raw);
      ASSERT_EQ(want, contents.count(json_content(raw)) > 0) << raw;
      GrammarMatcher m = start;
      const bool got = m.accept_bytes("\"" + json_content(raw) + "\"") && m.can_end();
      ASSERT_EQ(got, want) << "'" << raw << "' in '" << source << "'";
      (want ? accepted : refused)++;
      // Every byte prefix of the content: accepted iff some accepted span's content starts with it.
      const std::string content = json_content(raw);
      for (size_t k = 1; k <= content.size(); ++k) {
        const std::string p = content.substr(0, k);
        auto extends = [&](const std::string& q) {
          auto it = contents.lower_bound(q);
          return it != contents.end() && it->compare(0, q.size(), q) == 0;
        };
        // A trailing backslash may also begin "\/", which json_content never writes but JSON allows.
        const bool viable = extends(p) || (p.back() == '\\' && extends(p.substr(0, p.size() - 1) + "/"));
        GrammarMatcher pm = start;
        ASSERT_EQ(pm.accept_bytes("\"" + p), viable) << "prefix '" << p << "' in '" << source << "'";
        ++prefixes;
      }
    }
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(refused, 1500);
  EXPECT_GT(prefixes, 20000);
}

TEST(GrammarMatcher, WholeWordsAndSubstringsInOneGrammar) {
  // One source serves both modes: [whole words, any substring].
  Grammar g;
  const int32_t root = g.add_rule("root");
  g.add_alt(root, cat({lit("["), copy_span(1, CopyMode::kWords), lit("|"), copy_span(1, CopyMode::kSubstring), lit("]")}));
  const GrammarMatcher start = make(std::move(g), root, "within 30 days");
  auto accepts = [&](const std::string& text) {
    GrammarMatcher m = start;
    return m.accept_bytes(text) && m.can_end();
  };
  EXPECT_TRUE(accepts("[within|ithi]"));
  EXPECT_TRUE(accepts("[30 days|0 da]"));
  EXPECT_FALSE(accepts("[ithi|within]"));
  EXPECT_FALSE(accepts("[30 d|30]"));
}

TEST(GrammarMatcher, RefusesUnfinalizedGrammar) {
  Grammar g;
  g.add_alt(g.add_rule("root"), lit("x"));
  EXPECT_FALSE(GrammarMatcher::create(std::move(g)).has_value());
}

}  // namespace
}  // namespace pocket
