// parse_gbnf: the syntax (literals and escapes, classes, '.', groups, every repetition form, comments, rules
// over several lines, copy spans: copy whole words, copy-any any substring) checked by what the grammar accepts; random grammars against PCRE2 on
// random strings; every error with its line:column; the size, nesting and repetition limits.
#include "constrain/gbnf.h"

#include <gtest/gtest.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <random>
#include <string>
#include <vector>

#include "constrain/grammar_matcher.h"

namespace pocket {
namespace {

Grammar parse_ok(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.has_value()) << g.status().to_string() << "\n" << text;
  return g.has_value() ? std::move(g).value() : Grammar();
}

// Does the grammar match all of `s` (with `source` for copy spans)?
bool accepts(const Grammar& g, std::string_view s, std::string_view source = {}) {
  auto m = GrammarMatcher::create(g, source);
  EXPECT_TRUE(m.has_value()) << m.status().to_string();
  return m.has_value() && m->accept_bytes(s) && m->can_end();
}

std::string error_of(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_FALSE(g.has_value()) << "accepted: " << text;
  return g.has_value() ? std::string() : g.status().message();
}

TEST(Gbnf, LiteralsSequencesAlternatives) {
  const Grammar g = parse_ok(R"(root ::= "ab" "c" | "x" | "")");
  EXPECT_TRUE(accepts(g, "abc"));
  EXPECT_TRUE(accepts(g, "x"));
  EXPECT_TRUE(accepts(g, ""));
  EXPECT_FALSE(accepts(g, "ab"));
  EXPECT_FALSE(accepts(g, "abcx"));
  EXPECT_TRUE(g.finalized());
}

TEST(Gbnf, Escapes) {
  const Grammar g = parse_ok(R"(root ::= "\n\t\r\"\\\x41\u00e9\U0001F600\/\'")");
  EXPECT_TRUE(accepts(g, "\n\t\r\"\\A\xC3\xA9\xF0\x9F\x98\x80/'"));
  // \xHH is the code point U+00HH (llama.cpp's meaning), written in UTF-8.
  const Grammar h = parse_ok(R"(root ::= "\xe9")");
  EXPECT_TRUE(accepts(h, "\xC3\xA9"));
  EXPECT_FALSE(accepts(h, "\xE9"));
  // UTF-8 written directly in literals and classes.
  const Grammar z = parse_ok("root ::= \"价格\" [一-龥]");
  EXPECT_TRUE(accepts(z, "价格中"));
  EXPECT_FALSE(accepts(z, "价格a"));
}

TEST(Gbnf, CharacterClasses) {
  const Grammar g = parse_ok(R"(root ::= [a-z0-9_]+ [^"\\] [-x] [x-] [\]\[] [\x00-\x1F])");
  EXPECT_TRUE(accepts(g, "ab_9" "q" "-" "x" "]" "\n"));
  EXPECT_TRUE(accepts(g, "a" "\xC3\xA9" "x" "-" "[" "\x01"));  // é is not '"' or '\'
  EXPECT_FALSE(accepts(g, "a" "\"" "x" "-" "[" "\x01"));
  EXPECT_FALSE(accepts(g, "a" "\\" "x" "-" "[" "\x01"));
  EXPECT_FALSE(accepts(g, "A" "q" "x" "-" "[" "\x01"));
  EXPECT_FALSE(accepts(g, "a" "q" "y" "-" "[" "\x01"));
  EXPECT_FALSE(accepts(g, "a" "q" "x" "-" "[" " "));
}

TEST(Gbnf, AnyCharacter) {
  const Grammar g = parse_ok("root ::= . .");
  EXPECT_TRUE(accepts(g, "ab"));
  EXPECT_TRUE(accepts(g, "\n\xE4\xB8\xAD"));           // newline, 中
  EXPECT_TRUE(accepts(g, "\xF0\x9F\x98\x80z"));        // an emoji is one character
  EXPECT_FALSE(accepts(g, "abc"));
  EXPECT_FALSE(accepts(g, "a\xFF"));                    // not UTF-8
  EXPECT_FALSE(accepts(g, "a\xED\xA0\x80"));            // a surrogate
}

