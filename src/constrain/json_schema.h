// JSON schema (a subset) -> Grammar producing compact JSON valid against the schema: properties in the
// schema's order, optional ones omissible, numeric ranges and string lengths enforced by the grammar, and
// pocket's "x-pocket-copy" strings restricted to spans of the source text. docs/constrained-decoding.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "constrain/grammar.h"
#include "core/status.h"

namespace pocket {

struct JsonSchemaOptions {
  // Every plain string (no enum/const, no minLength above 1, no maxLength) becomes a span of the source
  // text, as if marked "x-pocket-copy": true.
  bool ground_strings = false;
  // Deepest nesting of schemas (objects, arrays, anyOf) accepted, and of the JSON values generated for
  // schemas that allow any value (`{}`, the empty schema text, objects without "properties").
  int max_depth = 16;
};

// Bounds on what a schema may ask for, so that the grammar stays small.
struct JsonSchemaLimits {
  static constexpr size_t kMaxSchemaBytes = 1 << 20;
  static constexpr int kMaxJsonNesting = 256;   // brackets in the schema text itself
  static constexpr int kMaxDepthOption = 64;    // JsonSchemaOptions::max_depth at most
  static constexpr int64_t kMaxCount = 4096;    // minLength, maxLength, minItems, maxItems
  static constexpr int64_t kMaxBudget = 1 << 20;  // sum of the counts above over the schema (grammar size)
  static constexpr int kFreeIntDigits = 15;     // integer digits of an unbounded integer or number
  static constexpr int kFractionDigits = 15;    // fraction digits of an unbounded number at most
  // Digits of a number with bounds, integer part and fraction together: 15 decimal digits survive a round
  // trip through a double, so the value an application reads is ordered against the bounds as written.
  static constexpr int kNumberDigits = 15;
  static constexpr int64_t kMaxBound = 999999999999999999;  // |minimum|, |maximum| (18 digits)
};

// Compiles `schema_json` (the subset in docs/constrained-decoding.md) into a finalized Grammar. Empty (or
// blank) text means any JSON object. Errors (kInvalidArgument) name the place with a JSON pointer:
// "[json-schema] unsupported keyword 'pattern' at /properties/sku".
Expected<Grammar> compile_json_schema(std::string_view schema_json, const JsonSchemaOptions& opts = {});

// The compiled grammar as GBNF-like text (Grammar::to_text), for printing.
Expected<std::string> json_schema_to_gbnf(std::string_view schema_json, const JsonSchemaOptions& opts = {});

}  // namespace pocket
