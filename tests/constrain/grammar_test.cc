// Grammar: finalize()'s errors (undefined rule, left recursion, unproductive root), min_rest, the UTF-8
// expansion of code point ranges checked against a direct encoder over every code point, and to_text.
#include "constrain/grammar.h"

#include <gtest/gtest.h>

#include <set>

#include "tokenizer/utf8.h"

namespace pocket {
namespace {

GrammarSeq lit(std::string_view s) {
  GrammarSeq seq;
  Grammar::append_bytes(seq, s);
  return seq;
}

GrammarSeq rule_seq(std::initializer_list<int32_t> rules) {
  GrammarSeq seq;
  for (int32_t r : rules) Grammar::append_rule(seq, r);
  return seq;
}

TEST(Grammar, UndefinedRuleIsNamed) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const int32_t item = g.add_rule("item");
  g.add_alt(root, rule_seq({item}));
  const Status st = g.finalize(root);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("[grammar] rule 'item'"), std::string::npos) << st.message();
  EXPECT_FALSE(g.finalized());
}

TEST(Grammar, BadRootAndMissingRuleIndex) {
  Grammar g;
  EXPECT_FALSE(g.finalize(0).is_ok());
  const int32_t root = g.add_rule("root");
  GrammarSeq seq;
  Grammar::append_rule(seq, 7);
  g.add_alt(root, seq);
  EXPECT_FALSE(g.finalize(root).is_ok());
  EXPECT_FALSE(g.finalize(-1).is_ok());
}

TEST(Grammar, LeftRecursionIsRefused) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const int32_t expr = g.add_rule("expr");
  const int32_t opt = g.add_rule("opt");
  g.add_alt(opt, lit("x"));
  g.add_alt(opt, {});
  g.add_alt(root, rule_seq({expr}));
  // expr ::= opt expr "+" | "1": opt may match nothing, so expr reaches itself without a byte.
  GrammarSeq rec = rule_seq({opt, expr});
  Grammar::append_bytes(rec, "+");
  g.add_alt(expr, rec);
  g.add_alt(expr, lit("1"));
  const Status st = g.finalize(root);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("left-recursive"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'expr'"), std::string::npos) << st.message();
}

TEST(Grammar, RightRecursionIsFine) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  GrammarSeq rec = lit("a");
  Grammar::append_rule(rec, root);
  g.add_alt(root, rec);
  g.add_alt(root, lit("b"));
  ASSERT_TRUE(g.finalize(root).is_ok());
  EXPECT_TRUE(g.finalized());
  EXPECT_EQ(g.min_rest(0), 1);  // "b"
}

TEST(Grammar, UnproductiveRootIsRefused) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  GrammarSeq rec = lit("a");
  Grammar::append_rule(rec, root);
  g.add_alt(root, rec);  // root ::= "a" root: never ends
  const Status st = g.finalize(root);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("root rule 'root' derives no finite string"), std::string::npos) << st.message();
}

TEST(Grammar, UnproductiveAlternativesAreDropped) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const int32_t loop = g.add_rule("loop");
  GrammarSeq rec = lit("x");
  Grammar::append_rule(rec, loop);
  g.add_alt(loop, rec);
  g.add_alt(root, rule_seq({loop}));
  g.add_alt(root, lit("ok"));
  ASSERT_TRUE(g.finalize(root).is_ok());
  EXPECT_EQ(g.alt_starts(root).size(), 1u);
  EXPECT_EQ(g.min_rest(0), 2);
}

TEST(Grammar, MinRestCountsShortestCompletion) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const int32_t digits = g.repeat_rule({{ElemKind::kBytes, '0', '9', -1}}, 2, 4, "digits");
  GrammarSeq seq = lit("{");
  Grammar::append_rule(seq, digits);
  seq.push_back({ElemKind::kCopy, 1, 0, -1});
  Grammar::append_bytes(seq, "}");
  g.add_alt(root, seq);
  ASSERT_TRUE(g.finalize(root).is_ok());
  EXPECT_TRUE(g.uses_copy());
  const int32_t start = g.alt_starts(root)[0];
  EXPECT_EQ(g.min_rest(start), 1 + 2 + 1 + 1);
  EXPECT_EQ(g.min_rest(start + 1), 2 + 1 + 1);
  EXPECT_EQ(g.min_rest(start + 2), 1 + 1);
  EXPECT_EQ(g.flat()[0].kind, ElemKind::kRule);
  EXPECT_EQ(g.flat()[0].rule, root);
  EXPECT_EQ(g.flat()[1].kind, ElemKind::kEnd);
}