TEST(Gbnf, Repetitions) {
  const Grammar g = parse_ok(R"(root ::= "a"{2,4} "b"{3} "c"{1,} "d"* "e"+ "f"? ("gh"){0,2})");
  auto s = [](int a, int b, int c, int d, int e, int f, int gh) {
    std::string out;
    out += std::string(a, 'a') + std::string(b, 'b') + std::string(c, 'c') + std::string(d, 'd') + std::string(e, 'e') +
           std::string(f, 'f');
    for (int i = 0; i < gh; ++i) out += "gh";
    return out;
  };
  for (int a = 0; a <= 5; ++a) {
    for (int b = 2; b <= 4; ++b) {
      for (int gh = 0; gh <= 3; ++gh) {
        const bool want = a >= 2 && a <= 4 && b == 3 && gh <= 2;
        EXPECT_EQ(accepts(g, s(a, b, 1, 0, 1, 0, gh)), want) << a << " " << b << " " << gh;
      }
    }
  }
  EXPECT_TRUE(accepts(g, s(2, 3, 5, 7, 2, 1, 1)));
  EXPECT_FALSE(accepts(g, s(2, 3, 0, 0, 1, 0, 0)));  // c{1,}
  EXPECT_FALSE(accepts(g, s(2, 3, 1, 0, 0, 0, 0)));  // e+
  EXPECT_FALSE(accepts(g, s(2, 3, 1, 0, 1, 2, 0)));  // f?
  // A repeated multi-character literal repeats as a whole; {0} removes the item; spaces inside braces.
  const Grammar h = parse_ok(R"(root ::= "ab"{ 2 , 3 } "x"{0} "y")");
  EXPECT_TRUE(accepts(h, "ababy"));
  EXPECT_TRUE(accepts(h, "abababy"));
  EXPECT_FALSE(accepts(h, "aby"));
  EXPECT_FALSE(accepts(h, "ababxy"));
}

TEST(Gbnf, RulesCommentsAndLines) {
  const Grammar g = parse_ok(R"(# a comment line
root ::= greeting ", " name   # rules may be used before they are defined
  ( "!"
  | "?" )                      # a group over lines
  | "bye"
greeting ::= "hello"
  | "hi"
name ::=
  [A-Z] [a-z]*
)");
  EXPECT_TRUE(accepts(g, "hello, Ann!"));
  EXPECT_TRUE(accepts(g, "hi, Bo?"));
  EXPECT_TRUE(accepts(g, "bye"));
  EXPECT_FALSE(accepts(g, "hi, bo?"));
  EXPECT_FALSE(accepts(g, "hi, Bo"));
  // Recursion through rules (right and nested).
  const Grammar p = parse_ok("root ::= \"(\" root \")\" root | \"\"");
  EXPECT_TRUE(accepts(p, "(()())()"));
  EXPECT_FALSE(accepts(p, "(()"));
  // Rule names with digits, '-' and '_'; CRLF line ends.
  const Grammar n = parse_ok("root ::= a-1 b_2\r\na-1 ::= \"x\"\r\nb_2 ::= \"y\"\r\n");
  EXPECT_TRUE(accepts(n, "xy"));
}

