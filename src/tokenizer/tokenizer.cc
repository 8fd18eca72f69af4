// Tokenizer methods shared by every model.
#include "tokenizer/tokenizer.h"

#include "tokenizer/utf8.h"

namespace pocket {

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string raw;
  int32_t prev = -1;
  for (int32_t id : ids) {
    raw += decode_piece(prev, id);
    prev = id;
  }
  if (is_valid_utf8(raw)) return raw;
  std::string out;
  append_sanitized_utf8(raw, &out);
  return out;
}

}  // namespace pocket
