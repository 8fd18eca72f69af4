// UTF-8 helpers shared by the tokenizers: decoding one code point with the Unicode "maximal subpart"
// rule for invalid input, validation, and sanitising (every invalid subpart becomes U+FFFD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pocket {

inline constexpr uint32_t kReplacementChar = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Decodes the code point at the start of `s` (non-empty). Returns the number of bytes consumed (1..4).
// On invalid input sets *valid = false, *cp = U+FFFD and consumes the maximal subpart of an ill-formed
// sequence (Unicode 15, section 3.9, "U+FFFD substitution of maximal subparts"), so that the same bytes
// always give the same replacement, whether decoded whole or streamed (see stream_decoder.h).
// Surrogates (ED A0..BF) and overlong forms are invalid; NUL is a valid code point.
size_t utf8_decode(std::string_view s, uint32_t* cp, bool* valid);

// How many bytes a lead byte announces (1..4), 0 when `b` cannot start a sequence.
inline size_t utf8_sequence_length(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// The allowed range of the second byte after lead byte `b` (excludes overlongs and surrogates).
inline void utf8_second_byte_range(uint8_t b, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (b == 0xE0) *lo = 0xA0;
  if (b == 0xED) *hi = 0x9F;
  if (b == 0xF0) *lo = 0x90;
  if (b == 0xF4) *hi = 0x8F;
}

bool is_valid_utf8(std::string_view s);
// Offset of the first invalid byte, or s.size() when valid.
size_t first_invalid_utf8(std::string_view s);

// Appends `s` to `out` with every maximal invalid subpart replaced by U+FFFD.
void append_sanitized_utf8(std::string_view s, std::string* out);
// `s` itself when valid (no copy made into `storage`), else a sanitised copy held in `storage`.
std::string_view sanitize_utf8(std::string_view s, std::string* storage);

void append_utf8(uint32_t cp, std::string* out);

}  // namespace pocket