TEST(Gbnf, CopySpans) {
  const std::string source = "Send 2 \"Acme\" boxes\nto Zoë";
  const Grammar g = parse_ok(R"(root ::= "{\"item\":\"" copy+ "\",\"note\":\"" copy "\"}")");
  EXPECT_TRUE(g.uses_copy());
  EXPECT_TRUE(accepts(g, R"({"item":"Acme","note":""})", source));
  EXPECT_TRUE(accepts(g, R"({"item":"2 \"Acme\" boxes\nto Zoë","note":"Send"})", source));
  EXPECT_FALSE(accepts(g, R"({"item":"","note":""})", source));        // copy+ needs a character
  EXPECT_FALSE(accepts(g, R"({"item":"Acne","note":""})", source));    // not in the source
  EXPECT_FALSE(accepts(g, R"({"item":"2 "Acme","note":""})", source)); // a quote must be escaped
}

TEST(Gbnf, CopyIsWholeWordsAndCopyAnyAnySubstring) {
  const std::string source = "size: EU 36, free returns within 30 days, 墨绿色";
  const Grammar words = parse_ok(R"(root ::= "\"" copy+ "\"")");
  const Grammar any = parse_ok(R"(root ::= "\"" copy-any+ "\"")");
  for (const char* ok : {"\"EU 36\"", "\"within\"", "\"30 days, 墨\"", "\"绿\"", "\", \""}) {
    EXPECT_TRUE(accepts(words, ok, source)) << ok;
    EXPECT_TRUE(accepts(any, ok, source)) << ok;
  }
  for (const char* cut : {"\"U 36\"", "\"withi\"", "\"ize\"", "\"EU 3\""}) {
    EXPECT_FALSE(accepts(words, cut, source)) << cut;
    EXPECT_TRUE(accepts(any, cut, source)) << cut;
  }
  EXPECT_FALSE(accepts(any, "\"\"", source));  // copy-any+ needs a character
  // copy-any without '+' may be empty; both in one grammar; a longer name is an ordinary rule.
  const Grammar both = parse_ok("root ::= copy-any \"|\" copy copy-anything\ncopy-anything ::= \"!\"");
  EXPECT_TRUE(accepts(both, "|!", source));
  EXPECT_TRUE(accepts(both, "ree|free!", source));
  EXPECT_FALSE(accepts(both, "free|ree!", source));
  EXPECT_EQ(error_of("root ::= copy-any?"),
            "[gbnf] 1:18: copy-any takes no repetition other than '+' (copy-any+: at least one character)");
  EXPECT_EQ(error_of("root ::= \"a\"\ncopy-any ::= \"a\""),
            "[gbnf] 2:1: 'copy-any' is reserved (the copy-from-source terminal); rename the rule");
}

TEST(Gbnf, JsonGrammar) {
  const Grammar g = parse_ok(R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]{0,20}
)");
  EXPECT_TRUE(accepts(g, R"({"a": [1, -2.5e3, true, null, {"b": "c\u00e9\n"}], "d" : {}})"));
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_FALSE(accepts(g, R"({"a": 01})"));
  EXPECT_FALSE(accepts(g, R"({"a": [1,]})"));
  EXPECT_FALSE(accepts(g, R"([1])"));
}

// ---- Random grammars against PCRE2 ----

class Pcre {
 public:
  explicit Pcre(const std::string& pattern) {
    int err = 0;
    PCRE2_SIZE off = 0;
    const std::string full = "(?:" + pattern + ")\\z";
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(full.c_str()), full.size(),
                          PCRE2_ANCHORED | PCRE2_UTF | PCRE2_DOTALL, &err, &off, nullptr);
    EXPECT_NE(code_, nullptr) << full;
    data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~Pcre() {
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
  }
  bool matches(const std::string& s) const {
    return pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, data_, nullptr) >= 0;
  }

 private:
  pcre2_code* code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
};

// A random expression over {a, b, é, 中} written both as GBNF and as a PCRE2 pattern.
struct Expr {
  std::string gbnf, regex;
  bool nullable = false;  // matches the empty string
  bool loops = false;     // holds an unbounded repetition of a nullable item (refused by the parser)
};
const std::vector<std::string> kAtoms = {"a", "b", "é", "中"};

Expr random_expr(std::mt19937& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int kind = depth <= 0 ? pick(3) : pick(6);
  Expr e;
  if (kind == 0) {  // a literal of 1-2 characters
    const std::string s = kAtoms[pick(4)] + (pick(2) ? kAtoms[pick(4)] : "");
    e = {"\"" + s + "\"", "(?:" + s + ")", false, false};
  } else if (kind == 1) {  // a class
    static const std::vector<std::pair<std::string, std::string>> kClasses = {
        {"[ab]", "[ab]"}, {"[^a]", "[^a]"}, {"[a-b]", "[a-b]"}, {"[é中]", "[é中]"}, {"[^ab中]", "[^ab中]"}};
    const auto& c = kClasses[static_cast<size_t>(pick(static_cast<int>(kClasses.size())))];
    e = {c.first, c.second, false, false};
  } else if (kind == 2) {
    e = {".", ".", false, false};
  } else if (kind == 3) {  // a sequence
    const Expr x = random_expr(rng, depth - 1), y = random_expr(rng, depth - 1);
    e = {"(" + x.gbnf + " " + y.gbnf + ")", "(?:" + x.regex + y.regex + ")", x.nullable && y.nullable,
         x.loops || y.loops};
  } else if (kind == 4) {  // alternatives
    const Expr x = random_expr(rng, depth - 1), y = random_expr(rng, depth - 1);
    e = {"(" + x.gbnf + " | " + y.gbnf + ")", "(?:" + x.regex + "|" + y.regex + ")", x.nullable || y.nullable,
         x.loops || y.loops};
  } else {  // a repetition of a non-empty item
    const Expr x = random_expr(rng, depth - 1);
    static const std::vector<std::string> kReps = {"*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}"};
    const std::string r = kReps[static_cast<size_t>(pick(static_cast<int>(kReps.size())))];
    const bool unbounded = r == "*" || r == "+" || r == "{1,}";
    const bool can_skip = r == "*" || r == "?" || r == "{0,2}";
    e = {"(" + x.gbnf + ")" + r, "(?:" + x.regex + ")" + r, x.nullable || can_skip, x.loops || (unbounded && x.nullable)};
  }
  return e;
}

