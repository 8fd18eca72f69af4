// Grounding a schema in the request's text (schema_grounding.h).
#include "task/schema_grounding.h"

#include <algorithm>
#include <cmath>

#include "task/task.h"

namespace pocket {

namespace {

bool is_type(const nlohmann::ordered_json& node, const char* t) {
  auto it = node.find("type");
  return it != node.end() && it->is_string() && *it == t;
}

// "x-pocket-copy": true, "words" or "substring" (the copy modes of docs/constrained-decoding.md; for a number
// every mode means the same: one of the numbers the text writes).
bool copy_marked(const nlohmann::ordered_json& node) {
  auto it = node.find("x-pocket-copy");
  if (it == node.end()) return false;
  if (it->is_boolean()) return it->get<bool>();
  return it->is_string() && (*it == "words" || *it == "substring");
}

bool plain_value(const nlohmann::ordered_json& node) { return !node.contains("enum") && !node.contains("const"); }

bool grounded_number(const nlohmann::ordered_json& node, bool ground_strings) {
  return node.is_object() && (is_type(node, "number") || is_type(node, "integer")) && plain_value(node) &&
         (copy_marked(node) || ground_strings);
}

bool in_range(const nlohmann::ordered_json& node, double v) {
  auto num = [&](const char* k, double* out) {
    auto it = node.find(k);
    if (it == node.end() || !it->is_number()) return false;
    *out = it->get<double>();
    return true;
  };
  double b = 0;
  if (num("minimum", &b) && v < b) return false;
  if (num("maximum", &b) && v > b) return false;
  if (num("exclusiveMinimum", &b) && v <= b) return false;
  if (num("exclusiveMaximum", &b) && v >= b) return false;
  return true;
}

// Grounds `node` in place. Returns false when it cannot be satisfied from the text: a grounded number with no
// candidate in it, an object missing such a required property, an anyOf with no satisfiable alternative.
// Optional properties that cannot be satisfied are dropped, as are unsatisfiable anyOf alternatives.
bool ground_node(nlohmann::ordered_json& node, const std::vector<nlohmann::ordered_json>& numbers, bool ground_strings,
                 const std::string& path, std::string* why) {
  if (!node.is_object()) return true;
  if (grounded_number(node, ground_strings)) {
    const bool integer = is_type(node, "integer");
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (const nlohmann::ordered_json& n : numbers) {
      if (integer && !n.is_number_integer()) continue;
      if (in_range(node, n.get<double>())) values.push_back(n);
    }
    if (values.empty()) {
      if (why->empty()) *why = path.empty() ? "/" : path;
      return false;
    }
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const char* k : {"title", "description"}) {
      if (node.contains(k)) out[k] = node[k];
    }
    out["type"] = node["type"];
    out["enum"] = std::move(values);
    node = std::move(out);
    return true;
  }
  if (ground_strings && is_type(node, "string") && plain_value(node) && !node.contains("x-pocket-copy") &&
      !node.contains("maxLength") && node.value("minLength", 0) <= 1) {
    node["x-pocket-copy"] = true;
  }
  if (auto it = node.find("properties"); it != node.end() && it->is_object()) {
    std::vector<std::string> drop;
    for (auto& [key, sub] : it->items()) {
      if (!ground_node(sub, numbers, ground_strings, path + "/properties/" + key, why)) drop.push_back(key);
    }
    const nlohmann::ordered_json* req = node.contains("required") && node["required"].is_array() ? &node["required"] : nullptr;
    for (const std::string& k : drop) {
      if (req != nullptr && std::find(req->begin(), req->end(), k) != req->end()) return false;
      it->erase(k);
    }
  }
  if (auto it = node.find("items"); it != node.end() && !ground_node(*it, numbers, ground_strings, path + "/items", why)) {
    // No item can be produced: only the empty array is left.
    if (node.value("minItems", 0) > 0) return false;
    node["maxItems"] = 0;
    node.erase("items");
  }
  if (auto it = node.find("anyOf"); it != node.end() && it->is_array()) {
    nlohmann::ordered_json kept = nlohmann::ordered_json::array();
    for (size_t i = 0; i < it->size(); ++i) {
      nlohmann::ordered_json& sub = (*it)[i];
      if (ground_node(sub, numbers, ground_strings, path + "/anyOf/" + std::to_string(i), why)) kept.push_back(std::move(sub));
    }
    if (kept.empty()) return false;
    *it = std::move(kept);
  }
  return true;
}

}  // namespace

bool has_grounded_numbers(const nlohmann::ordered_json& node, bool ground_strings) {
  if (!node.is_object()) return false;
  if (grounded_number(node, ground_strings)) return true;
  if (auto it = node.find("properties"); it != node.end() && it->is_object()) {
    for (auto& [key, sub] : it->items()) {
      if (has_grounded_numbers(sub, ground_strings)) return true;
    }
  }
  if (auto it = node.find("items"); it != node.end() && has_grounded_numbers(*it, ground_strings)) return true;
  if (auto it = node.find("anyOf"); it != node.end() && it->is_array()) {
    for (auto& sub : *it) {
      if (has_grounded_numbers(sub, ground_strings)) return true;
    }
  }
  return false;
}

Expected<nlohmann::ordered_json> ground_schema(const nlohmann::ordered_json& schema, std::string_view source, bool ground_strings) {
  nlohmann::ordered_json out = schema;
  std::string why;
  if (!ground_node(out, numbers_in_text(source), ground_strings, "", &why)) {
    return invalid_argument("[extract] the schema needs a number written in the text at " + why +
                            " (\"x-pocket-copy\" on a required number or integer) and the text has none in range");
  }
  return out;
}

}  // namespace pocket
