// An independent validator for the JSON-schema subset that json_schema.h compiles: written apart from the
// compiler (it never looks at a grammar), so that tests and the task layer can check a generated value
// against the schema's plain meaning. Standard JSON-schema semantics, plus pocket's "x-pocket-copy".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pocket {

// Every way `value` fails `schema`, as "<JSON pointer of the value>: what" ("/price: 120 is above the
// maximum 100"); empty when valid. Keywords: type, properties, required, additionalProperties, enum,
// const, minLength/maxLength (code points), minimum/maximum/exclusiveMinimum/exclusiveMaximum, items,
// minItems/maxItems, anyOf; annotations are ignored; any other keyword is reported as an error (never
// silently passed). "x-pocket-copy": true or "words" — and, with `ground_strings`, every string schema
// naming type "string" without enum/const/maxLength/minLength > 1/"x-pocket-copy" — requires a non-empty
// string that occurs in `source` starting and ending at word boundaries (no ASCII letter or digit on both
// sides of either end); "x-pocket-copy": "substring" requires only that it occurs in `source`.
std::vector<std::string> validate_json(const nlohmann::json& schema, const nlohmann::json& value,
                                       std::string_view source = {}, bool ground_strings = false);

}  // namespace pocket
