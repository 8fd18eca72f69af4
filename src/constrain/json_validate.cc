// The validator: a direct recursive reading of each keyword's meaning over (schema, value), collecting
// errors with the value's JSON pointer. Numbers compare as long double (exact for 64-bit integers).
#include "constrain/json_validate.h"

#include <cmath>
#include <set>

namespace pocket {
namespace {

using nlohmann::json;

constexpr int kMaxSchemaDepth = 128;

const std::set<std::string_view> kKnown = {"type",      "properties", "required", "additionalProperties", "enum",
                                           "const",     "minLength",  "maxLength", "minimum",             "maximum",
                                           "exclusiveMinimum", "exclusiveMaximum", "items", "minItems",   "maxItems",
                                           "anyOf",     "x-pocket-copy", "title",  "description",          "$schema",
                                           "$id",       "$comment",   "default",  "examples",             "deprecated",
                                           "readOnly",  "writeOnly"};

std::string show(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string child(const std::string& ptr, const std::string& key) {
  std::string out = ptr + "/";
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

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

long double as_number(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

bool is_integer(const json& v) {
  if (v.is_number_integer()) return true;  // includes unsigned
  if (!v.is_number_float()) return false;
  const double x = v.get<double>();
  return std::isfinite(x) && std::floor(x) == x;
}

bool has_type(const json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "integer") return is_integer(v);
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  return false;
}

const char* type_of(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_boolean()) return "a boolean";
  if (v.is_null()) return "null";
  if (v.is_object()) return "an object";
  return "an array";
}

// Word characters of "x-pocket-copy" whole-word spans: ASCII letters and digits (any other byte, every
// byte of a non-ASCII character included, is a boundary).
bool word_byte(char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

// Does `s` (non-empty) occur in `source` at some place where it neither starts inside a word (its first
// byte and the byte before it both word characters) nor ends inside one (its last byte and the byte after)?
bool occurs_as_whole_words(std::string_view source, std::string_view s) {
  for (size_t at = source.find(s); at != std::string_view::npos; at = source.find(s, at + 1)) {
    const size_t end = at + s.size();
    const bool starts_inside = word_byte(s.front()) && at > 0 && word_byte(source[at - 1]);
    const bool ends_inside = word_byte(s.back()) && end < source.size() && word_byte(source[end]);
    if (!starts_inside && !ends_inside) return true;
  }
  return false;
}

// What "x-pocket-copy" (or ground_strings) asks of a string.
enum class Grounding { kNone, kWords, kSubstring, kBadValue };

class Validator {
 public:
  Validator(std::string_view source, bool ground) : source_(source), ground_(ground) {}

  void check(const json& schema, const json& value, const std::string& at, int depth) {
    if (depth > kMaxSchemaDepth) return fail(at, "the schema nests more than " + std::to_string(kMaxSchemaDepth) + " deep");
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(at, "no value is allowed here (schema false)");
      return;
    }
    if (!schema.is_object()) return fail(at, "the schema is not an object or a boolean: " + show(schema));
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      if (kKnown.count(it.key()) == 0 && it.key().rfind("x-", 0) != 0) {
        fail(at, "the schema's keyword '" + it.key() + "' is not supported");
      }
    }
    if (auto it = schema.find("anyOf"); it != schema.end()) check_any_of(*it, value, at, depth);
    if (auto it = schema.find("type"); it != schema.end()) check_type(*it, value, at);
    if (auto it = schema.find("enum"); it != schema.end()) {
      bool found = false;
      if (it->is_array()) {
        for (const auto& e : *it) found = found || e == value;
      }
      if (!found) fail(at, show(value) + " is not one of the enum values " + show(*it));
    }
    if (auto it = schema.find("const"); it != schema.end() && *it != value) {
      fail(at, show(value) + " is not the const value " + show(*it));
    }
    if (value.is_string()) check_string(schema, value.get<std::string>(), at);
    if (value.is_number()) check_number(schema, value, at);
    if (value.is_object()) check_object(schema, value, at, depth);
    if (value.is_array()) check_array(schema, value, at, depth);
  }

  std::vector<std::string> take() { return std::move(errors_); }

 private:
  void fail(const std::string& at, const std::string& what) {
    errors_.push_back((at.empty() ? std::string("(root)") : at) + ": " + what);
  }

  void check_any_of(const json& branches, const json& value, const std::string& at, int depth) {
    if (!branches.is_array() || branches.empty()) return fail(at, "the schema's anyOf is not a non-empty list");
    std::string first;
    for (const auto& b : branches) {
      Validator sub(source_, ground_);
      sub.check(b, value, at, depth + 1);
      if (sub.errors_.empty()) return;
      if (first.empty()) first = sub.errors_[0];
    }
    fail(at, show(value) + " matches none of the anyOf branches (the first says: " + first + ")");
  }

  void check_type(const json& type, const json& value, const std::string& at) {
    if (type.is_string()) {
      if (!has_type(value, type.get<std::string>())) {
        fail(at, "expected " + type.get<std::string>() + ", got " + type_of(value) + " " + show(value));
      }
      return;
    }
    if (type.is_array()) {
      for (const auto& t : type) {
        if (t.is_string() && has_type(value, t.get<std::string>())) return;
      }
      return fail(at, "expected one of the types " + show(type) + ", got " + type_of(value) + " " + show(value));
    }
    fail(at, "the schema's type is not a name or a list: " + show(type));
  }

  // Does this string schema require a span of the source, and which?
  Grounding grounded(const json& schema) const {
    if (auto it = schema.find("x-pocket-copy"); it != schema.end()) {
      if (it->is_boolean()) return it->get<bool>() ? Grounding::kWords : Grounding::kNone;
      if (*it == "words") return Grounding::kWords;
      if (*it == "substring") return Grounding::kSubstring;
      return Grounding::kBadValue;
    }
    if (!ground_) return Grounding::kNone;
    const auto t = schema.find("type");
    bool names_string = false;
    if (t != schema.end() && t->is_string()) names_string = t->get<std::string>() == "string";
    if (t != schema.end() && t->is_array()) {
      for (const auto& x : *t) names_string = names_string || (x.is_string() && x.get<std::string>() == "string");
    }
    if (!names_string || schema.contains("enum") || schema.contains("const") || schema.contains("maxLength")) {
      return Grounding::kNone;
    }
    if (auto m = schema.find("minLength"); m != schema.end() && m->is_number() && as_number(*m) > 1) {
      return Grounding::kNone;
    }
    return Grounding::kWords;
  }

  void check_string(const json& schema, const std::string& s, const std::string& at) {
    const size_t n = code_points(s);
    if (auto it = schema.find("minLength"); it != schema.end() && it->is_number() && n < as_number(*it)) {
      fail(at, "the string has " + std::to_string(n) + " characters, fewer than minLength " + show(*it));
    }
    if (auto it = schema.find("maxLength"); it != schema.end() && it->is_number() && n > as_number(*it)) {
      fail(at, "the string has " + std::to_string(n) + " characters, more than maxLength " + show(*it));
    }
    const Grounding g = grounded(schema);
    if (g == Grounding::kBadValue) {
      fail(at, "the schema's 'x-pocket-copy' is " + show(schema["x-pocket-copy"]) +
                   " (expected true, false, \"words\" or \"substring\")");
    } else if (g != Grounding::kNone) {
      if (s.empty()) {
        fail(at, "a copied string must not be empty");
      } else if (source_.find(s) == std::string_view::npos) {
        fail(at, show(json(s)) + " is not a span of the source text");
      } else if (g == Grounding::kWords && !occurs_as_whole_words(source_, s)) {
        fail(at, show(json(s)) + " occurs in the source text only inside a word (a copied span starts and ends at "
                 "word boundaries)");
      }
    }
  }

  void check_number(const json& schema, const json& v, const std::string& at) {
    const long double x = as_number(v);
    auto bound = [&](const char* key) -> const json* {
      auto it = schema.find(key);
      return it != schema.end() && it->is_number() ? &*it : nullptr;
    };
    auto flag = [&](const char* key) {
      auto it = schema.find(key);
      return it != schema.end() && it->is_boolean() && it->get<bool>();
    };
    if (const json* m = bound("minimum")) {
      const bool excl = flag("exclusiveMinimum");  // draft 4
      if (x < as_number(*m) || (excl && x == as_number(*m))) {
        fail(at, show(v) + " is below the minimum " + show(*m) + (excl ? " (exclusive)" : ""));
      }
    }
    if (const json* m = bound("maximum")) {
      const bool excl = flag("exclusiveMaximum");
      if (x > as_number(*m) || (excl && x == as_number(*m))) {
        fail(at, show(v) + " is above the maximum " + show(*m) + (excl ? " (exclusive)" : ""));
      }
    }
    if (const json* m = bound("exclusiveMinimum"); m != nullptr && x <= as_number(*m)) {
      fail(at, show(v) + " is not above the exclusive minimum " + show(*m));
    }
    if (const json* m = bound("exclusiveMaximum"); m != nullptr && x >= as_number(*m)) {
      fail(at, show(v) + " is not below the exclusive maximum " + show(*m));
    }
  }

  void check_object(const json& schema, const json& v, const std::string& at, int depth) {
    const auto props = schema.find("properties");
    const bool has_props = props != schema.end() && props->is_object();
    if (auto req = schema.find("required"); req != schema.end() && req->is_array()) {
      for (const auto& name : *req) {
        if (name.is_string() && !v.contains(name.get<std::string>())) {
          fail(at, "the required property " + show(name) + " is missing");
        }
      }
    }
    const auto addl = schema.find("additionalProperties");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string where = child(at, it.key());
      if (has_props) {
        if (auto p = props->find(it.key()); p != props->end()) {
          check(*p, it.value(), where, depth + 1);
          continue;
        }
      }
      if (addl != schema.end()) {
        if (addl->is_boolean() && !addl->get<bool>()) {
          fail(at, "the property " + show(json(it.key())) + " is not allowed (additionalProperties is false)");
        } else if (addl->is_object()) {
          check(*addl, it.value(), where, depth + 1);
        }
      }
    }
  }