// Every code point of [lo, hi] is encoded by exactly one sequence; nothing else is.
void check_ranges(uint32_t lo, uint32_t hi) {
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
  utf8_range_sequences(lo, hi, &seqs);
  for (const auto& s : seqs) {
    ASSERT_GE(s.size(), 1u);
    ASSERT_LE(s.size(), 4u);
    for (auto [a, b] : s) ASSERT_LE(a, b);
  }
  auto matches = [&](const std::string& enc) {
    int n = 0;
    for (const auto& s : seqs) {
      if (s.size() != enc.size()) continue;
      bool ok = true;
      for (size_t i = 0; i < s.size() && ok; ++i) {
        const auto c = static_cast<uint8_t>(enc[i]);
        ok = c >= s[i].first && c <= s[i].second;
      }
      n += ok;
    }
    return n;
  };
  // Check code points in and around the range (stepping through the big planes sparsely).
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x20000 ? 1 : 97)) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string enc;
    append_utf8(cp, &enc);
    const int n = matches(enc);
    const bool inside = cp >= lo && cp <= hi;
    ASSERT_EQ(n, inside ? 1 : 0) << std::hex << "cp " << cp << " range " << lo << ".." << hi;
  }
  // The count of encoded code points equals the range size (no surrogates inside by contract).
  uint64_t total = 0;
  for (const auto& s : seqs) {
    uint64_t c = 1;
    for (auto [a, b] : s) c *= static_cast<uint64_t>(b - a + 1);
    total += c;
  }
  EXPECT_EQ(total, static_cast<uint64_t>(hi - lo + 1));
}

TEST(Grammar, Utf8RangeSequencesMatchTheEncoder) {
  check_ranges(0, 0x7F);
  check_ranges(0x41, 0x5A);
  check_ranges(0x70, 0x900);
  check_ranges(0x7FF, 0x800);
  check_ranges(0x4E00, 0x9FFF);
  check_ranges(0xE000, 0x10FFFF);
  check_ranges(0x10000, 0x10000);
  check_ranges(0x1F600, 0x1F64F);
}

TEST(Grammar, CharClassesAreSharedAndSkipSurrogates) {
  Grammar g;
  const int32_t a = g.char_class_rule({{'a', 'z'}, {'0', '9'}}, false);
  const int32_t b = g.char_class_rule({{'0', '9'}, {'a', 'z'}}, false);
  EXPECT_EQ(a, b);
  const int32_t neg = g.char_class_rule({{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true);
  EXPECT_NE(neg, a);
  // The negated class's sequences cover every code point but the excluded ones and the surrogates.
  std::set<uint32_t> covered_ascii;
  for (const GrammarSeq& seq : g.alts(neg)) {
    for (const GrammarElem& e : seq) EXPECT_EQ(e.kind, ElemKind::kBytes);
    if (seq.size() == 1) {
      for (uint32_t c = seq[0].lo; c <= seq[0].hi; ++c) covered_ascii.insert(c);
    }
    if (seq.size() == 3 && seq[0].lo == 0xED && seq[0].hi == 0xED) {
      EXPECT_LE(seq[1].hi, 0x9F);
    }
  }
  EXPECT_EQ(covered_ascii.size(), 128u - 32 - 2);
  EXPECT_FALSE(covered_ascii.count('"'));
  EXPECT_TRUE(covered_ascii.count(0x7F));
}

TEST(Grammar, ToTextPrintsRules) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const int32_t cls = g.char_class_rule({{'a', 'c'}}, false);
  GrammarSeq seq = lit("k\"");
  Grammar::append_rule(seq, cls);
  seq.push_back({ElemKind::kCopy, 1, 0, -1});
  g.add_alt(root, seq);
  g.add_alt(root, {});
  ASSERT_TRUE(g.finalize(root).is_ok());
  const std::string text = g.to_text();
  EXPECT_EQ(text.rfind("root ::= \"k\\\"\"", 0), 0u) << text;
  EXPECT_NE(text.find("%copy1"), std::string::npos) << text;
  EXPECT_NE(text.find("| \"\""), std::string::npos) << text;
  EXPECT_NE(text.find("::= [a-c]"), std::string::npos) << text;
}

}  // namespace
}  // namespace pocket
