// Unicode NFC for tokenizers that ask for it (Qwen2/3), via utf8proc. Runs of text that are already NFC by
// construction (ASCII/Latin-1, CJK ideographs, kana, Hangul syllables, CJK and full-width punctuation) are
// copied as they are; only the regions around other characters go through utf8proc.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace pocket {

// Appends NFC(text) to `out`. `text` must be valid UTF-8.
Status append_nfc(std::string_view text, std::string* out);
// True when append_nfc would copy `text` unchanged without calling utf8proc (the fast path).
bool is_trivially_nfc(std::string_view text);

}  // namespace pocket
