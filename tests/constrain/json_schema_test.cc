// compile_json_schema: what the grammar accepts, checked against independent oracles — integer ranges
// against integer comparison (exhaustively near the bounds), number bounds against strtod, every subset of
// optional properties against the expected compact text, string lengths against code point counts — and
// every error (malformed JSON, unsupported and unknown keywords, wrong keyword types, impossible schemas).
#include "constrain/json_schema.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "constrain/grammar_matcher.h"
#include "constrain/json_validate.h"

namespace pocket {
namespace {

using nlohmann::json;

class Compiled {
 public:
  explicit Compiled(const std::string& schema, JsonSchemaOptions opts = {}, std::string source = {})
      : source_(std::move(source)) {
    auto g = compile_json_schema(schema, opts);
    EXPECT_TRUE(g.has_value()) << g.status().to_string() << "\n" << schema;
    if (!g.has_value()) return;
    auto m = GrammarMatcher::create(std::move(g).value(), source_);
    EXPECT_TRUE(m.has_value()) << m.status().to_string();
    if (m.has_value()) matcher_.emplace(std::move(m).value());
  }
  bool accepts(std::string_view text) const {
    if (!matcher_) return false;
    GrammarMatcher m = *matcher_;
    return m.accept_bytes(text) && m.can_end();
  }

 private:
  std::string source_;
  std::optional<GrammarMatcher> matcher_;
};

std::string error_of(const std::string& schema, JsonSchemaOptions opts = {}) {
  auto g = compile_json_schema(schema, opts);
  EXPECT_FALSE(g.has_value()) << "compiled: " << schema;
  return g.has_value() ? std::string() : g.status().message();
}

TEST(JsonSchema, ExtractionSchema) {
  const std::string source = "Apple AirPods Pro 2, $329 at Best Buy — colour: white";
  const std::string schema = R"({"type":"object","properties":{
      "name":{"type":"string","x-pocket-copy":true},
      "brand":{"type":"string","x-pocket-copy":true},
      "price":{"type":"number"},
      "colour":{"type":"string","enum":["white","black","blue"]}},
    "required":["name"]})";
  const Compiled c(schema, {}, source);
  EXPECT_TRUE(c.accepts(R"({"name":"AirPods Pro 2"})"));
  EXPECT_TRUE(c.accepts(R"({"name":"AirPods Pro 2","brand":"Apple","price":329,"colour":"white"})"));
  EXPECT_TRUE(c.accepts(R"({"name":"Apple AirPods Pro 2","price":59.99})"));
  EXPECT_TRUE(c.accepts(R"({"name":"Best Buy — colour","colour":"blue"})"));
  EXPECT_FALSE(c.accepts(R"({"brand":"Apple"})"));                         // name is required
  EXPECT_FALSE(c.accepts(R"({"price":329,"name":"AirPods"})"));            // schema order
  EXPECT_FALSE(c.accepts(R"({"name": "AirPods"})"));                       // compact: no spaces
  EXPECT_FALSE(c.accepts(R"({"name":"AirPods","size":"L"})"));             // no other property
  EXPECT_FALSE(c.accepts(R"({"name":"Samsung"})"));                        // not a span of the source
  EXPECT_FALSE(c.accepts(R"({"name":""})"));                               // a span has a character
  EXPECT_FALSE(c.accepts(R"({"name":"AirPods","price":0329})"));           // no leading zeros
  EXPECT_FALSE(c.accepts(R"({"name":"AirPods","price":329.})"));
  EXPECT_FALSE(c.accepts(R"({"name":"AirPods","colour":"red"})"));
  EXPECT_FALSE(c.accepts(R"({"name":"AirPods",})"));
}

