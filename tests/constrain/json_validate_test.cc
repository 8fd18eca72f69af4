// validate_json against the JSON-Schema-Test-Suite-style cases in data/validator_cases.json (schema, data,
// valid), then the compiler against the same cases: a value the compiled grammar accepts (written compactly)
// must be valid, and an invalid value must be refused by the grammar. Also the error messages' form.
#include "constrain/json_validate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "constrain/grammar_matcher.h"
#include "constrain/json_schema.h"

namespace pocket {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Keeps the schemas' property order (the compiler writes properties in that order).
ordered_json load_cases() {
  const auto path = std::filesystem::path(__FILE__).parent_path() / "data" / "validator_cases.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ordered_json::parse(ss.str());
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += "\n  " + e;
  return s;
}

TEST(JsonValidate, SuiteCases) {
  const ordered_json groups = load_cases();
  ASSERT_GE(groups.size(), 40u);
  int n = 0;
  for (const auto& g : groups) {
    const json schema = json::parse(g["schema"].dump());
    const std::string source = g.value("source", "");
    const bool ground = g.value("ground", false);
    for (const auto& t : g["tests"]) {
      const json data = json::parse(t["data"].dump());
      const auto errors = validate_json(schema, data, source, ground);
      EXPECT_EQ(errors.empty(), t["valid"].get<bool>())
          << g["description"].get<std::string>() << " / " << t["description"].get<std::string>() << join(errors);
      ++n;
    }
  }
  EXPECT_GE(n, 150);
}

TEST(JsonValidate, CompiledGrammarsAgreeWithTheSuite) {
  const ordered_json groups = load_cases();
  int compiled = 0, accepted_valid = 0, valid = 0;
  for (const auto& g : groups) {
    const std::string source = g.value("source", "");
    JsonSchemaOptions opts;
    opts.ground_strings = g.value("ground", false);
    auto grammar = compile_json_schema(g["schema"].dump(), opts);
    if (!grammar.has_value()) continue;  // schema false, unsupported keywords, additionalProperties schemas...
    ++compiled;
    auto m = GrammarMatcher::create(std::move(grammar).value(), source);
    ASSERT_TRUE(m.has_value()) << m.status().to_string();
    for (const auto& t : g["tests"]) {
      // The data written compactly with the keys in the schema's order where the schema lists them (the
      // order of the file's data, which follows the schemas').
      const std::string text = t["data"].dump(-1, ' ', false, ordered_json::error_handler_t::strict);
      GrammarMatcher mm = *m;
      const bool accepted = mm.accept_bytes(text) && mm.can_end();
      const std::string what = g["description"].get<std::string>() + " / " + t["description"].get<std::string>() + ": " + text;
      if (!t["valid"].get<bool>()) EXPECT_FALSE(accepted) << "the grammar accepts an invalid value: " << what;
      if (accepted) {
        EXPECT_TRUE(validate_json(json::parse(g["schema"].dump()), json::parse(text), source, opts.ground_strings).empty())
            << what;
      }
      if (t["valid"].get<bool>()) {
        ++valid;
        accepted_valid += accepted;
      }
    }
  }
  EXPECT_GE(compiled, 35);
  // Most valid values are in the grammar's compact form; the rest use forms it never writes (1.0 for an
  // integer, properties the schema does not list, -0.0).
  EXPECT_GE(accepted_valid * 10, valid * 7) << accepted_valid << " of " << valid;
}

TEST(JsonValidate, MessagesNameThePlace) {
  const json schema = json::parse(R"({"type":"object","properties":{"lines":{"type":"array","items":{"type":"object",
      "properties":{"qty":{"type":"integer","minimum":1}},"required":["qty"]}},"name":{"type":"string","maxLength":3}},
      "required":["lines"],"additionalProperties":false})");
  const auto errors = validate_json(schema, json::parse(R"({"lines":[{"qty":1},{"qty":0},{}],"name":"abcd","x":1})"));
  ASSERT_EQ(errors.size(), 4u) << join(errors);
  EXPECT_EQ(errors[0], "/lines/1/qty: 0 is below the minimum 1");
  EXPECT_EQ(errors[1], "/lines/2: the required property \"qty\" is missing");
  EXPECT_EQ(errors[2], "/name: the string has 4 characters, more than maxLength 3");
  EXPECT_EQ(errors[3], "(root): the property \"x\" is not allowed (additionalProperties is false)");
  EXPECT_EQ(validate_json(json::parse(R"({"type":"string","x-pocket-copy":true})"), "Zoe", "Zoë")[0],
            "(root): \"Zoe\" is not a span of the source text");
  EXPECT_EQ(validate_json(json::parse(R"({"format":"email"})"), "a@b")[0],
            "(root): the schema's keyword 'format' is not supported");
}

TEST(JsonValidate, CopiedStringsAreWholeWordsUnlessSubstring) {
  const std::string source = "Free returns within 30 days, size: EU 36, ￥329 — in blue";
  const json words = json::parse(R"({"type":"string","x-pocket-copy":true})");
  const json words2 = json::parse(R"({"type":"string","x-pocket-copy":"words"})");
  const json any = json::parse(R"({"type":"string","x-pocket-copy":"substring"})");
  const json plain = json::parse(R"({"type":"string"})");
  for (const char* ok : {"EU 36", "329", "￥329", "within", "in", "in blue", ", size", "—"}) {
    EXPECT_TRUE(validate_json(words, ok, source).empty()) << ok;
    EXPECT_TRUE(validate_json(words2, ok, source).empty()) << ok;
    EXPECT_TRUE(validate_json(plain, ok, source, true).empty()) << ok;  // ground_strings: whole words
    EXPECT_TRUE(validate_json(any, ok, source).empty()) << ok;
  }
  // "in" occurs inside "within" but also as a word; "ithin", "U 36", "blu", "ree" only inside words.
  for (const char* cut : {"ithin", "U 36", "blu", "ree", "3", "ys, si"}) {
    ASSERT_EQ(validate_json(words, cut, source).size(), 1u) << cut;
    EXPECT_EQ(validate_json(words, cut, source)[0], "(root): " + json(cut).dump() +
                                                        " occurs in the source text only inside a word (a copied span "
                                                        "starts and ends at word boundaries)");
    EXPECT_FALSE(validate_json(plain, cut, source, true).empty()) << cut;
    EXPECT_TRUE(validate_json(any, cut, source).empty()) << cut;
  }
  EXPECT_EQ(validate_json(json::parse(R"({"type":"string","x-pocket-copy":"yes"})"), "in", source)[0],
            "(root): the schema's 'x-pocket-copy' is \"yes\" (expected true, false, \"words\" or \"substring\")");
}

TEST(JsonValidate, MalformedSchemasAreReportedNotThrown) {
  // Keywords of the wrong type are not crashes; deep schemas are bounded.
  for (const char* s : {R"({"type":5})", R"({"enum":3})", R"({"anyOf":{}})", R"({"items":[1]})", R"({"required":"a"})",
                        R"({"minLength":"2"})", R"({"properties":[]})", "[]", "3"}) {
    EXPECT_NO_THROW((void)validate_json(json::parse(s), json::parse(R"({"a":"xy"})"))) << s;
  }
  json deep = json::object();
  for (int i = 0; i < 1000; ++i) deep = json{{"items", deep}};
  json value = json::array();
  for (int i = 0; i < 1000; ++i) value = json::array({value});
  const auto errors = validate_json(deep, value);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("the schema nests more than 128 deep"), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace pocket
