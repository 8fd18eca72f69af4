// Property test of the JSON-schema path end to end: random schemas of the supported subset (nesting, bounds,
// enums, required sets, x-pocket-copy as whole words or any span over a random English/Chinese source,
// ground_strings) compiled, constrained over a vocabulary (a synthetic byte-level one with merged structural
// tokens, pocket-nano's, Qwen3's) and sampled from random logits within a token limit: every output must parse
// as JSON and pass the independent validator. Also: an impossible bound or an unsupported keyword injected at
// a random place is refused with that place's JSON pointer.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "constrain/grammar_constraint.h"
#include "constrain/json_schema.h"
#include "constrain/json_validate.h"
#include "constrain/random_generation.h"
#include "constrain/vocab_index.h"
#include "format/package.h"
#include "test_util.h"
#include "tokenizer/hf_loader.h"
#include "tokenizer/tokenizer.h"

namespace pocket {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// ---- Random sources and schemas ----

const std::vector<std::string> kWords = {
    "Apple", "AirPods", "Pro", "2", "$329", "59.99", "Best Buy", "white", "order", "#42", "Zoë", "Ångström",
    "苹果", "耳机", "价格", "三百二十九元", "颜色", "白色", "北京", "订单", "😀", "\"quoted\"", "back\\slash",
    "tab\there", "line\nbreak", "a/b", "—", "，", "。"};

std::string random_source(std::mt19937_64& rng) {
  std::string s;
  const int n = 3 + static_cast<int>(rng() % 12);
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += (rng() % 3 == 0) ? "" : " ";
    s += kWords[rng() % kWords.size()];
  }
  return s;
}

class SchemaGen {
 public:
  SchemaGen(std::mt19937_64& rng, bool copy_allowed) : rng_(rng), copy_allowed_(copy_allowed) {}

  ordered_json top() {
    const int r = pick(10);
    if (r < 7) return object(0);
    return any(0);
  }