TEST(JsonSchema, CopyModes) {
  const std::string source = "Zephyr runner, size: EU 36 — free returns within 30 days";
  auto schema = [](const std::string& copy) {
    return R"({"type":"object","properties":{"v":{"type":"string","x-pocket-copy":)" + copy + "}}}";
  };
  const Compiled words(schema("true"), {}, source), words2(schema("\"words\""), {}, source);
  const Compiled any(schema("\"substring\""), {}, source);
  const Compiled grounded(R"({"type":"object","properties":{"v":{"type":"string"}}})", {.ground_strings = true}, source);
  for (const char* ok : {"EU 36", "Zephyr", "within 30", " — ", "runner,"}) {
    const std::string text = std::string(R"({"v":")") + ok + "\"}";
    EXPECT_TRUE(words.accepts(text)) << ok;
    EXPECT_TRUE(words2.accepts(text)) << ok;
    EXPECT_TRUE(grounded.accepts(text)) << ok;
    EXPECT_TRUE(any.accepts(text)) << ok;
  }
  for (const char* cut : {"U 36", "withi", "ephyr", "3"}) {
    const std::string text = std::string(R"({"v":")") + cut + "\"}";
    EXPECT_FALSE(words.accepts(text)) << cut;
    EXPECT_FALSE(words2.accepts(text)) << cut;
    EXPECT_FALSE(grounded.accepts(text)) << cut;
    EXPECT_TRUE(any.accepts(text)) << cut;  // "substring": the old behaviour
  }
  EXPECT_EQ(error_of(schema("\"word\"")),
            "[json-schema] 'x-pocket-copy' must be true or \"words\" (whole words of the source), \"substring\" (any "
            "span) or false, not \"word\" at /properties/v");
  EXPECT_EQ(error_of(schema("1")),
            "[json-schema] 'x-pocket-copy' must be true or \"words\" (whole words of the source), \"substring\" (any "
            "span) or false, not 1 at /properties/v");
  EXPECT_EQ(error_of(R"({"type":"integer","x-pocket-copy":"substring"})"),
            "[json-schema] 'x-pocket-copy' applies to strings only at the root");
}

TEST(JsonSchema, EveryOptionalSubsetHasItsCommas) {
  // Five properties, the third required: every subset containing it, in order, and nothing else.
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
      "c":{"type":"integer"},"d":{"type":"integer"},"e":{"type":"integer"}},"required":["c"]})";
  const Compiled c(schema);
  const char* names = "abcde";
  for (int mask = 0; mask < 32; ++mask) {
    std::string text = "{";
    for (int i = 0; i < 5; ++i) {
      if ((mask >> i) & 1) text += std::string(text.size() > 1 ? "," : "") + "\"" + names[i] + "\":" + std::to_string(i);
    }
    text += "}";
    EXPECT_EQ(c.accepts(text), ((mask >> 2) & 1) == 1) << text;
    EXPECT_FALSE(c.accepts(text.substr(0, text.size() - 1) + ",}")) << text;
  }
  // None required: the empty object too; all required: exactly one text.
  const Compiled none(R"({"type":"object","properties":{"a":{"type":"null"},"b":{"type":"null"}}})");
  for (const char* t : {"{}", R"({"a":null})", R"({"b":null})", R"({"a":null,"b":null})"}) EXPECT_TRUE(none.accepts(t)) << t;
  for (const char* t : {"{,}", R"({,"b":null})", R"({"b":null,"a":null})", R"({"a":null,})"}) EXPECT_FALSE(none.accepts(t)) << t;
  const Compiled all(R"({"type":"object","properties":{"a":{"type":"null"},"b":{"type":"null"}},"required":["b","a"]})");
  EXPECT_TRUE(all.accepts(R"({"a":null,"b":null})"));
  EXPECT_FALSE(all.accepts(R"({"a":null})"));
  EXPECT_FALSE(all.accepts("{}"));
}

