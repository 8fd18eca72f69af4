// Non-throwing JSON parsing for untrusted tokenizer files: rejects invalid UTF-8 and nesting deeper than a
// bound before handing the text to nlohmann::json, and never lets an exception escape.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace pocket {

inline constexpr int kMaxJsonDepth = 64;

Expected<nlohmann::json> parse_json_guarded(std::string_view text, const std::string& what);

}  // namespace pocket