 private:
  static int64_t pow10(int64_t n) { return n == 0 ? 1 : 10 * pow10(n - 1); }
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
  int64_t between(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1)); }

  ordered_json any(int depth) {
    const int kinds = depth >= 3 ? 7 : 10;
    switch (pick(kinds)) {
      case 0: return string();
      case 1: return integer();
      case 2: return number();
      case 3: return ordered_json{{"type", chance(50) ? "boolean" : "null"}};
      case 4: return enumeration();
      case 5: return type_list();
      case 6: return chance(80) ? string() : ordered_json::object();  // {}: any value
      case 7: return object(depth + 1);
      case 8: return array(depth + 1);
      default: return any_of(depth + 1);
    }
  }

  ordered_json string() {
    ordered_json s{{"type", "string"}};
    if (copy_allowed_ && chance(30)) {
      static const ordered_json kModes[] = {true, "words", "substring"};  // whole words (default) or any span
      s["x-pocket-copy"] = kModes[pick(3)];
      if (chance(20)) s["minLength"] = 1;
      return s;
    }
    if (chance(50)) s["minLength"] = between(0, 3);
    if (chance(50)) s["maxLength"] = s.value("minLength", 0) + between(0, 6);
    if (chance(10)) s["x-pocket-copy"] = false;
    if (chance(20)) s["description"] = "a string";
    return s;
  }

  // Bounds that always leave at least one integer; sometimes fractional, exclusive, one-sided or large.
  void bounds(ordered_json& s, bool whole) {
    const int64_t scale = chance(15) ? 1000000000000 : 1000;
    const int64_t lo = between(-scale, scale);
    const int64_t hi = lo + 2 + between(0, chance(50) ? 10 : 2 * scale);
    const int form = pick(5);
    const bool has_lo = form != 1, has_hi = form != 2;
    if (form == 4) {
      if (has_lo) s["exclusiveMinimum"] = lo;
      if (has_hi) s["exclusiveMaximum"] = hi;
      return;
    }
    // Fractional bounds: x.5 for integers (rounded inward); for numbers decimals of 1-3 places.
    const int64_t places = between(1, 3);
    const double frac = whole ? (chance(40) ? static_cast<double>(between(1, pow10(places) - 1)) / static_cast<double>(pow10(places)) : 0.0)
                              : (chance(30) ? 0.5 : 0.0);  // in (0, 1): the bounds stay ordered
    if (has_lo) s["minimum"] = static_cast<double>(lo) + frac;
    if (has_hi) s["maximum"] = frac != 0 && whole ? static_cast<double>(hi) + frac / 2 : static_cast<double>(hi);
    if (form == 3 && has_lo) s["exclusiveMinimum"] = true;  // draft 4 form
    if (form == 0 && chance(50)) s.erase("minimum"), s.erase("maximum");
  }

  ordered_json integer() {
    ordered_json s{{"type", "integer"}};
    bounds(s, false);
    return s;
  }

  ordered_json number() {
    ordered_json s{{"type", "number"}};
    if (chance(60)) bounds(s, true);
    return s;
  }

  ordered_json enumeration() {
    static const std::vector<ordered_json> kValues = {"red", "Zoë", "中文", "a\"b", "line\nbreak", "😀", "", 0, -7,
                                                      329, 59.99, 2.5, true, false, nullptr};
    ordered_json values = ordered_json::array();
    const int n = 1 + pick(4);
    for (int i = 0; i < n; ++i) values.push_back(kValues[static_cast<size_t>(pick(static_cast<int>(kValues.size())))]);
    if (chance(20)) return ordered_json{{"const", values[0]}};
    ordered_json s{{"enum", values}};
    if (chance(30) && values[0].is_string()) s = ordered_json{{"type", "string"}, {"enum", values}};
    return s;
  }

  ordered_json type_list() {
    switch (pick(3)) {
      case 0: {
        ordered_json s = string();
        s["type"] = {"string", "null"};
        return s;
      }
      case 1: {
        ordered_json s{{"type", {"integer", "boolean"}}};
        bounds(s, false);
        return s;
      }
      default: {
        ordered_json s{{"type", {"number", "string"}}};
        if (chance(50)) s["maxLength"] = 4;
        return s;
      }
    }
  }

  ordered_json object(int depth) {
    static const std::vector<std::string> kNames = {"name", "brand", "price", "colour", "qty", "a/b", "t~x", "名字",
                                                    "k\"q", "sp ace", "items", "note"};
    ordered_json props = ordered_json::object();
    const int n = pick(5);
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) {
      const std::string& name = kNames[static_cast<size_t>(pick(static_cast<int>(kNames.size())))];
      if (props.contains(name)) continue;
      props[name] = depth >= 3 ? string() : any(depth);
      names.push_back(name);
    }
    ordered_json s{{"type", "object"}, {"properties", props}};
    ordered_json req = ordered_json::array();
    for (const auto& name : names) {
      if (chance(40)) req.push_back(name);
    }
    if (!req.empty()) s["required"] = req;
    if (chance(50)) s["additionalProperties"] = false;
    return s;
  }

  ordered_json array(int depth) {
    ordered_json s{{"type", "array"}, {"items", any(depth)}};
    const int64_t lo = between(0, 2);
    if (chance(50)) s["minItems"] = lo;
    if (chance(60)) s["maxItems"] = lo + between(0, 3);
    return s;
  }

  ordered_json any_of(int depth) {
    ordered_json branches = ordered_json::array();
    const int n = 2 + pick(2);
    for (int i = 0; i < n; ++i) branches.push_back(any(depth));
    return ordered_json{{"anyOf", branches}, {"title", "choice"}};
  }

  std::mt19937_64& rng_;
  bool copy_allowed_;
};

// ---- Vocabularies ----

// All 256 bytes, then merged tokens: JSON structure, pieces of the words the sources are made of (some cut
// inside a UTF-8 character), digits, escapes. The last id is EOS (no bytes).
std::vector<std::string> synthetic_tokens(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) t.emplace_back(1, static_cast<char>(b));
  for (const char* s : {"\",", "\":\"", "\"}", "},{", "{\"", "\":", ",\"", "[\"", "\"]", "]}", "},", "null", "true",
                        "false", "\\n", "\\\"", "\\u00", "\"\"", "{}", "[]", "1.", ".5", "00", "-1", "329", "59.99",
                        "name", "\":\"Apple", "price\":", "\"price\":3", "e\",\"", "\u4e2d\u6587\"", "\\t", "\\\\"}) {
    t.emplace_back(s);
  }
  for (int i = 0; i < 300; ++i) {
    const std::string& w = kWords[rng() % kWords.size()];
    const size_t a = rng() % w.size();
    const size_t len = 1 + rng() % (w.size() - a);
    t.push_back(w.substr(a, len));                      // may cut a UTF-8 character
    if (rng() % 4 == 0) t.push_back(w.substr(a, len) + "\"");
  }
  for (int i = 0; i < 100; ++i) t.push_back(std::to_string(rng() % 1000));
  t.emplace_back("");  // EOS
  return t;
}