TEST(JsonSchema, IntegerRangesAreExact) {
  std::mt19937_64 rng(42);
  struct Case {
    int64_t lo, hi;
  };
  std::vector<Case> cases = {{0, 0},     {0, 9},       {0, 10},   {1, 100},     {7, 93},        {-5, 5},
                             {-100, -7}, {-999, 1000}, {19, 21},  {99, 101},    {123, 4567},    {-4567, -123},
                             {0, 1000000}, {350, 359},  {-1, 0},   {10, 99},     {1000, 1000}};
  for (int i = 0; i < 40; ++i) {
    const int64_t a = static_cast<int64_t>(rng() % 200000) - 100000;
    const int64_t b = a + static_cast<int64_t>(rng() % (i < 20 ? 300 : 100000));
    cases.push_back({a, b});
  }
  for (const auto& [lo, hi] : cases) {
    const std::string schema = R"({"type":"integer","minimum":)" + std::to_string(lo) + R"(,"maximum":)" +
                               std::to_string(hi) + "}";
    const Compiled c(schema);
    // Every value near both bounds, and random values across and beyond the range.
    std::vector<int64_t> probes;
    for (int64_t d = -60; d <= 60; ++d) probes.push_back(lo + d), probes.push_back(hi + d);
    for (int k = 0; k < 100; ++k) probes.push_back(lo - 1000 + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 2001)));
    for (int64_t x : probes) {
      EXPECT_EQ(c.accepts(std::to_string(x)), x >= lo && x <= hi) << schema << " x=" << x;
    }
    EXPECT_FALSE(c.accepts("0" + std::to_string(std::abs(lo))));  // leading zero
    EXPECT_FALSE(c.accepts("-0"));
    EXPECT_FALSE(c.accepts(std::to_string(lo) + ".0"));
  }
}

TEST(JsonSchema, IntegerBoundForms) {
  // exclusive bounds (draft 6 numbers and draft 4 booleans), fractional bounds, one-sided bounds.
  struct Case {
    std::string bounds;
    int64_t lo, hi;  // the integers allowed, within the probed window
  };
  const std::vector<Case> cases = {
      {R"("exclusiveMinimum":3,"exclusiveMaximum":9)", 4, 8},
      {R"("minimum":3,"exclusiveMinimum":true,"maximum":9,"exclusiveMaximum":true)", 4, 8},
      {R"("minimum":2.5,"maximum":7.5)", 3, 7},
      {R"("exclusiveMinimum":2.5,"exclusiveMaximum":7.0)", 3, 6},
      {R"("minimum":3,"exclusiveMinimum":5)", 6, 1000},
      {R"("maximum":-3)", -1000, -3},
      {R"("minimum":-20)", -20, 1000},
  };
  for (const auto& c : cases) {
    const std::string schema = R"({"type":"integer",)" + c.bounds + "}";
    const Compiled g(schema);
    for (int64_t x = -1000; x <= 1000; ++x) {
      EXPECT_EQ(g.accepts(std::to_string(x)), x >= c.lo && x <= c.hi) << schema << " x=" << x;
    }
  }
  // Unbounded: up to 15 digits, either sign.
  const Compiled free(R"({"type":"integer"})");
  EXPECT_TRUE(free.accepts("0"));
  EXPECT_TRUE(free.accepts("-12"));
  EXPECT_TRUE(free.accepts("999999999999999"));
  EXPECT_FALSE(free.accepts("1000000000000000"));
  EXPECT_FALSE(free.accepts("1.5"));
  EXPECT_FALSE(free.accepts("1e3"));
  // A bound beyond 15 digits on one side: the other side follows it.
  const Compiled big(R"({"type":"integer","minimum":100000000000000000})");
  EXPECT_TRUE(big.accepts("100000000000000000"));
  EXPECT_TRUE(big.accepts("999999999999999999"));
  EXPECT_FALSE(big.accepts("99999999999999999"));
}

int digit_count(const std::string& s) {
  int n = 0;
  for (char c : s) n += c >= '0' && c <= '9';
  return n;
}