TEST(Gbnf, RandomGrammarsAgreeWithPcre2) {
  std::mt19937 rng(1234);
  const std::vector<std::string> alphabet = {"a", "b", "é", "中", "c"};
  int accepted = 0, total = 0, refused = 0;
  for (int t = 0; t < 200; ++t) {
    const Expr e = random_expr(rng, 3);
    if (e.loops) {  // (x?)* and the like: refused with the place named
      EXPECT_NE(error_of("root ::= " + e.gbnf).find("the repeated item can match the empty string"), std::string::npos);
      ++refused;
      continue;
    }
    const Grammar g = parse_ok("root ::= " + e.gbnf + "\n");
    const Pcre re(e.regex);
    auto m = GrammarMatcher::create(g);
    ASSERT_TRUE(m.has_value());
    for (int k = 0; k < 60; ++k) {
      std::string s;
      const int len = static_cast<int>(rng() % 7);
      for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
      GrammarMatcher mm = *m;
      const bool got = mm.accept_bytes(s) && mm.can_end();
      EXPECT_EQ(got, re.matches(s)) << "grammar " << e.gbnf << "\nregex " << e.regex << "\nstring '" << s << "'";
      accepted += got;
      ++total;
    }
  }
  EXPECT_GT(accepted, total / 50);  // the strings do exercise matches, not only rejections
  EXPECT_GT(refused, 0);
}

// ---- Errors ----

TEST(Gbnf, ErrorsNamePositionAndExpectation) {
  EXPECT_EQ(error_of("root ::= \"a\"\nx ::= [a-z\n"), "[gbnf] 2:11: expected ']' to close the character class");
  EXPECT_EQ(error_of("root ::= \"abc"), "[gbnf] 1:14: expected '\"' to close the string opened at 1:10");
  EXPECT_EQ(error_of("root ::= (\"a\" | \"b\""), "[gbnf] 1:20: expected ')' to close the group opened at 1:10, found the end of the text");
  EXPECT_EQ(error_of("root = \"a\""), "[gbnf] 1:6: expected '::=' after the rule name 'root'");
  EXPECT_EQ(error_of("root ::= item\n"), "[gbnf] 1:10: rule 'item' is used but never defined");
  EXPECT_EQ(error_of("start ::= \"a\""), "[gbnf] no rule named 'root' (the start rule)");
  EXPECT_EQ(error_of(""), "[gbnf] no rule named 'root' (the start rule)");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "[gbnf] 2:1: rule 'root' is defined twice (first at 1:1)");
  EXPECT_EQ(error_of("root ::= \"\\q\""), "[gbnf] 1:11: unknown escape '\\q' (known: \\n \\t \\r \\f \\b \\0 \\\\ \\\" \\' \\/ \\[ \\] \\- \\^ \\xHH \\uHHHH \\UHHHHHHHH)");
  EXPECT_EQ(error_of("root ::= \"\\x4\""), "[gbnf] 1:14: expected 2 hex digits after '\\x', found '\"'");
  EXPECT_EQ(error_of("root ::= \"\\uD800\""), "[gbnf] 1:11: escape of a surrogate (U+D800..U+DFFF are not characters)");
  EXPECT_EQ(error_of("root ::= \"\\U00110000\""), "[gbnf] 1:11: escape beyond U+10FFFF (the last Unicode code point)");
  EXPECT_EQ(error_of("root ::= [z-a]"), "[gbnf] 1:11: character range with its end before its start");
  EXPECT_EQ(error_of("root ::= []"), "[gbnf] 1:10: empty character class []");
  EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "[gbnf] 1:13: repetition {m,n} with n < m");
  EXPECT_EQ(error_of("root ::= \"a\"{2"), "[gbnf] 1:15: expected '}' to close the repetition, found the end of the text");
  EXPECT_EQ(error_of("root ::= \"a\"**"), "[gbnf] 1:14: a repetition cannot follow another; group the item with ( ... ) first");
  EXPECT_EQ(error_of("root ::= *"), "[gbnf] 1:10: '*' must follow an item (a repetition applies to the item before it)");
  EXPECT_EQ(error_of("root ::= \"a\" )"), "[gbnf] 1:14: ')' without a matching '('");
  EXPECT_EQ(error_of("root ::= \"a\" ; b"), "[gbnf] 1:14: expected an item (a \"literal\", a [class], a rule name, '(', '.' or copy), found ';'");
  EXPECT_EQ(error_of("root ::= copy*"), "[gbnf] 1:14: copy takes no repetition other than '+' (copy+: at least one character)");
  EXPECT_EQ(error_of("root ::= copy\ncopy ::= \"a\""), "[gbnf] 2:1: 'copy' is reserved (the copy-from-source terminal); rename the rule");
  // Columns count characters, not bytes.
  EXPECT_EQ(error_of("root ::= \"价格\" ?? "), "[gbnf] 1:16: a repetition cannot follow another; group the item with ( ... ) first");
  EXPECT_EQ(error_of("root ::= \"\xFF\""), "[gbnf] 1:11: invalid UTF-8 (byte 0xFF)");
}