const Tokenizer* qwen3() {
  static std::unique_ptr<Tokenizer> tok = [] {
    const std::string dir = testing::shared_data_dir();
    if (dir.empty()) return std::unique_ptr<Tokenizer>();
    auto t = load_hf_tokenizer(dir + "/tokenizers/qwen3/tokenizer.json");
    EXPECT_TRUE(t.has_value()) << t.status().to_string();
    return t.has_value() ? std::move(t).value() : nullptr;
  }();
  return tok.get();
}

std::unique_ptr<Tokenizer> nano_tokenizer() {
  const auto path = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "models" /
                    "pocket-nano-q4.pocket";
  if (!std::filesystem::exists(path)) return nullptr;
  auto pkg = Package::open(path.string());
  EXPECT_TRUE(pkg.has_value()) << pkg.status().to_string();
  if (!pkg.has_value()) return nullptr;
  auto tok = load_tokenizer_section(pkg->tokenizer_bytes());
  EXPECT_TRUE(tok.has_value()) << tok.status().to_string();
  return tok.has_value() ? std::move(tok).value() : nullptr;
}

// ---- The property ----

// No blank outside string literals (the compiler's output format is compact JSON).
bool compact(const std::string& text) {
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      return false;
    }
  }
  return true;
}

struct Stats {
  int generations = 0, objects = 0, copied = 0, by_limit = 0, skipped_long = 0;
  size_t bytes = 0, tokens = 0;
  std::vector<std::string> examples;
};

// `n` generations over `vocab`; each one a fresh random schema, source and seed.
void run_generations(const std::shared_ptr<const VocabIndex>& vocab, int32_t eos_id, int n, int32_t max_tokens,
                     uint64_t seed, Stats* stats) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < n; ++i) {
    const std::string source = random_source(rng);
    const bool ground = rng() % 4 == 0;
    const bool empty_text = rng() % 25 == 0;
    SchemaGen gen(rng, true);
    const ordered_json schema = empty_text ? ordered_json() : gen.top();
    const std::string schema_text = empty_text ? "" : schema.dump();
    const std::string what = "schema " + schema_text + "\nsource " + json(source).dump() + (ground ? " (ground)" : "");

    auto grammar = compile_json_schema(schema_text, {.ground_strings = ground});
    ASSERT_TRUE(grammar.has_value()) << grammar.status().to_string() << "\n" << what;
    auto cg = CompiledGrammar::create(std::move(grammar).value(), vocab);
    ASSERT_TRUE(cg.has_value()) << cg.status().to_string() << "\n" << what;
    auto m = (*cg)->matcher(source);
    ASSERT_TRUE(m.has_value()) << m.status().to_string();
    if (m->min_rest() > max_tokens / 2) {  // a schema whose shortest value needs most of the budget
      ++stats->skipped_long;
      continue;
    }
    // A third of the generations get a tight limit (a few tokens above the shortest completion, in bytes)
    // so that the constraint has to steer the value closed in time.
    const int32_t limit = rng() % 3 == 0 ? std::min<int32_t>(max_tokens, m->min_rest() + 2 + static_cast<int32_t>(rng() % 12))
                                         : max_tokens;
    auto constraint = (*cg)->start(source);
    ASSERT_TRUE(constraint.has_value()) << constraint.status().to_string();
    const auto out = testing::random_generation(**constraint, vocab->n_vocab(), eos_id, rng(), limit,
                                                [&](int32_t id) { return vocab->token_bytes(id); });
    ASSERT_TRUE(out.status.is_ok()) << out.status.to_string() << "\n" << what << "\noutput so far " << out.bytes;
    ASSERT_TRUE(out.done || out.eos || (*constraint)->can_stop()) << what << "\noutput " << out.bytes;
    const json value = json::parse(out.bytes, nullptr, false);
    ASSERT_FALSE(value.is_discarded()) << "not JSON: " << out.bytes << "\n" << what;
    const json schema_value = empty_text ? json{{"type", "object"}} : json::parse(schema_text);
    const auto errors = validate_json(schema_value, value, source, ground);
    ASSERT_TRUE(errors.empty()) << errors[0] << "\noutput " << out.bytes << "\n" << what;
    ASSERT_TRUE(compact(out.bytes)) << "blanks outside strings: " << out.bytes << "\n" << what;
    ++stats->generations;
    stats->bytes += out.bytes.size();
    stats->tokens += out.ids.size();
    if (stats->examples.size() < 3 && out.bytes.size() > 40) stats->examples.push_back(out.bytes);
    stats->objects += value.is_object();
    stats->by_limit += !out.done && !out.eos;
    stats->copied += schema_text.find("x-pocket-copy\":true") != std::string::npos ||
                     schema_text.find("x-pocket-copy\":\"") != std::string::npos || ground;
  }
}