TEST(JsonSchema, NumberBoundsAreExact) {
  const std::vector<std::string> bounds = {
      R"("minimum":0,"maximum":5)",        R"("exclusiveMinimum":0,"exclusiveMaximum":5)",
      R"("minimum":-3,"maximum":-1)",      R"("exclusiveMinimum":-3,"maximum":2)",
      R"("minimum":-2,"exclusiveMaximum":0)", R"("minimum":1)", R"("exclusiveMaximum":-1)",
      R"("minimum":7,"maximum":7)",        R"("exclusiveMinimum":0)", R"("maximum":0)"};
  std::vector<std::string> probes = {"0", "-0", "0.0", "-0.0", "0.5", "-0.5", "0.000001", "-0.000001", "1e2", ".5",
                                     "5.", "+1", "01", "1.50", "7.000", "7.0001"};
  for (int i = -8; i <= 8; ++i) {
    probes.push_back(std::to_string(i));
    for (const char* f : {".0", ".00", ".01", ".5", ".99", ".999999999999999", ".10"}) probes.push_back(std::to_string(i) + f);
    if (i == 0) {
      for (const char* f : {".01", ".5", ".99"}) probes.push_back(std::string("-0") + f);
    }
  }
  for (const auto& b : bounds) {
    const std::string schema = R"({"type":"number",)" + b + "}";
    const json s = json::parse(schema);
    const Compiled c(schema);
    for (const auto& p : probes) {
      // The independent verdict: the text is a JSON number (nlohmann) within the bounds (the validator).
      const json v = json::parse(p, nullptr, false);
      // The grammar writes no exponent, never "-0" under bounds (it is 0, written "0"), and at most 15 digits.
      const bool json_number = !v.is_discarded() && v.is_number() && p != "-0" && p != "-0.0" &&
                               p.find('e') == std::string::npos && digit_count(p) <= 15;
      const bool want = json_number && validate_json(s, v).empty();
      EXPECT_EQ(c.accepts(p), want) << schema << " text " << p;
    }
  }
  const Compiled free(R"({"type":"number"})");
  for (const char* t : {"329", "59.99", "-0.5", "0", "123456789012345.123456789012345"}) EXPECT_TRUE(free.accepts(t)) << t;
  for (const char* t : {"059", "1.", ".5", "1e5", "+1", "1.2.3", "1234567890123456"}) EXPECT_FALSE(free.accepts(t)) << t;
}

TEST(JsonSchema, DecimalNumberBoundsAreExact) {
  // Bounds with fractions, compared with random decimals near them by the validator (double comparison, which
  // agrees with the decimal one for numbers of at most 15 digits).
  const std::vector<std::string> bounds = {
      R"("minimum":0.5,"maximum":4.25)",       R"("exclusiveMinimum":0.01,"exclusiveMaximum":0.1)",
      R"("minimum":-1.75,"exclusiveMaximum":-0.5)", R"("exclusiveMinimum":-2.5,"maximum":2.5)",
      R"("minimum":0.1)",                      R"("exclusiveMaximum":-0.001)",
      R"("minimum":1e-05,"maximum":0.0001)",   R"("minimum":0.30000000000000004)",
      R"("minimum":2.125,"maximum":2.125)",    R"("minimum":99.99,"maximum":100)",
      R"("exclusiveMinimum":0,"maximum":1e-3)", R"("minimum":-123456.789,"maximum":123456.789)"};
  const Compiled price(R"({"type":"number","minimum":0.5,"exclusiveMaximum":4.25})");
  for (const char* t : {"0.5", "0.50", "0.5000001", "1", "4.2", "4.249999", "4.24999999999999"}) EXPECT_TRUE(price.accepts(t)) << t;
  for (const char* t : {"0.4999", "0", "4.25", "4.250", "4.2500001", "5", "-1", "4.249999999999999"}) EXPECT_FALSE(price.accepts(t)) << t;
  int accepted = 0, total = 0;
  std::mt19937_64 rng(9);
  for (const auto& b : bounds) {
    const std::string schema = R"({"type":"number",)" + b + "}";
    const json s = json::parse(schema);
    const Compiled c(schema);
    std::vector<std::string> probes = {"0", "0.1", "0.3", "0.30000000000000004", "0.3000000000001", "2.125", "2.1250",
                                       "100", "100.0", "99.99", "99.989", "0.0001", "0.00001", "0.000011", "-0.5",
                                       "-0.50", "-0.4999", "-1.75", "-1.7500001", "0.001", "0.0010", "0.0009999"};
    // Bound values and their neighbours at several decimal places.
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      const double v = s[k].get<double>();
      for (int places = 0; places <= 6; ++places) {
        for (int delta : {-1, 0, 1}) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%.*f", places, v + delta * std::pow(10.0, -places));
          probes.push_back(buf);
        }
      }
    }
    for (int k = 0; k < 300; ++k) {
      char buf[64];
      const double x = (static_cast<double>(rng() % 2000000) - 1000000.0) / std::pow(10.0, static_cast<double>(rng() % 7));
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(rng() % 7), x);
      probes.push_back(buf);
    }
    for (const auto& p : probes) {
      const json v = json::parse(p, nullptr, false);
      if (v.is_discarded() || p == "-0" || p.rfind("-0.", 0) == 0 && v.get<double>() == 0) continue;
      const bool want = digit_count(p) <= 15 && validate_json(s, v).empty();
      EXPECT_EQ(c.accepts(p), want) << schema << " text " << p;
      accepted += want;
      ++total;
    }
  }
  EXPECT_GT(accepted, total / 10) << accepted << " of " << total;
  EXPECT_LT(accepted, total * 9 / 10) << accepted << " of " << total;
}

