// Guarded JSON parsing; see json_guard.h.
#include "tokenizer/json_guard.h"

#include "tokenizer/utf8.h"

namespace pocket {

Expected<nlohmann::json> parse_json_guarded(std::string_view text, const std::string& what) {
  const size_t bad = first_invalid_utf8(text);
  if (bad != text.size()) {
    return corrupt_file("[tokenizer] JSON is not valid UTF-8 at byte " + std::to_string(bad) + ": " + what);
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return corrupt_file("[tokenizer] JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels: " + what);
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return corrupt_file("[tokenizer] invalid JSON: " + what);
    return j;
  } catch (const std::exception& e) {  // allocation failures and the like
    return corrupt_file(std::string("[tokenizer] invalid JSON (") + e.what() + "): " + what);
  }
}

}  // namespace pocket