void report(const char* name, const Stats& s, double seconds) {
  std::printf("[ schema property ] %s: %d generations (%d objects, %d with copy spans, %d ended by the token limit, "
              "%d schemas skipped as too long; %zu tokens, %zu bytes) in %.1f s\n",
              name, s.generations, s.objects, s.copied, s.by_limit, s.skipped_long, s.tokens, s.bytes, seconds);
  for (const auto& e : s.examples) std::printf("    e.g. %s\n", e.c_str());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(SchemaProperty, SyntheticByteVocabulary) {
  const auto tokens = synthetic_tokens(11);
  auto vocab = VocabIndex::from_tokens(tokens);
  const auto t0 = std::chrono::steady_clock::now();
  Stats stats;
  run_generations(vocab, static_cast<int32_t>(tokens.size()) - 1, 600, 160, 101, &stats);
  report("synthetic", stats, seconds_since(t0));
  EXPECT_GE(stats.generations, 500);
  EXPECT_GE(stats.copied, 100);
}

TEST(SchemaProperty, PocketNanoVocabulary) {
  auto tok = nano_tokenizer();
  if (tok == nullptr) GTEST_SKIP() << "models/pocket-nano-q4.pocket is absent";
  auto vocab = VocabIndex::build(*tok);
  const auto t0 = std::chrono::steady_clock::now();
  Stats stats;
  run_generations(vocab, tok->eos_id(), 250, 160, 202, &stats);
  report("pocket-nano", stats, seconds_since(t0));
  EXPECT_GE(stats.generations, 200);
}

TEST(SchemaProperty, Qwen3Vocabulary) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3();
  ASSERT_NE(tok, nullptr);
  auto vocab = VocabIndex::build(*tok);
  const auto t0 = std::chrono::steady_clock::now();
  Stats stats;
  run_generations(vocab, tok->eos_id(), 150, 120, 303, &stats);
  report("qwen3", stats, seconds_since(t0));
  EXPECT_GE(stats.generations, 120);
}

// Every subschema's JSON pointer in a generated schema.
void subschema_pointers(const ordered_json& s, const std::string& at, std::vector<std::string>* out) {
  if (!s.is_object()) return;
  out->push_back(at);
  auto escape = [](std::string k) {
    std::string e;
    for (char c : k) e += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    return e;
  };
  if (auto p = s.find("properties"); p != s.end()) {
    for (auto it = p->begin(); it != p->end(); ++it) subschema_pointers(it.value(), at + "/properties/" + escape(it.key()), out);
  }
  if (auto p = s.find("items"); p != s.end()) subschema_pointers(*p, at + "/items", out);
  if (auto p = s.find("anyOf"); p != s.end()) {
    for (size_t i = 0; i < p->size(); ++i) subschema_pointers((*p)[i], at + "/anyOf/" + std::to_string(i), out);
  }
}

TEST(SchemaProperty, InjectedErrorsNameTheirPlace) {
  std::mt19937_64 rng(404);
  for (int i = 0; i < 200; ++i) {
    SchemaGen gen(rng, true);
    ordered_json schema = gen.top();
    std::vector<std::string> ptrs;
    subschema_pointers(schema, "", &ptrs);
    const std::string at = ptrs[rng() % ptrs.size()];
    const std::string place = at.empty() ? "the root" : at;
    ordered_json& node = schema[ordered_json::json_pointer(at)];
    std::string want;
    switch (rng() % 4) {
      case 0:
        node = {{"type", "integer"}, {"minimum", 5}, {"maximum", 3}};
        want = "[json-schema] impossible schema: no number is above the minimum 5.0 and below the maximum 3.0 at " + place;
        break;
      case 1:
        node = {{"type", "string"}, {"minLength", 4}, {"maxLength", 2}};
        want = "[json-schema] impossible schema: minLength 4 > maxLength 2 at " + place;
        break;
      case 2:
        node = {{"type", "string"}, {"enum", {1, 2}}};
        want = "[json-schema] impossible schema: no 'enum' value fits the schema's type, lengths and bounds at " + place;
        break;
      default: {
        static const char* kKeywords[] = {"pattern", "format", "$ref", "oneOf", "allOf", "patternProperties"};
        const std::string k = kKeywords[rng() % std::size(kKeywords)];
        node[k] = "x";
        want = "[json-schema] unsupported keyword '" + k + "' at " + place;
      }
    }
    auto g = compile_json_schema(schema.dump());
    ASSERT_FALSE(g.has_value()) << schema.dump();
    EXPECT_EQ(g.status().message(), want) << schema.dump();
    EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace pocket