TEST(JsonSchema, StringLengthsCountCharacters) {
  const Compiled c(R"({"type":"string","minLength":2,"maxLength":3})");
  struct Probe {
    std::string text;
    int chars;  // -1: not a valid JSON string
  };
  const std::vector<Probe> probes = {
      {R"("a")", 1},  {R"("ab")", 2}, {R"("abc")", 3}, {R"("abcd")", 4},
      {"\"中文\"", 2}, {"\"é中😀\"", 3}, {"\"😀😀😀😀\"", 4},
      {R"("\n\t")", 2}, {R"("\u00e9\"")", 2}, {R"("\ud83d\ude00x")", 2}, {R"("\\\/\b")", 3},
      {R"("\ud83dx")", -1}, {R"("\ude00xy")", -1}, {R"("\x")", -1}, {"\"a\nb\"", -1}, {"\"a\x01\"", -1},
      {"\"ab\xFF\"", -1}, {R"("ab)", -1}};
  for (const auto& p : probes) {
    // The independent count: nlohmann decodes the text; characters are its code points.
    const json v = json::parse(p.text, nullptr, false);
    ASSERT_EQ(!v.is_discarded(), p.chars >= 0) << p.text;
    EXPECT_EQ(c.accepts(p.text), p.chars >= 2 && p.chars <= 3) << p.text;
  }
  const Compiled empty(R"({"type":"string","maxLength":0})");
  EXPECT_TRUE(empty.accepts(R"("")"));
  EXPECT_FALSE(empty.accepts(R"("a")"));
}

TEST(JsonSchema, EnumConstTypesArraysAnyOf) {
  const Compiled e(R"({"enum":["red","Zoë",3,2.5,true,null,{"a":1},[1,"x"]]})");
  for (const char* t : {R"("red")", "\"Zoë\"", "3", "2.5", "true", "null", R"({"a":1})", R"([1,"x"])"}) EXPECT_TRUE(e.accepts(t)) << t;
  for (const char* t : {R"("blue")", "3.0", "false", R"({"a":2})"}) EXPECT_FALSE(e.accepts(t)) << t;
  // Values that do not fit the type or bounds are left out.
  const Compiled typed(R"({"type":"integer","enum":[1,2.0,2.5,"3",40],"maximum":10})");
  EXPECT_TRUE(typed.accepts("1"));
  EXPECT_TRUE(typed.accepts("2.0"));
  EXPECT_FALSE(typed.accepts("2.5"));
  EXPECT_FALSE(typed.accepts(R"("3")"));
  EXPECT_FALSE(typed.accepts("40"));
  const Compiled k(R"({"const":"fixed"})");
  EXPECT_TRUE(k.accepts(R"("fixed")"));
  EXPECT_FALSE(k.accepts(R"("other")"));

  const Compiled t(R"({"type":["integer","null","boolean"]})");
  for (const char* s : {"12", "null", "true", "false"}) EXPECT_TRUE(t.accepts(s)) << s;
  for (const char* s : {"1.5", R"("a")", "{}"}) EXPECT_FALSE(t.accepts(s)) << s;

  const Compiled a(R"({"type":"array","items":{"type":"integer","minimum":0,"maximum":9},"minItems":1,"maxItems":3})");
  for (const char* s : {"[0]", "[1,2]", "[9,8,7]"}) EXPECT_TRUE(a.accepts(s)) << s;
  for (const char* s : {"[]", "[1,2,3,4]", "[10]", "[1,]", "[,1]", "[1 ,2]"}) EXPECT_FALSE(a.accepts(s)) << s;
  const Compiled a0(R"({"type":"array","items":{"type":"boolean"},"maxItems":2})");
  for (const char* s : {"[]", "[true]", "[true,false]"}) EXPECT_TRUE(a0.accepts(s)) << s;
  EXPECT_FALSE(a0.accepts("[true,true,true]"));

  const Compiled any(R"({"anyOf":[{"type":"string","maxLength":1},{"type":"integer","minimum":5}],"description":"x"})");
  for (const char* s : {R"("")", R"("a")", "5", "700"}) EXPECT_TRUE(any.accepts(s)) << s;
  for (const char* s : {R"("ab")", "4", "null"}) EXPECT_FALSE(any.accepts(s)) << s;

  const Compiled nested(R"({"type":"object","properties":{"items":{"type":"array","items":{"type":"object",
      "properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku","qty"]}}},
      "required":["items"],"additionalProperties":false})");
  EXPECT_TRUE(nested.accepts(R"({"items":[{"sku":"A-1","qty":2},{"sku":"B","qty":10}]})"));
  EXPECT_TRUE(nested.accepts(R"({"items":[]})"));
  EXPECT_FALSE(nested.accepts(R"({"items":[{"sku":"A-1","qty":0}]})"));
  EXPECT_FALSE(nested.accepts(R"({"items":[{"qty":1}]})"));
}

