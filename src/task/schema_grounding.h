// Grounding a JSON schema in one request's text: string properties marked "x-pocket-copy" (all plain ones
// with ground_strings) stay spans of the text through the grammar's copy terminal; number and integer
// properties so marked become an enum of the numbers the text writes. The result is the schema the
// grammar is compiled from and the validator checks against.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace pocket {

// `schema` as parsed JSON (an object). Errors: a required grounded number the text does not contain.
// Optional grounded numbers the text lacks are dropped from "properties".
Expected<nlohmann::ordered_json> ground_schema(const nlohmann::ordered_json& schema, std::string_view source, bool ground_strings);

// Whether the schema (or a sub-schema) needs per-request specialisation: a grounded number anywhere.
bool has_grounded_numbers(const nlohmann::ordered_json& schema, bool ground_strings);

}  // namespace pocket