  void check_array(const json& schema, const json& v, const std::string& at, int depth) {
    if (auto it = schema.find("minItems"); it != schema.end() && it->is_number() && v.size() < as_number(*it)) {
      fail(at, "the array has " + std::to_string(v.size()) + " items, fewer than minItems " + show(*it));
    }
    if (auto it = schema.find("maxItems"); it != schema.end() && it->is_number() && v.size() > as_number(*it)) {
      fail(at, "the array has " + std::to_string(v.size()) + " items, more than maxItems " + show(*it));
    }
    if (auto items = schema.find("items"); items != schema.end()) {
      if (items->is_array()) return fail(at, "the schema's items is a list (tuple validation is not supported)");
      for (size_t i = 0; i < v.size(); ++i) check(*items, v[i], at + "/" + std::to_string(i), depth + 1);
    }
  }

  std::string_view source_;
  bool ground_;
  std::vector<std::string> errors_;
};

}  // namespace

std::vector<std::string> validate_json(const nlohmann::json& schema, const nlohmann::json& value,
                                       std::string_view source, bool ground_strings) {
  Validator v(source, ground_strings);
  try {
    v.check(schema, value, "", 0);
  } catch (const std::exception& e) {  // the JSON library's; reported, never thrown to the caller
    return {std::string("(root): the validator failed: ") + e.what()};
  }
  return v.take();
}

}  // namespace pocket