TEST(JsonSchema, AnyValueSchemas) {
  // Empty text: any JSON object (OpenAI's json_object mode), compact.
  const Compiled obj("");
  for (const char* s : {"{}", R"({"a":[1,{"b":null}],"c":"d","e":-1.5,"f":true})", R"({"a":{"a":{"a":{}}}})"}) {
    EXPECT_TRUE(obj.accepts(s)) << s;
  }
  for (const char* s : {"[1]", R"("x")", "1", R"({"a" : 1})", R"({"a":1,})", "{'a':1}"}) EXPECT_FALSE(obj.accepts(s)) << s;
  // Nesting is bounded by max_depth.
  const Compiled shallow("", {.max_depth = 2});
  EXPECT_TRUE(shallow.accepts(R"({"a":{"b":1}})"));
  EXPECT_FALSE(shallow.accepts(R"({"a":{"b":{}}})"));
  // {} and true: any value; an object without "properties": any object; with additionalProperties false: {}.
  const Compiled anything("{}");
  for (const char* s : {"1", "null", R"(["a",{}])", R"("s")"}) EXPECT_TRUE(anything.accepts(s)) << s;
  const Compiled t("true");
  EXPECT_TRUE(t.accepts("[[1]]"));
  const Compiled free_obj(R"({"type":"object"})");
  EXPECT_TRUE(free_obj.accepts(R"({"x":1})"));
  const Compiled closed(R"({"type":"object","additionalProperties":false})");
  EXPECT_TRUE(closed.accepts("{}"));
  EXPECT_FALSE(closed.accepts(R"({"x":1})"));
}

TEST(JsonSchema, GroundStrings) {
  const std::string source = "Order 12 from Zoë Ångström, Malmö";
  const std::string schema = R"({"type":"object","properties":{"name":{"type":"string"},
      "city":{"type":"string","x-pocket-copy":false},"status":{"type":"string","enum":["new","paid"]},
      "code":{"type":"string","maxLength":3}},"required":["name"]})";
  const Compiled g(schema, {.ground_strings = true}, source);
  EXPECT_TRUE(g.accepts(R"({"name":"Zoë Ångström"})"));
  EXPECT_FALSE(g.accepts(R"({"name":"Zoe Angstrom"})"));
  EXPECT_TRUE(g.accepts(R"({"name":"Malmö","city":"Stockholm","status":"paid","code":"XYZ"})"));  // opted out, enum, bounded
  const Compiled plain(schema, {}, source);
  EXPECT_TRUE(plain.accepts(R"({"name":"Zoe Angstrom"})"));
}

TEST(JsonSchema, PrintsAsText) {
  auto text = json_schema_to_gbnf(R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]})");
  ASSERT_TRUE(text.has_value()) << text.status().to_string();
  EXPECT_EQ(text->rfind("root ::=", 0), 0u) << *text;
  EXPECT_NE(text->find("\\\"ok\\\":"), std::string::npos) << *text;
  EXPECT_FALSE(json_schema_to_gbnf("{").has_value());
}

