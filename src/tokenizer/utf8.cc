// UTF-8 decoding with maximal-subpart replacement; see utf8.h.
#include "tokenizer/utf8.h"

namespace pocket {

size_t utf8_decode(std::string_view s, uint32_t* cp, bool* valid) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const uint8_t b0 = p[0];
  if (b0 < 0x80) {
    *cp = b0;
    *valid = true;
    return 1;
  }
  const size_t len = utf8_sequence_length(b0);
  if (len == 0) {
    *cp = kReplacementChar;
    *valid = false;
    return 1;
  }
  uint8_t lo, hi;
  utf8_second_byte_range(b0, &lo, &hi);
  uint32_t v = b0 & (0xFF >> (len + 1));
  for (size_t i = 1; i < len; ++i) {
    if (i >= s.size() || p[i] < lo || p[i] > hi) {  // truncated or ill-formed: the prefix is one subpart
      *cp = kReplacementChar;
      *valid = false;
      return i;
    }
    v = (v << 6) | (p[i] & 0x3F);
    lo = 0x80;
    hi = 0xBF;
  }
  *cp = v;
  *valid = true;
  return len;
}

size_t first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    uint32_t cp;
    bool ok;
    const size_t n = utf8_decode(s.substr(i), &cp, &ok);
    if (!ok) return i;
    i += n;
  }
  return s.size();
}

bool is_valid_utf8(std::string_view s) { return first_invalid_utf8(s) == s.size(); }

void append_sanitized_utf8(std::string_view s, std::string* out) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t bad = i + first_invalid_utf8(s.substr(i));
    out->append(s.data() + i, bad - i);
    if (bad == s.size()) break;
    uint32_t cp;
    bool ok;
    i = bad + utf8_decode(s.substr(bad), &cp, &ok);
    out->append(kReplacementUtf8);
  }
}

std::string_view sanitize_utf8(std::string_view s, std::string* storage) {
  if (is_valid_utf8(s)) return s;
  storage->clear();
  append_sanitized_utf8(s, storage);
  return *storage;
}

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace pocket
