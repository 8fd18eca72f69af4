// The JSON-schema compiler: walks the schema (nlohmann::ordered_json, so properties keep their order) and
// builds grammar rules for compact JSON. Integer ranges become digit-by-digit grammars; numbers with
// whole-number bounds split into integer part and fraction; objects chain their properties so that every
// subset of the optional ones is written with the right commas.
#include "constrain/json_schema.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace pocket {
namespace {

using ojson = nlohmann::ordered_json;

const std::set<std::string_view> kSupported = {
    "type",      "properties", "required", "additionalProperties", "enum",     "const",
    "minLength", "maxLength",  "minimum",  "maximum",              "exclusiveMinimum", "exclusiveMaximum",
    "items",     "minItems",   "maxItems", "anyOf",                "x-pocket-copy"};
// Ignored: they describe the value without constraining it.
const std::set<std::string_view> kAnnotations = {"title",    "description", "$schema",  "$id",      "$comment",
                                                 "default",  "examples",    "deprecated", "readOnly", "writeOnly"};
// Known JSON-schema keywords this compiler refuses by name (a silent ignore would let invalid values through).
const std::set<std::string_view> kUnsupported = {
    "pattern",        "format",           "$ref",          "$defs",           "definitions",      "oneOf",
    "allOf",          "not",              "if",            "then",            "else",             "patternProperties",
    "dependentRequired", "dependentSchemas", "dependencies", "propertyNames",  "minProperties",    "maxProperties",
    "uniqueItems",    "contains",         "minContains",   "maxContains",     "prefixItems",      "additionalItems",
    "unevaluatedProperties", "unevaluatedItems", "multipleOf", "contentEncoding", "contentMediaType",
    "contentSchema",  "$anchor",          "$dynamicRef",   "$dynamicAnchor",  "$recursiveRef",    "$recursiveAnchor",
    "$vocabulary"};

enum TypeBit : uint32_t {
  kString = 1,
  kInteger = 2,
  kNumber = 4,
  kBoolean = 8,
  kNull = 16,
  kObject = 32,
  kArray = 64,
  kAllTypes = 127,
};
constexpr std::array<std::pair<std::string_view, TypeBit>, 7> kTypeNames = {{{"string", kString},
                                                                             {"integer", kInteger},
                                                                             {"number", kNumber},
                                                                             {"boolean", kBoolean},
                                                                             {"null", kNull},
                                                                             {"object", kObject},
                                                                             {"array", kArray}}};

int64_t pow10(int n) {
  int64_t v = 1;
  for (int i = 0; i < n; ++i) v *= 10;
  return v;
}
constexpr int64_t kFreeIntMax = 999999999999999;  // 10^kFreeIntDigits - 1
static_assert(kFreeIntMax + 1 == 1000000000000000LL && JsonSchemaLimits::kFreeIntDigits == 15);

std::string escape_pointer(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string dump(const ojson& v) { return v.dump(-1, ' ', false, ojson::error_handler_t::replace); }

// Code points in a UTF-8 string (continuation bytes are not counted).
int64_t count_chars(const std::string& s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

// A lower or upper numeric bound as the schema states it.
struct Bound {
  bool present = false;
  double value = 0;
  bool exclusive = false;
  std::string text;  // the bound as the schema writes it (dumped compactly): its exact decimal
};

// Checks that `text` nests brackets at most `limit` deep (outside strings), before the recursive parts of
// the JSON library and of this compiler see it.
std::optional<size_t> too_deep(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
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
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const JsonSchemaOptions& opts) : opts_(opts) {}

  Expected<Grammar> compile_text(std::string_view text) {
    if (opts_.max_depth < 1 || opts_.max_depth > JsonSchemaLimits::kMaxDepthOption) {
      return invalid_argument("[json-schema] max_depth " + std::to_string(opts_.max_depth) + " is outside 1.." +
                              std::to_string(JsonSchemaLimits::kMaxDepthOption));
    }
    if (text.size() > JsonSchemaLimits::kMaxSchemaBytes) {
      return invalid_argument("[json-schema] the schema is " + std::to_string(text.size()) + " bytes, more than the " +
                              std::to_string(JsonSchemaLimits::kMaxSchemaBytes) + " allowed");
    }
    const int32_t root = grammar_.add_rule("root");
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      // No schema: any JSON object (OpenAI's json_object mode).
      grammar_.add_alt(root, {rule_ref(free_object(opts_.max_depth))});
    } else {
      if (auto at = too_deep(text, JsonSchemaLimits::kMaxJsonNesting)) {
        return invalid_argument("[json-schema] malformed JSON: nested more than " +
                                std::to_string(JsonSchemaLimits::kMaxJsonNesting) + " deep at byte " +
                                std::to_string(*at));
      }
      ojson schema;
      try {
        schema = ojson::parse(text);
      } catch (const ojson::parse_error& e) {
        std::string what = e.what();
        const size_t cut = what.find("] ");
        if (cut != std::string::npos) what = what.substr(cut + 2);
        return invalid_argument("[json-schema] malformed JSON at byte " + std::to_string(e.byte) + ": " + what);
      }
      POCKET_ASSIGN_OR_RETURN(GrammarSeq seq, compile(schema, "", 0, "value"));
      grammar_.add_alt(root, std::move(seq));
    }
    POCKET_RETURN_IF_ERROR(grammar_.finalize(root));
    return std::move(grammar_);
  }

 private:
  static GrammarElem rule_ref(int32_t r) { return {ElemKind::kRule, 0, 0, r}; }

  static Status error(const std::string& ptr, const std::string& what) {
    return invalid_argument("[json-schema] " + what + " at " + (ptr.empty() ? std::string("the root") : ptr));
  }

  Status spend(int64_t n, const std::string& ptr) {
    budget_ += n;
    if (budget_ > JsonSchemaLimits::kMaxBudget || grammar_.n_rules() > Grammar::kMaxRules / 4) {
      return error(ptr, "the schema needs too large a grammar (lengths, counts and ranges add up to more than " +
                            std::to_string(JsonSchemaLimits::kMaxBudget) + " elements)");
    }
    return Status::ok();
  }

  // ---- Reading keywords ----

  static const ojson* find(const ojson& s, std::string_view key) {
    auto it = s.find(std::string(key));
    return it == s.end() ? nullptr : &*it;
  }

  // A non-negative whole number (minLength and the like), at most kMaxCount.
  static Expected<std::optional<int64_t>> count_keyword(const ojson& s, std::string_view key, const std::string& ptr) {
    const ojson* v = find(s, key);
    if (v == nullptr) return std::optional<int64_t>();
    double d = 0;
    if (v->is_number_unsigned()) {
      d = static_cast<double>(v->get<uint64_t>());
    } else if (v->is_number_integer()) {
      d = static_cast<double>(v->get<int64_t>());
    } else if (v->is_number_float()) {
      d = v->get<double>();
    } else {
      return error(ptr, "'" + std::string(key) + "' must be a non-negative integer, not " + dump(*v));
    }
    if (!(d >= 0) || std::floor(d) != d) {
      return error(ptr, "'" + std::string(key) + "' must be a non-negative integer, not " + dump(*v));
    }
    if (d > static_cast<double>(JsonSchemaLimits::kMaxCount)) {
      return error(ptr, "'" + std::string(key) + "' " + dump(*v) + " is more than the " +
                            std::to_string(JsonSchemaLimits::kMaxCount) + " supported");
    }
    return std::optional<int64_t>(static_cast<int64_t>(d));
  }

  // minimum / exclusiveMinimum (or maximum / exclusiveMaximum): the tighter of the two; the draft-4 boolean
  // form of exclusiveMinimum makes `minimum` exclusive.
  static Expected<Bound> bound_keyword(const ojson& s, bool lower, const std::string& ptr) {
    const std::string inc = lower ? "minimum" : "maximum";
    const std::string exc = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    Bound b;
    const ojson* vi = find(s, inc);
    const ojson* ve = find(s, exc);
    if (vi != nullptr) {
      if (!vi->is_number()) return error(ptr, "'" + inc + "' must be a number, not " + dump(*vi));
      b = {true, vi->get<double>(), false, dump(*vi)};
    }
    if (ve != nullptr) {
      if (ve->is_boolean()) {
        if (ve->get<bool>() && b.present) b.exclusive = true;
      } else if (ve->is_number()) {
        const double e = ve->get<double>();
        if (!b.present || (lower ? e >= b.value : e <= b.value)) b = {true, e, true, dump(*ve)};
      } else {
        return error(ptr, "'" + exc + "' must be a number, not " + dump(*ve));
      }
    }
    if (b.present && !std::isfinite(b.value)) return error(ptr, "'" + inc + "' must be a finite number");
    return b;
  }

  Expected<uint32_t> type_mask(const ojson& s, const std::string& ptr) {
    const ojson* t = find(s, "type");
    if (t == nullptr) return 0u;
    std::vector<const ojson*> names;
    if (t->is_string()) {
      names.push_back(t);
    } else if (t->is_array()) {
      if (t->empty()) return error(ptr + "/type", "'type' is an empty list");
      for (const auto& n : *t) names.push_back(&n);
    } else {
      return error(ptr + "/type", "'type' must be a type name or a list of them, not " + dump(*t));
    }
    uint32_t mask = 0;
    for (const ojson* n : names) {
      bool known = false;
      if (n->is_string()) {
        for (const auto& [name, bit] : kTypeNames) {
          if (n->get<std::string>() == name) mask |= bit, known = true;
        }
      }
      if (!known) {
        return error(ptr + "/type", "unknown type " + dump(*n) +
                                        " (expected string, integer, number, boolean, null, object or array)");
      }
    }
    return mask;
  }

  // ---- The compiler ----

  // Checks every keyword of `s` is one this compiler knows; errors name the first that is not.
  static Status check_keywords(const ojson& s, const std::string& ptr) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (kSupported.count(k) != 0 || kAnnotations.count(k) != 0) continue;
      if (kUnsupported.count(k) != 0) return error(ptr, "unsupported keyword '" + k + "'");
      if (k.rfind("x-", 0) == 0) continue;  // vendor extensions other than ours are annotations
      return error(ptr, "unknown keyword '" + k + "'");
    }
    // Keywords of the wrong JSON type are errors whatever the schema's type (a mistake is never ignored).
    struct Shape {
      const char* key;
      bool (*ok)(const ojson&);
      const char* expected;
    };
    static const Shape kShapes[] = {
        {"properties", [](const ojson& v) { return v.is_object(); }, "an object of schemas"},
        {"required", [](const ojson& v) { return v.is_array(); }, "a list of property names"},
        {"additionalProperties", [](const ojson& v) { return v.is_boolean() || v.is_object(); }, "a boolean or a schema"},
        {"items", [](const ojson& v) { return v.is_boolean() || v.is_object() || v.is_array(); }, "a schema"},
        {"enum", [](const ojson& v) { return v.is_array(); }, "a list"},
        {"anyOf", [](const ojson& v) { return v.is_array() && !v.empty(); }, "a non-empty list of schemas"},
    };
    for (const Shape& shape : kShapes) {
      auto it = s.find(shape.key);
      if (it != s.end() && !shape.ok(*it)) {
        return error(ptr + "/" + shape.key, "'" + std::string(shape.key) + "' must be " + shape.expected + ", not " + dump(*it));
      }
    }
    if (auto it = s.find("required"); it != s.end()) {
      for (size_t i = 0; i < it->size(); ++i) {
        if (!(*it)[i].is_string()) {
          return error(ptr + "/required/" + std::to_string(i), "'required' lists a non-string " + dump((*it)[i]));
        }
      }
    }
    return Status::ok();
  }

  Expected<GrammarSeq> compile(const ojson& s, const std::string& ptr, int depth, const std::string& stem) {
    if (depth > opts_.max_depth) {
      return error(ptr, "schema nested more than " + std::to_string(opts_.max_depth) + " deep");
    }
    if (s.is_boolean()) {
      if (!s.get<bool>()) return error(ptr, "schema 'false' allows no value");
      return GrammarSeq{rule_ref(free_value(free_depth(depth)))};
    }
    if (!s.is_object()) return error(ptr, "a schema must be an object or a boolean, not " + dump(s));
    POCKET_RETURN_IF_ERROR(check_keywords(s, ptr));

    if (const ojson* any = find(s, "anyOf")) {
      for (auto it = s.begin(); it != s.end(); ++it) {
        if (it.key() != "anyOf" && kSupported.count(it.key()) != 0) {
          return error(ptr, "'anyOf' combined with '" + it.key() + "' is not supported (move '" + it.key() +
                                "' into each branch)");
        }
      }
      if (!any->is_array() || any->empty()) return error(ptr + "/anyOf", "'anyOf' must be a non-empty list of schemas");
      std::vector<GrammarSeq> alts;
      for (size_t i = 0; i < any->size(); ++i) {
        POCKET_ASSIGN_OR_RETURN(GrammarSeq seq, compile((*any)[i], ptr + "/anyOf/" + std::to_string(i), depth + 1, stem));
        alts.push_back(std::move(seq));
      }
      return GrammarSeq{rule_ref(grammar_.alt_rule(std::move(alts), stem))};
    }

    POCKET_ASSIGN_OR_RETURN(uint32_t mask, type_mask(s, ptr));
    const bool typed = mask != 0;
    bool copy = false;
    CopyMode copy_mode = CopyMode::kWords;  // ground_strings and true/"words": whole words
    if (const ojson* c = find(s, "x-pocket-copy")) {
      if (c->is_boolean()) {
        copy = c->get<bool>();
      } else if (c->is_string() && (c->get<std::string>() == "words" || c->get<std::string>() == "substring")) {
        copy = true;
        if (c->get<std::string>() == "substring") copy_mode = CopyMode::kSubstring;
      } else {
        return error(ptr, "'x-pocket-copy' must be true or \"words\" (whole words of the source), \"substring\" (any "
                          "span) or false, not " + dump(*c));
      }
      if (copy && typed && (mask & kString) == 0) return error(ptr, "'x-pocket-copy' applies to strings only");
    }
    // Keyword types and impossible bounds are checked whatever the type, so mistakes never pass silently.
    POCKET_ASSIGN_OR_RETURN(auto min_len, count_keyword(s, "minLength", ptr));
    POCKET_ASSIGN_OR_RETURN(auto max_len, count_keyword(s, "maxLength", ptr));
    POCKET_ASSIGN_OR_RETURN(auto min_items, count_keyword(s, "minItems", ptr));
    POCKET_ASSIGN_OR_RETURN(auto max_items, count_keyword(s, "maxItems", ptr));
    POCKET_ASSIGN_OR_RETURN(Bound lower, bound_keyword(s, true, ptr));
    POCKET_ASSIGN_OR_RETURN(Bound upper, bound_keyword(s, false, ptr));
    if (min_len && max_len && *min_len > *max_len) {
      return error(ptr, "impossible schema: minLength " + std::to_string(*min_len) + " > maxLength " +
                            std::to_string(*max_len));
    }
    if (min_items && max_items && *min_items > *max_items) {
      return error(ptr, "impossible schema: minItems " + std::to_string(*min_items) + " > maxItems " +
                            std::to_string(*max_items));
    }
    if (lower.present && upper.present &&
        (lower.value > upper.value || (lower.value == upper.value && (lower.exclusive || upper.exclusive)))) {
      return error(ptr, "impossible schema: no number is above the minimum " + dump(ojson(lower.value)) +
                            " and below the maximum " + dump(ojson(upper.value)));
    }

    if (find(s, "enum") != nullptr || find(s, "const") != nullptr) {
      if (copy) return error(ptr, "'x-pocket-copy' cannot be combined with 'enum' or 'const'");
      return compile_enum(s, ptr, typed ? mask : kAllTypes, min_len, max_len, lower, upper, stem);
    }

    if (!typed) {  // infer the type from the keywords present; none: any value
      if (find(s, "properties") || find(s, "required") || find(s, "additionalProperties")) mask |= kObject;
      if (find(s, "items") || min_items || max_items) mask |= kArray;
      if (min_len || max_len || copy) mask |= kString;
      if (lower.present || upper.present) mask |= kNumber;
      if (mask == 0) return GrammarSeq{rule_ref(free_value(free_depth(depth)))};
    }
    if (copy && (max_len || (min_len && *min_len > 1))) {
      return error(ptr, "'x-pocket-copy' cannot be combined with 'maxLength' or a 'minLength' above 1 (a copied span "
                        "has the length the source gives it)");
    }
    const ojson* copy_kw = find(s, "x-pocket-copy");
    const bool grounded = copy || (opts_.ground_strings && (copy_kw == nullptr) && !max_len && !(min_len && *min_len > 1));

    std::vector<GrammarSeq> alts;
    for (const auto& [name, bit] : kTypeNames) {
      if ((mask & bit) == 0) continue;
      // integer and number together: number covers integers.
      if (bit == kInteger && (mask & kNumber) != 0) continue;
      Expected<GrammarSeq> seq = GrammarSeq{};
      if (bit == kString) {
        seq = compile_string(grounded, copy_mode, min_len, max_len, ptr);
      } else if (bit == kInteger) {
        seq = compile_integer(lower, upper, ptr);
      } else if (bit == kNumber) {
        seq = compile_number(lower, upper, ptr);
      } else if (bit == kBoolean) {
        seq = GrammarSeq{rule_ref(boolean_rule())};
      } else if (bit == kNull) {
        Grammar::append_bytes(*seq, "null");
      } else if (bit == kObject) {
        seq = compile_object(s, ptr, depth);
      } else if (bit == kArray) {
        seq = compile_array(s, ptr, depth, min_items, max_items);
      }
      if (!seq.has_value()) return std::move(seq).take_status();
      alts.push_back(std::move(seq).value());
    }
    if (alts.size() == 1) return std::move(alts[0]);
    return GrammarSeq{rule_ref(grammar_.alt_rule(std::move(alts), stem))};
  }

  int free_depth(int depth) const { return std::max(1, opts_.max_depth - depth); }

  // enum / const: the values themselves, written compactly, keeping those that fit the type and bounds.
  Expected<GrammarSeq> compile_enum(const ojson& s, const std::string& ptr, uint32_t mask,
                                    const std::optional<int64_t>& min_len, const std::optional<int64_t>& max_len,
                                    const Bound& lower, const Bound& upper, const std::string& stem) {
    std::vector<const ojson*> values;
    const ojson* e = find(s, "enum");
    const ojson* c = find(s, "const");
    if (e != nullptr) {
      if (!e->is_array()) return error(ptr + "/enum", "'enum' must be a list, not " + dump(*e));
      if (e->empty()) return error(ptr + "/enum", "impossible schema: 'enum' is empty");
      for (const auto& v : *e) {
        if (c == nullptr || v == *c) values.push_back(&v);
      }
      if (values.empty()) return error(ptr, "impossible schema: 'const' is not among the 'enum' values");
    } else {
      values.push_back(c);
    }
    std::vector<GrammarSeq> alts;
    std::set<std::string> seen;
    for (const ojson* v : values) {
      if (!fits(*v, mask, min_len, max_len, lower, upper)) continue;
      const std::string text = dump(*v);
      if (!seen.insert(text).second) continue;
      GrammarSeq seq;
      Grammar::append_bytes(seq, text);
      POCKET_RETURN_IF_ERROR(spend(static_cast<int64_t>(text.size()), ptr));
      alts.push_back(std::move(seq));
    }
    if (alts.empty()) {
      return error(ptr, std::string("impossible schema: no ") + (e != nullptr ? "'enum' value" : "'const' value") +
                            " fits the schema's type, lengths and bounds");
    }
    if (alts.size() == 1) return std::move(alts[0]);
    return GrammarSeq{rule_ref(grammar_.alt_rule(std::move(alts), stem))};
  }

  static bool fits(const ojson& v, uint32_t mask, const std::optional<int64_t>& min_len,
                   const std::optional<int64_t>& max_len, const Bound& lower, const Bound& upper) {
    if (v.is_string()) {
      if ((mask & kString) == 0) return false;
      const int64_t n = count_chars(v.get<std::string>());
      return !(min_len && n < *min_len) && !(max_len && n > *max_len);
    }
    if (v.is_number()) {
      const double x = v.get<double>();
      const bool integral = v.is_number_integer() || (std::isfinite(x) && std::floor(x) == x);
      if ((mask & kNumber) == 0 && !((mask & kInteger) != 0 && integral)) return false;
      if (lower.present && (x < lower.value || (lower.exclusive && x == lower.value))) return false;
      if (upper.present && (x > upper.value || (upper.exclusive && x == upper.value))) return false;
      return true;
    }
    if (v.is_boolean()) return (mask & kBoolean) != 0;
    if (v.is_null()) return (mask & kNull) != 0;
    if (v.is_object()) return (mask & kObject) != 0;
    if (v.is_array()) return (mask & kArray) != 0;
    return false;
  }

  // ---- Strings ----

  Expected<GrammarSeq> compile_string(bool grounded, CopyMode copy_mode, const std::optional<int64_t>& min_len,
                                      const std::optional<int64_t>& max_len, const std::string& ptr) {
    GrammarSeq seq;
    Grammar::append_bytes(seq, "\"");
    if (grounded) {
      seq.push_back(copy_elem(1, copy_mode));  // at least one character of the source
    } else {
      const int64_t lo = min_len.value_or(0);
      const int64_t hi = max_len ? *max_len : -1;
      if (hi == 0) {
        // the empty string
      } else {
        POCKET_RETURN_IF_ERROR(spend((hi < 0 ? lo + 1 : hi) + 1, ptr));
        if (lo == 0 && hi < 0) {
          seq.push_back(rule_ref(free_chars()));
        } else {
          seq.push_back(rule_ref(grammar_.repeat_rule({rule_ref(string_char())}, static_cast<int32_t>(lo),
                                                      static_cast<int32_t>(hi), "chars")));
        }
      }
    }
    Grammar::append_bytes(seq, "\"");
    return seq;
  }

  // One character of JSON string content: a character other than '"', '\' and the controls, or an escape
  // (\uXXXX never a lone surrogate: a high surrogate escape is followed by a low one).
  int32_t string_char() {
    if (string_char_ >= 0) return string_char_;
    const int32_t plain = grammar_.char_class_rule({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}}, false);
    const int32_t hex = grammar_.char_class_rule({{'0', '9'}, {'A', 'F'}, {'a', 'f'}}, false);
    std::vector<GrammarSeq> esc;
    for (char c : std::string_view("\"\\/bfnrt")) {
      GrammarSeq seq;
      Grammar::append_range(seq, static_cast<uint8_t>(c), static_cast<uint8_t>(c));
      esc.push_back(std::move(seq));
    }
    const int32_t not_d = grammar_.char_class_rule({{'0', '9'}, {'A', 'C'}, {'E', 'F'}, {'a', 'c'}, {'e', 'f'}}, false);
    const int32_t d = grammar_.char_class_rule({{'D', 'D'}, {'d', 'd'}}, false);
    const int32_t high = grammar_.char_class_rule({{'8', '9'}, {'A', 'B'}, {'a', 'b'}}, false);
    const int32_t low = grammar_.char_class_rule({{'C', 'F'}, {'c', 'f'}}, false);
    GrammarSeq u1, u2, u3;
    Grammar::append_bytes(u1, "u");  // \u0000-\uCFFF, \uE000-\uFFFF
    for (int32_t r : {not_d, hex, hex, hex}) u1.push_back(rule_ref(r));
    Grammar::append_bytes(u2, "u");  // \uD000-\uD7FF
    u2.push_back(rule_ref(d));
    Grammar::append_range(u2, '0', '7');
    for (int32_t r : {hex, hex}) u2.push_back(rule_ref(r));
    Grammar::append_bytes(u3, "u");  // a surrogate pair
    for (int32_t r : {d, high, hex, hex}) u3.push_back(rule_ref(r));
    Grammar::append_bytes(u3, "\\u");
    for (int32_t r : {d, low, hex, hex}) u3.push_back(rule_ref(r));
    esc.push_back(std::move(u1));
    esc.push_back(std::move(u2));
    esc.push_back(std::move(u3));
    const int32_t escape = grammar_.alt_rule(std::move(esc), "escape");
    GrammarSeq escaped;
    Grammar::append_bytes(escaped, "\\");
    escaped.push_back(rule_ref(escape));
    string_char_ = grammar_.alt_rule({{rule_ref(plain)}, std::move(escaped)}, "char");
    return string_char_;
  }

  int32_t free_chars() {
    if (free_chars_ < 0) free_chars_ = grammar_.repeat_rule({rule_ref(string_char())}, 0, -1, "chars");
    return free_chars_;
  }

  int32_t free_string() {
    if (free_string_ >= 0) return free_string_;
    GrammarSeq seq;
    Grammar::append_bytes(seq, "\"");
    seq.push_back(rule_ref(free_chars()));
    Grammar::append_bytes(seq, "\"");
    free_string_ = grammar_.alt_rule({std::move(seq)}, "string");
    return free_string_;
  }

  int32_t boolean_rule() {
    if (boolean_ >= 0) return boolean_;
    GrammarSeq t, f;
    Grammar::append_bytes(t, "true");
    Grammar::append_bytes(f, "false");
    boolean_ = grammar_.alt_rule({std::move(t), std::move(f)}, "boolean");
    return boolean_;
  }

  // ---- Integers and numbers ----

  int32_t digit_rule() {
    if (digit_ < 0) {
      GrammarSeq seq;
      Grammar::append_range(seq, '0', '9');
      digit_ = grammar_.alt_rule({std::move(seq)}, "digit");
    }
    return digit_;
  }

  // Alternatives matching exactly the decimal numbers from `lo` to `hi` (same length, digit strings): the
  // classic split into a shared prefix, a low tail, whole middle digits and a high tail.
  static void same_length_range(const std::string& lo, const std::string& hi, GrammarSeq prefix,
                                std::vector<GrammarSeq>* out) {
    size_t i = 0;
    while (i < lo.size() && lo[i] == hi[i]) {
      Grammar::append_range(prefix, static_cast<uint8_t>(lo[i]), static_cast<uint8_t>(lo[i]));
      ++i;
    }
    if (i == lo.size()) {
      out->push_back(std::move(prefix));
      return;
    }
    if (i + 1 == lo.size()) {
      Grammar::append_range(prefix, static_cast<uint8_t>(lo[i]), static_cast<uint8_t>(hi[i]));
      out->push_back(std::move(prefix));
      return;
    }
    const size_t n = lo.size() - i - 1;  // digits after position i
    const std::string lo_rest = lo.substr(i + 1), hi_rest = hi.substr(i + 1);
    const bool lo_zeros = lo_rest.find_first_not_of('0') == std::string::npos;
    const bool hi_nines = hi_rest.find_first_not_of('9') == std::string::npos;
    const char mid_lo = lo_zeros ? lo[i] : static_cast<char>(lo[i] + 1);
    const char mid_hi = hi_nines ? hi[i] : static_cast<char>(hi[i] - 1);
    if (!lo_zeros) {
      GrammarSeq p = prefix;
      Grammar::append_range(p, static_cast<uint8_t>(lo[i]), static_cast<uint8_t>(lo[i]));
      same_length_range(lo_rest, std::string(n, '9'), std::move(p), out);
    }
    if (mid_lo <= mid_hi) {
      GrammarSeq p = prefix;
      Grammar::append_range(p, static_cast<uint8_t>(mid_lo), static_cast<uint8_t>(mid_hi));
      for (size_t k = 0; k < n; ++k) Grammar::append_range(p, '0', '9');
      out->push_back(std::move(p));
    }
    if (!hi_nines) {
      GrammarSeq p = prefix;
      Grammar::append_range(p, static_cast<uint8_t>(hi[i]), static_cast<uint8_t>(hi[i]));
      same_length_range(std::string(n, '0'), hi_rest, std::move(p), out);
    }
  }

  // A rule matching the non-negative integers lo..hi written without leading zeros.
  Expected<int32_t> int_range_rule(int64_t lo, int64_t hi, const std::string& ptr) {
    std::vector<GrammarSeq> alts;
    const std::string slo = std::to_string(lo), shi = std::to_string(hi);
    for (size_t d = slo.size(); d <= shi.size(); ++d) {
      const int64_t a = d == slo.size() ? lo : pow10(static_cast<int>(d) - 1);
      const int64_t b = d == shi.size() ? hi : pow10(static_cast<int>(d)) - 1;
      same_length_range(std::to_string(a), std::to_string(b), {}, &alts);
    }
    int64_t n = 0;
    for (const auto& a : alts) n += static_cast<int64_t>(a.size()) + 1;
    POCKET_RETURN_IF_ERROR(spend(n, ptr));
    return grammar_.alt_rule(std::move(alts), "int");
  }

  // Integer bounds from the schema's (possibly fractional) bounds; unbounded sides get kFreeIntDigits digits
  // (or the other bound's digit count when that is larger). A side beyond kMaxBound that only widens the
  // range is treated as absent; one that narrows it past the supported magnitude is an error.
  static Status integer_limits(const Bound& lower, const Bound& upper, const std::string& ptr,
                               std::optional<int64_t>* lo, std::optional<int64_t>* hi) {
    const double kMax = static_cast<double>(JsonSchemaLimits::kMaxBound);
    if (lower.present) {
      double v = lower.value;
      v = lower.exclusive ? std::floor(v) + 1 : std::ceil(v);
      if (v > kMax) return error(ptr, "the minimum " + dump(ojson(lower.value)) + " is beyond the supported ±" + std::to_string(JsonSchemaLimits::kMaxBound));
      if (v >= -kMax) *lo = static_cast<int64_t>(v);
    }
    if (upper.present) {
      double v = upper.value;
      v = upper.exclusive ? std::ceil(v) - 1 : std::floor(v);
      if (v < -kMax) return error(ptr, "the maximum " + dump(ojson(upper.value)) + " is beyond the supported ±" + std::to_string(JsonSchemaLimits::kMaxBound));
      if (v <= kMax) *hi = static_cast<int64_t>(v);
    }
    return Status::ok();
  }

  Expected<GrammarSeq> compile_integer(const Bound& lower, const Bound& upper, const std::string& ptr) {
    std::optional<int64_t> olo, ohi;
    POCKET_RETURN_IF_ERROR(integer_limits(lower, upper, ptr, &olo, &ohi));
    if (!olo && !ohi) return GrammarSeq{rule_ref(free_integer())};
    int64_t lo = olo ? *olo : -std::max(kFreeIntMax, ohi && *ohi < 0 ? -*ohi : 0);
    int64_t hi = ohi ? *ohi : std::max(kFreeIntMax, lo);
    if (!olo && ohi && *ohi < -kFreeIntMax) lo = -JsonSchemaLimits::kMaxBound;
    if (!ohi && olo && *olo > kFreeIntMax) hi = JsonSchemaLimits::kMaxBound;
    if (lo > hi) {
      return error(ptr, "impossible schema: no integer lies between the minimum " + dump(ojson(lower.value)) +
                            " and the maximum " + dump(ojson(upper.value)));
    }
    std::vector<GrammarSeq> alts;
    if (lo < 0) {  // negative part: "-" then the magnitudes max(1, -hi) .. -lo
      GrammarSeq seq;
      Grammar::append_bytes(seq, "-");
      POCKET_ASSIGN_OR_RETURN(int32_t r, int_range_rule(std::max<int64_t>(1, -hi), -lo, ptr));
      seq.push_back(rule_ref(r));
      alts.push_back(std::move(seq));
    }
    if (hi >= 0) {
      POCKET_ASSIGN_OR_RETURN(int32_t r, int_range_rule(std::max<int64_t>(0, lo), hi, ptr));
      alts.push_back({rule_ref(r)});
    }
    if (alts.size() == 1) return std::move(alts[0]);
    return GrammarSeq{rule_ref(grammar_.alt_rule(std::move(alts), "integer"))};
  }

  // "-"? ("0" | [1-9] [0-9]{0,14})
  int32_t free_integer() {
    if (free_integer_ >= 0) return free_integer_;
    free_integer_ = grammar_.alt_rule({{rule_ref(free_magnitude())}, minus(free_magnitude())}, "integer");
    return free_integer_;
  }
  GrammarSeq minus(int32_t r) {
    GrammarSeq seq;
    Grammar::append_bytes(seq, "-");
    seq.push_back(rule_ref(r));
    return seq;
  }
  int32_t free_magnitude() {
    if (free_magnitude_ >= 0) return free_magnitude_;
    GrammarSeq zero, other;
    Grammar::append_bytes(zero, "0");
    Grammar::append_range(other, '1', '9');
    other.push_back(rule_ref(grammar_.repeat_rule({rule_ref(digit_rule())}, 0, JsonSchemaLimits::kFreeIntDigits - 1, "digits")));
    free_magnitude_ = grammar_.alt_rule({std::move(zero), std::move(other)}, "magnitude");
    return free_magnitude_;
  }

  // "." and 1..15 digits, or nothing: the fraction of an unbounded number.
  int32_t any_fraction() {
    if (any_fraction_ >= 0) return any_fraction_;
    GrammarSeq frac;
    Grammar::append_bytes(frac, ".");
    frac.push_back(rule_ref(grammar_.repeat_rule({rule_ref(digit_rule())}, 1, JsonSchemaLimits::kFractionDigits, "digits")));
    any_fraction_ = grammar_.alt_rule({{}, std::move(frac)}, "fraction");
    return any_fraction_;
  }

  // A non-negative decimal: the integer part and the fraction's digits without trailing zeros.
  struct Decimal {
    int64_t int_part = 0;
    std::string frac;
    bool is_zero() const { return int_part == 0 && frac.empty(); }
  };
  // A bound on a fraction's digits (0.F compared with 0.digits).
  struct FracBound {
    std::string digits;
    bool exclusive = false;
  };

  // The exact decimal a bound's JSON text stands for (integers digit for digit; floats as the shortest text
  // that reads back as the same double, exponent expanded). False when its integer part passes kMaxBound.
  static bool parse_decimal(const std::string& text, bool* negative, Decimal* out) {
    size_t i = 0;
    *negative = !text.empty() && text[0] == '-';
    if (*negative) ++i;
    std::string digits;
    int64_t point = -1;
    for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
      if (text[i] == '.') {
        point = static_cast<int64_t>(digits.size());
      } else {
        digits += text[i];
      }
    }
    if (point < 0) point = static_cast<int64_t>(digits.size());
    if (i < text.size()) point += std::stoll(text.substr(i + 1));  // nlohmann writes e-05, e+20
    std::string int_digits, frac;
    if (point <= 0) {
      frac = std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (point >= static_cast<int64_t>(digits.size())) {
      int_digits = digits + std::string(static_cast<size_t>(point) - digits.size(), '0');
    } else {
      int_digits = digits.substr(0, static_cast<size_t>(point));
      frac = digits.substr(static_cast<size_t>(point));
    }
    int_digits.erase(0, std::min(int_digits.find_first_not_of('0'), int_digits.size()));
    frac.erase(frac.find_last_not_of('0') + 1);
    if (int_digits.size() > 18) return false;
    out->int_part = int_digits.empty() ? 0 : std::stoll(int_digits);
    out->frac = frac;
    if (out->is_zero()) *negative = false;
    return out->int_part <= JsonSchemaLimits::kMaxBound;
  }

  // A rule for the fraction of a number whose integer part has been written: nothing, or "." and 1..m digits,
  // with 0.F >= (>) lo and <= (<) hi when given. -1 when no fraction qualifies. A digit-by-digit automaton:
  // state (i, lt, ht) = i digits written, still equal to lo's (lt) / hi's (ht) first i digits.
  Expected<int32_t> fraction_rule(const std::optional<FracBound>& lo, const std::optional<FracBound>& hi, int m,
                                  const std::string& ptr) {
    std::string key = std::to_string(m);
    if (lo) key += "|>" + std::string(lo->exclusive ? "" : "=") + lo->digits;
    if (hi) key += "|<" + std::string(hi->exclusive ? "" : "=") + hi->digits;
    if (auto it = fraction_cache_.find(key); it != fraction_cache_.end()) return it->second;
    constexpr int32_t kDead = -1, kEmptyOnly = -3, kUnknown = -2;
    std::vector<std::array<int32_t, 4>> memo(static_cast<size_t>(m) + 1, {kUnknown, kUnknown, kUnknown, kUnknown});
    auto digit_of = [](const FracBound& b, int i) { return i < static_cast<int>(b.digits.size()) ? b.digits[static_cast<size_t>(i)] : '0'; };
    // Ending after i digits (the rest all zeros) keeps 0.F >= lo iff lo has no digit left and is inclusive,
    // and 0.F < hi iff hi has a (nonzero) digit left.
    auto end_ok = [&](int i, bool lt, bool ht) {
      return (!lt || (i >= static_cast<int>(lo->digits.size()) && !lo->exclusive)) &&
             (!ht || !hi->exclusive || i < static_cast<int>(hi->digits.size()));
    };
    int64_t built = 0;
    std::function<int32_t(int, bool, bool)> state;
    auto digit_alts = [&](int i, bool lt, bool ht) {
      std::vector<GrammarSeq> alts;
      if (i >= m) return alts;
      const char lo_d = lt ? digit_of(*lo, i) : '0', hi_d = ht ? digit_of(*hi, i) : '9';
      for (char c = lo_d; c <= hi_d;) {
        // Once lo's digits are matched and lo is inclusive, any rest keeps 0.F >= lo: no longer tight.
        const bool nlt = lt && c == lo_d && !(i + 1 >= static_cast<int>(lo->digits.size()) && !lo->exclusive);
        const bool nht = ht && c == hi_d;
        char e = c;  // extend the run while the next digit leads to the same state
        while (e < hi_d && !(lt && e + 1 == lo_d) && !(ht && e + 1 == hi_d) && !nlt && !nht) ++e;
        const int32_t next = state(i + 1, nlt, nht);
        if (next != kDead) {
          GrammarSeq seq;
          Grammar::append_range(seq, static_cast<uint8_t>(c), static_cast<uint8_t>(e));
          if (next != kEmptyOnly) seq.push_back(rule_ref(next));
          alts.push_back(std::move(seq));
        }
        c = static_cast<char>(e + 1);
      }
      return alts;
    };
    state = [&](int i, bool lt, bool ht) -> int32_t {
      int32_t& r = memo[static_cast<size_t>(i)][static_cast<size_t>(lt) * 2 + static_cast<size_t>(ht)];
      if (r != kUnknown) return r;
      std::vector<GrammarSeq> alts = digit_alts(i, lt, ht);
      const bool eps = end_ok(i, lt, ht);
      if (alts.empty()) {
        r = eps ? kEmptyOnly : kDead;
      } else {
        if (eps) alts.push_back({});
        built += static_cast<int64_t>(alts.size()) * 3;
        r = grammar_.alt_rule(std::move(alts), "frac-digits");
      }
      return r;
    };
    std::vector<GrammarSeq> top;
    if (end_ok(0, lo.has_value(), hi.has_value())) top.push_back({});
    for (GrammarSeq& d : digit_alts(0, lo.has_value(), hi.has_value())) {
      GrammarSeq seq;
      Grammar::append_bytes(seq, ".");
      seq.insert(seq.end(), d.begin(), d.end());
      top.push_back(std::move(seq));
    }
    POCKET_RETURN_IF_ERROR(spend(built + 4, ptr));
    const int32_t r = top.empty() ? kDead : grammar_.alt_rule(std::move(top), "fraction");
    fraction_cache_.emplace(key, r);
    return r;
  }

  // Appends the alternatives for integer parts lo..hi followed by a fraction within (flo, fhi), split by the
  // integer part's digit count d so that integer and fraction digits together stay within kNumberDigits.
  Status fraction_segment(int64_t lo, int64_t hi, const std::optional<FracBound>& flo,
                          const std::optional<FracBound>& fhi, const std::string& ptr, std::vector<GrammarSeq>* out) {
    const size_t dlo = std::to_string(lo).size(), dhi = std::to_string(hi).size();
    for (size_t d = dlo; d <= dhi; ++d) {
      const int64_t a = d == dlo ? lo : pow10(static_cast<int>(d) - 1);
      const int64_t b = d == dhi ? hi : pow10(static_cast<int>(d)) - 1;
      const int m = std::max(0, JsonSchemaLimits::kNumberDigits - static_cast<int>(d));
      POCKET_ASSIGN_OR_RETURN(const int32_t frac, fraction_rule(flo, fhi, m, ptr));
      if (frac < 0) continue;
      POCKET_ASSIGN_OR_RETURN(const int32_t r, int_range_rule(a, b, ptr));
      out->push_back({rule_ref(r), rule_ref(frac)});
    }
    return Status::ok();
  }

  // Magnitudes y with A <= y (A < y when a_excl) and y <= B (y < B when b_excl; no B: integer parts up to the
  // free digits), as integer part I and fraction: I = A's with a fraction above A's, whole integers between
  // with any fraction, I = B's with a fraction below B's.
  Status magnitudes(const Decimal& a, bool a_excl, const std::optional<Decimal>& b, bool b_excl,
                    const std::string& ptr, std::vector<GrammarSeq>* out) {
    std::optional<FracBound> flo;
    if (!a.frac.empty() || a_excl) flo = FracBound{a.frac, a_excl};  // ">= .0" is no bound
    const std::optional<FracBound> fhi = b ? std::optional<FracBound>(FracBound{b->frac, b_excl}) : std::nullopt;
    if (!b) {
      POCKET_RETURN_IF_ERROR(fraction_segment(a.int_part, a.int_part, flo, std::nullopt, ptr, out));
      const int64_t cap = std::max(kFreeIntMax, a.int_part);
      if (a.int_part < cap) POCKET_RETURN_IF_ERROR(fraction_segment(a.int_part + 1, cap, std::nullopt, std::nullopt, ptr, out));
    } else if (a.int_part == b->int_part) {
      POCKET_RETURN_IF_ERROR(fraction_segment(a.int_part, a.int_part, flo, fhi, ptr, out));
    } else if (a.int_part < b->int_part) {
      POCKET_RETURN_IF_ERROR(fraction_segment(a.int_part, a.int_part, flo, std::nullopt, ptr, out));
      if (a.int_part + 1 <= b->int_part - 1) {
        POCKET_RETURN_IF_ERROR(fraction_segment(a.int_part + 1, b->int_part - 1, std::nullopt, std::nullopt, ptr, out));
      }
      POCKET_RETURN_IF_ERROR(fraction_segment(b->int_part, b->int_part, std::nullopt, fhi, ptr, out));
    }
    return Status::ok();
  }

  // Numbers within decimal bounds, exactly: a bound's decimal (its JSON text) is compared digit by digit. A
  // bounded number is written with at most kNumberDigits digits, so that it reads back as a double ordered
  // against the bound's double exactly as the decimals are (15 digits survive a round trip through double).
  Expected<GrammarSeq> compile_number(const Bound& lower, const Bound& upper, const std::string& ptr) {
    bool lo_neg = false, hi_neg = false;
    std::optional<Decimal> lo, hi;
    if (lower.present) {
      Decimal d;
      if (parse_decimal(lower.text, &lo_neg, &d)) {
        lo = d;
      } else if (!lo_neg) {
        return error(ptr, "the minimum " + lower.text + " is beyond the supported ±" + std::to_string(JsonSchemaLimits::kMaxBound));
      }  // a minimum below -kMaxBound allows every number this grammar writes
    }
    if (upper.present) {
      Decimal d;
      if (parse_decimal(upper.text, &hi_neg, &d)) {
        hi = d;
      } else if (hi_neg) {
        return error(ptr, "the maximum " + upper.text + " is beyond the supported ±" + std::to_string(JsonSchemaLimits::kMaxBound));
      }
    }
    if (!lo && !hi) {
      if (free_number_ < 0) {
        free_number_ = grammar_.alt_rule({{rule_ref(free_integer()), rule_ref(any_fraction())}}, "number");
      }
      return GrammarSeq{rule_ref(free_number_)};
    }
    const bool lo_excl = lower.exclusive, hi_excl = upper.exclusive;
    std::vector<GrammarSeq> alts;
    // x >= 0, written without a sign.
    if (!hi || (!hi_neg && (!hi->is_zero() || !hi_excl))) {
      const bool from_lo = lo && !lo_neg;
      POCKET_RETURN_IF_ERROR(magnitudes(from_lo ? *lo : Decimal{}, from_lo && lo_excl, hi, hi_excl, ptr, &alts));
    }
    // x < 0 strictly, written "-" and its magnitude y = -x > 0 (so never "-0").
    if (!lo || (lo_neg && !lo->is_zero())) {
      std::vector<GrammarSeq> neg;
      const bool from_hi = hi && hi_neg;
      POCKET_RETURN_IF_ERROR(magnitudes(from_hi ? *hi : Decimal{}, from_hi ? hi_excl : true, lo, lo_excl, ptr, &neg));
      for (auto& n : neg) {
        GrammarSeq seq;
        Grammar::append_bytes(seq, "-");
        seq.insert(seq.end(), n.begin(), n.end());
        alts.push_back(std::move(seq));
      }
    }
    if (alts.empty()) {
      return error(ptr, "impossible schema: no number written with at most " +
                            std::to_string(JsonSchemaLimits::kNumberDigits) + " digits lies between the minimum " +
                            lower.text + " and the maximum " + upper.text);
    }
    return GrammarSeq{rule_ref(grammar_.alt_rule(std::move(alts), "number"))};
  }

  // ---- Objects and arrays ----

  static std::string rule_stem(const std::string& name) {
    std::string stem;
    for (char c : name) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) stem += c;
      else if (!stem.empty() && stem.back() != '-') stem += '-';
      if (stem.size() >= 24) break;
    }
    return stem.empty() ? "prop" : stem;
  }

  Expected<GrammarSeq> compile_object(const ojson& s, const std::string& ptr, int depth) {
    const ojson* props = find(s, "properties");
    const ojson* req = find(s, "required");
    const ojson* addl = find(s, "additionalProperties");
    if (props != nullptr && !props->is_object()) return error(ptr + "/properties", "'properties' must be an object, not " + dump(*props));
    if (addl != nullptr && !addl->is_boolean() && !addl->is_object()) {
      return error(ptr + "/additionalProperties", "'additionalProperties' must be a boolean or a schema, not " + dump(*addl));
    }
    std::set<std::string> required;
    if (req != nullptr) {
      if (!req->is_array()) return error(ptr + "/required", "'required' must be a list of property names, not " + dump(*req));
      for (size_t i = 0; i < req->size(); ++i) {
        const ojson& n = (*req)[i];
        if (!n.is_string()) return error(ptr + "/required/" + std::to_string(i), "'required' lists a non-string " + dump(n));
        if (props == nullptr || props->find(n.get<std::string>()) == props->end()) {
          return error(ptr + "/required/" + std::to_string(i),
                       "impossible schema: required property " + dump(n) + " is not in 'properties'");
        }
        required.insert(n.get<std::string>());
      }
    }
    GrammarSeq seq;
    if (props == nullptr) {  // no listed properties: any object, or only {} when nothing else is allowed
      if (addl != nullptr && addl->is_boolean() && !addl->get<bool>()) {
        Grammar::append_bytes(seq, "{}");
        return seq;
      }
      return GrammarSeq{rule_ref(free_object(free_depth(depth)))};
    }
    // member[i] = "key":value. After a written property, rest[i] writes properties i.. each with a leading
    // comma; before any, first(i) writes the first chosen property without one. rest[n] and first(n) are
    // empty. Optional properties add an alternative that skips them.
    const size_t n = props->size();
    std::vector<int32_t> member(n);
    std::vector<bool> is_req(n);
    size_t i = 0;
    for (auto it = props->begin(); it != props->end(); ++it, ++i) {
      const std::string child = ptr + "/properties/" + escape_pointer(it.key());
      POCKET_ASSIGN_OR_RETURN(GrammarSeq value, compile(it.value(), child, depth + 1, rule_stem(it.key())));
      GrammarSeq m;
      Grammar::append_bytes(m, dump(ojson(it.key())) + ":");
      m.insert(m.end(), value.begin(), value.end());
      POCKET_RETURN_IF_ERROR(spend(static_cast<int64_t>(m.size()) + 4, child));
      member[i] = grammar_.alt_rule({std::move(m)}, rule_stem(it.key()) + "-kv");
      is_req[i] = required.count(it.key()) != 0;
    }
    std::vector<int32_t> rest(n + 1, -1);  // -1: empty
    for (size_t k = n; k-- > 1;) {
      GrammarSeq with;
      Grammar::append_bytes(with, ",");
      with.push_back(rule_ref(member[k]));
      if (rest[k + 1] >= 0) with.push_back(rule_ref(rest[k + 1]));
      std::vector<GrammarSeq> alts;
      alts.push_back(std::move(with));
      if (!is_req[k]) alts.push_back(rest[k + 1] >= 0 ? GrammarSeq{rule_ref(rest[k + 1])} : GrammarSeq{});
      rest[k] = grammar_.alt_rule(std::move(alts), "rest");
    }
    size_t first_req = n;
    for (size_t k = 0; k < n; ++k) {
      if (is_req[k]) {
        first_req = k;
        break;
      }
    }
    auto lead = [&](size_t k) {  // member k then the rest after it
      GrammarSeq l{rule_ref(member[k])};
      if (rest[k + 1] >= 0) l.push_back(rule_ref(rest[k + 1]));
      return l;
    };
    GrammarSeq body = first_req < n ? lead(first_req) : GrammarSeq{};
    for (size_t k = std::min(first_req, n); k-- > 0;) {
      body = {rule_ref(grammar_.alt_rule({lead(k), std::move(body)}, "first"))};
    }
    Grammar::append_bytes(seq, "{");
    seq.insert(seq.end(), body.begin(), body.end());
    Grammar::append_bytes(seq, "}");
    return seq;
  }

  Expected<GrammarSeq> compile_array(const ojson& s, const std::string& ptr, int depth,
                                     const std::optional<int64_t>& min_items, const std::optional<int64_t>& max_items) {
    const ojson* items = find(s, "items");
    GrammarSeq item;
    if (items == nullptr) {
      item = {rule_ref(free_value(free_depth(depth)))};
    } else if (items->is_array()) {
      return error(ptr + "/items", "unsupported keyword 'items' as a list (tuple validation)");
    } else {
      POCKET_ASSIGN_OR_RETURN(item, compile(*items, ptr + "/items", depth + 1, "item"));
    }
    const int64_t lo = min_items.value_or(0);
    const int64_t hi = max_items ? *max_items : -1;
    GrammarSeq seq;
    Grammar::append_bytes(seq, "[");
    if (hi != 0) {
      POCKET_RETURN_IF_ERROR(spend((hi < 0 ? lo + 1 : hi) + 1, ptr));
      const int32_t item_rule = item.size() == 1 && item[0].kind == ElemKind::kRule ? item[0].rule
                                                                                      : grammar_.alt_rule({item}, "item");
      GrammarSeq more;
      Grammar::append_bytes(more, ",");
      more.push_back(rule_ref(item_rule));
      GrammarSeq list{rule_ref(item_rule)};
      const int32_t more_lo = static_cast<int32_t>(std::max<int64_t>(0, lo - 1));
      const int32_t more_hi = hi < 0 ? -1 : static_cast<int32_t>(hi - 1);
      if (more_hi != 0) list.push_back(rule_ref(grammar_.repeat_rule(more, more_lo, more_hi, "items")));
      if (lo == 0) {
        seq.push_back(rule_ref(grammar_.alt_rule({std::move(list), {}}, "list")));
      } else {
        seq.insert(seq.end(), list.begin(), list.end());
      }
    }
    Grammar::append_bytes(seq, "]");
    return seq;
  }

  // ---- Any JSON value, nesting at most `depth` containers ----

  int32_t free_value(int depth) {
    depth = std::clamp(depth, 0, opts_.max_depth);
    if (free_value_.empty()) free_value_.assign(static_cast<size_t>(opts_.max_depth) + 1, -1);
    int32_t& r = free_value_[static_cast<size_t>(depth)];
    if (r >= 0) return r;
    std::vector<GrammarSeq> alts;
    alts.push_back({rule_ref(free_string())});
    alts.push_back({rule_ref(free_number_rule())});
    alts.push_back({rule_ref(boolean_rule())});
    GrammarSeq null;
    Grammar::append_bytes(null, "null");
    alts.push_back(std::move(null));
    if (depth > 0) {
      alts.push_back({rule_ref(free_object(depth))});
      alts.push_back({rule_ref(free_array(depth))});
    }
    r = grammar_.alt_rule(std::move(alts), "any");
    return r;
  }

  int32_t free_number_rule() {
    if (free_number_ < 0) {
      free_number_ = grammar_.alt_rule({{rule_ref(free_integer()), rule_ref(any_fraction())}}, "number");
    }
    return free_number_;
  }

  // "{" ( string ":" value ( "," string ":" value )* )? "}" with values nesting depth - 1 containers.
  int32_t free_object(int depth) {
    depth = std::clamp(depth, 1, opts_.max_depth);
    if (free_object_.empty()) free_object_.assign(static_cast<size_t>(opts_.max_depth) + 1, -1);
    int32_t& cached = free_object_[static_cast<size_t>(depth)];
    if (cached >= 0) return cached;
    const int32_t value = free_value(depth - 1);
    GrammarSeq member{rule_ref(free_string())};
    Grammar::append_bytes(member, ":");
    member.push_back(rule_ref(value));
    const int32_t kv = grammar_.alt_rule({member}, "member");
    GrammarSeq more;
    Grammar::append_bytes(more, ",");
    more.push_back(rule_ref(kv));
    GrammarSeq list{rule_ref(kv), rule_ref(grammar_.repeat_rule(more, 0, -1, "members"))};
    GrammarSeq full, empty;
    Grammar::append_bytes(full, "{");
    full.insert(full.end(), list.begin(), list.end());
    Grammar::append_bytes(full, "}");
    Grammar::append_bytes(empty, "{}");
    const int32_t r = grammar_.alt_rule({std::move(empty), std::move(full)}, "object");
    free_object_[static_cast<size_t>(depth)] = r;
    return r;
  }

  int32_t free_array(int depth) {
    depth = std::clamp(depth, 1, opts_.max_depth);
    if (free_array_.empty()) free_array_.assign(static_cast<size_t>(opts_.max_depth) + 1, -1);
    int32_t& cached = free_array_[static_cast<size_t>(depth)];
    if (cached >= 0) return cached;
    const int32_t value = free_value(depth - 1);
    GrammarSeq more;
    Grammar::append_bytes(more, ",");
    more.push_back(rule_ref(value));
    GrammarSeq full, empty;
    Grammar::append_bytes(full, "[");
    full.push_back(rule_ref(value));
    full.push_back(rule_ref(grammar_.repeat_rule(more, 0, -1, "values")));
    Grammar::append_bytes(full, "]");
    Grammar::append_bytes(empty, "[]");
    const int32_t r = grammar_.alt_rule({std::move(empty), std::move(full)}, "array");
    free_array_[static_cast<size_t>(depth)] = r;
    return r;
  }

  const JsonSchemaOptions& opts_;
  Grammar grammar_;
  int64_t budget_ = 0;
  int32_t string_char_ = -1, free_chars_ = -1, free_string_ = -1, boolean_ = -1, digit_ = -1;
  int32_t free_integer_ = -1, free_magnitude_ = -1, free_number_ = -1;
  int32_t any_fraction_ = -1;
  std::unordered_map<std::string, int32_t> fraction_cache_;  // fraction_rule by bounds and digit count
  std::vector<int32_t> free_value_, free_object_, free_array_;  // by remaining depth
};

}  // namespace

Expected<Grammar> compile_json_schema(std::string_view schema_json, const JsonSchemaOptions& opts) {
  try {
    return SchemaCompiler(opts).compile_text(schema_json);
  } catch (const std::exception& e) {  // the JSON library's; nothing may escape this layer
    return invalid_argument(std::string("[json-schema] ") + e.what());
  }
}

Expected<std::string> json_schema_to_gbnf(std::string_view schema_json, const JsonSchemaOptions& opts) {
  POCKET_ASSIGN_OR_RETURN(Grammar g, compile_json_schema(schema_json, opts));
  return g.to_text();
}

}  // namespace pocket