TEST(JsonSchema, Errors) {
  EXPECT_EQ(error_of(R"({"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]+$"}}})"),
            "[json-schema] unsupported keyword 'pattern' at /properties/sku");
  for (const char* k : {"format", "$ref", "oneOf", "allOf", "not", "patternProperties", "uniqueItems", "multipleOf",
                        "if", "$defs", "prefixItems", "minProperties"}) {
    EXPECT_EQ(error_of(std::string(R"({"type":"string",")") + k + R"(":"x"})"),
              std::string("[json-schema] unsupported keyword '") + k + "' at the root");
  }
  EXPECT_EQ(error_of(R"({"type":"object","properties":{"a~b/c":{"requird":1}}})"),
            "[json-schema] unknown keyword 'requird' at /properties/a~0b~1c");
  EXPECT_EQ(error_of(R"({"type":"object",)"), "[json-schema] malformed JSON at byte 18: parse error at line 1, column 18: "
                                              "syntax error while parsing object key - unexpected end of input; expected string literal");
  EXPECT_NE(error_of(std::string(300, '[')).find("nested more than 256 deep at byte 256"), std::string::npos);
  EXPECT_EQ(error_of(R"({"type":"strng"})"), "[json-schema] unknown type \"strng\" (expected string, integer, number, "
                                             "boolean, null, object or array) at /type");
  EXPECT_EQ(error_of(R"({"type":"string","minLength":-1})"),
            "[json-schema] 'minLength' must be a non-negative integer, not -1 at the root");
  EXPECT_EQ(error_of(R"({"type":"string","maxLength":"5"})"),
            "[json-schema] 'maxLength' must be a non-negative integer, not \"5\" at the root");
  EXPECT_EQ(error_of(R"({"type":"integer","minimum":"0"})"), "[json-schema] 'minimum' must be a number, not \"0\" at the root");
  EXPECT_EQ(error_of(R"({"type":"object","required":"a","properties":{"a":{}}})"),
            "[json-schema] 'required' must be a list of property names, not \"a\" at /required");
  EXPECT_EQ(error_of(R"({"type":"string","properties":5})"),
            "[json-schema] 'properties' must be an object of schemas, not 5 at /properties");
  EXPECT_EQ(error_of(R"({"type":"integer","items":"x"})"), "[json-schema] 'items' must be a schema, not \"x\" at /items");
  EXPECT_EQ(error_of(R"({"enum":"red"})"), "[json-schema] 'enum' must be a list, not \"red\" at /enum");
  EXPECT_EQ(error_of(R"({"anyOf":[]})"), "[json-schema] 'anyOf' must be a non-empty list of schemas, not [] at /anyOf");
  EXPECT_EQ(error_of(R"({"type":"null","required":[1]})"), "[json-schema] 'required' lists a non-string 1 at /required/0");
  EXPECT_EQ(error_of("[1]"), "[json-schema] a schema must be an object or a boolean, not [1] at the root");
  // Impossible schemas.
  EXPECT_EQ(error_of(R"({"type":"integer","minimum":5,"maximum":3})"),
            "[json-schema] impossible schema: no number is above the minimum 5.0 and below the maximum 3.0 at the root");
  EXPECT_EQ(error_of(R"({"type":"integer","minimum":2.2,"maximum":2.8})"),
            "[json-schema] impossible schema: no integer lies between the minimum 2.2 and the maximum 2.8 at the root");
  EXPECT_EQ(error_of(R"({"type":"number","exclusiveMinimum":3,"exclusiveMaximum":3})"),
            "[json-schema] impossible schema: no number is above the minimum 3.0 and below the maximum 3.0 at the root");
  EXPECT_EQ(error_of(R"({"type":"string","minLength":4,"maxLength":3})"),
            "[json-schema] impossible schema: minLength 4 > maxLength 3 at the root");
  EXPECT_EQ(error_of(R"({"type":"array","minItems":4,"maxItems":3})"),
            "[json-schema] impossible schema: minItems 4 > maxItems 3 at the root");
  EXPECT_EQ(error_of(R"({"type":"object","properties":{"a":{}},"required":["a","b"]})"),
            "[json-schema] impossible schema: required property \"b\" is not in 'properties' at /required/1");
  EXPECT_EQ(error_of(R"({"enum":[]})"), "[json-schema] impossible schema: 'enum' is empty at /enum");
  EXPECT_EQ(error_of(R"({"type":"string","enum":[1,2]})"),
            "[json-schema] impossible schema: no 'enum' value fits the schema's type, lengths and bounds at the root");
  EXPECT_EQ(error_of(R"({"enum":["a"],"const":"b"})"),
            "[json-schema] impossible schema: 'const' is not among the 'enum' values at the root");
  EXPECT_EQ(error_of(R"({"type":"object","properties":{"x":false},"required":["x"]})"),
            "[json-schema] schema 'false' allows no value at /properties/x");
  // Limits and unsupported forms.
  EXPECT_EQ(error_of(R"({"type":"number","exclusiveMinimum":0.12345678901234566,"exclusiveMaximum":0.12345678901234568})"),
            "[json-schema] impossible schema: no number written with at most 15 digits lies between the minimum "
            "0.12345678901234566 and the maximum 0.12345678901234568 at the root");
  EXPECT_EQ(error_of(R"({"type":"number","minimum":1e19})"),
            "[json-schema] the minimum 1e+19 is beyond the supported ±999999999999999999 at the root");
  EXPECT_EQ(error_of(R"({"type":"integer","minimum":1e19})"),
            "[json-schema] the minimum 1e+19 is beyond the supported ±999999999999999999 at the root");
  EXPECT_EQ(error_of(R"({"type":"string","maxLength":100000})"),
            "[json-schema] 'maxLength' 100000 is more than the 4096 supported at the root");
  EXPECT_EQ(error_of(R"({"type":"array","items":[{"type":"string"}]})"),
            "[json-schema] unsupported keyword 'items' as a list (tuple validation) at /items");
  EXPECT_EQ(error_of(R"({"type":"string","anyOf":[{"maxLength":2}]})"),
            "[json-schema] 'anyOf' combined with 'type' is not supported (move 'type' into each branch) at the root");
  EXPECT_EQ(error_of(R"({"type":"integer","x-pocket-copy":true})"),
            "[json-schema] 'x-pocket-copy' applies to strings only at the root");
  EXPECT_EQ(error_of(R"({"type":"string","x-pocket-copy":true,"maxLength":5})"),
            "[json-schema] 'x-pocket-copy' cannot be combined with 'maxLength' or a 'minLength' above 1 (a copied span "
            "has the length the source gives it) at the root");
  EXPECT_EQ(error_of(R"({"enum":["a"],"x-pocket-copy":true})"),
            "[json-schema] 'x-pocket-copy' cannot be combined with 'enum' or 'const' at the root");
  std::string deep = "{}";
  for (int i = 0; i < 20; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  EXPECT_EQ(error_of(deep), "[json-schema] schema nested more than 16 deep at " + [] {
              std::string p;
              for (int i = 0; i < 17; ++i) p += "/items";
              return p;
            }());
  EXPECT_EQ(error_of("{}", {.max_depth = 0}), "[json-schema] max_depth 0 is outside 1..64");
  // Many large bounds add up: refused before the grammar grows.
  std::string wide = R"({"type":"object","properties":{)";
  for (int i = 0; i < 400; ++i) wide += (i ? "," : "") + std::string("\"p") + std::to_string(i) + R"(":{"type":"string","minLength":4000})";
  wide += "}}";
  EXPECT_NE(error_of(wide).find("the schema needs too large a grammar"), std::string::npos);
}

TEST(JsonSchema, AnnotationsAndExtensionsAreIgnored) {
  const Compiled c(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","title":"T","description":"d",
      "$comment":"c","type":"object","properties":{"a":{"type":"integer","default":1,"examples":[2],"x-ui":"slider"}},
      "required":["a"]})");
  EXPECT_TRUE(c.accepts(R"({"a":5})"));
}

}  // namespace
}  // namespace pocket