TEST(Gbnf, LimitsAreRefusedClearly) {
  EXPECT_EQ(error_of("root ::= \"a\"{100000}"), "[gbnf] 1:14: repetition count 100000 is more than the 10000 allowed");
  EXPECT_EQ(error_of("root ::= \"a\"{99999999999999999999999}"),
            "[gbnf] 1:14: repetition count 99999999999999999999999 is more than the 10000 allowed");
  // Many large repetitions: the total is bounded before anything is built.
  std::string many = "root ::=";
  for (int i = 0; i < 200; ++i) many += " \"a\"{10000}";
  EXPECT_NE(error_of(many).find("the repetitions build more than 1048576 elements"), std::string::npos);
  // Nesting.
  const std::string deep = "root ::= " + std::string(100, '(') + "\"a\"" + std::string(100, ')');
  EXPECT_EQ(error_of(deep), "[gbnf] 1:74: groups nested more than 64 deep");
  const std::string ok_deep = "root ::= " + std::string(60, '(') + "\"a\"" + std::string(60, ')');
  EXPECT_TRUE(accepts(parse_ok(ok_deep), "a"));
  // Size.
  const std::string big = "root ::= \"" + std::string(GbnfLimits::kMaxTextBytes, 'a') + "\"";
  EXPECT_EQ(error_of(big), "[gbnf] the grammar text is 1048587 bytes, more than the 1048576 allowed");
}

TEST(Gbnf, FinalizeErrorsPassThrough) {
  // Left recursion is refused by Grammar::finalize, and the error comes back as is.
  const std::string e = error_of("root ::= root \"a\" | \"b\"");
  EXPECT_NE(e.find("[grammar]"), std::string::npos) << e;
}

TEST(Gbnf, MutatedGrammarsNeverCrash) {
  std::mt19937 rng(7);
  const std::string pieces[] = {"root", " ::= ", "\"", "[", "]", "(", ")", "|", "*", "+", "?", "{2,3}", "\\", "x",
                                "copy", "\n", "#", "-", "^", ".", "\xC3", "\xA9", "a ::= ", "a", "{", "}", ","};
  const std::string base = "root ::= a \"x\" | [a-z]+ (copy | \"\\n\")\na ::= \"y\"* [^\\]]{1,3}\n";
  EXPECT_TRUE(parse_gbnf(base).has_value());
  int ok = 0;
  for (int t = 0; t < 3000; ++t) {
    std::string text = base;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
      const size_t at = rng() % (text.size() + 1);
      if (rng() % 2) {
        text.insert(at, pieces[rng() % std::size(pieces)]);
      } else {
        text.erase(at, 1 + rng() % 4);
      }
    }
    auto g = parse_gbnf(text);
    if (g.has_value()) {
      ++ok;
      EXPECT_TRUE(g->finalized());
    } else {
      EXPECT_EQ(g.status().message().rfind("[g", 0), 0u) << g.status().message();
    }
  }
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace pocket
