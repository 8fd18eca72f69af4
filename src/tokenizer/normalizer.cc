// NFC with a fast path; see normalizer.h.
#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

#include "tokenizer/utf8.h"

namespace pocket {
namespace {

// A "safe" code point has canonical combining class 0, is its own NFC, and is never the second element of
// a canonical composition, so NFC never changes it nor merges it with what precedes it: text can be cut
// in front of it and each piece normalised on its own.
bool is_nfc_safe(uint32_t cp) {
  if (cp < 0x300) return true;                     // ASCII, Latin-1, Latin Extended-A/B, IPA, modifiers
  if (cp >= 0x4E00 && cp <= 0x9FFF) return true;   // CJK unified ideographs
  if (cp >= 0x3000 && cp <= 0x3029) return true;   // CJK symbols and punctuation (before the marks)
  if (cp >= 0x3041 && cp <= 0x3096) return true;   // hiragana (U+3099/309A marks excluded)
  if (cp >= 0x30A1 && cp <= 0x30FA) return true;   // katakana
  if (cp >= 0xAC00 && cp <= 0xD7A3) return true;   // Hangul syllables (trailing jamo are not safe)
  if (cp >= 0xFF01 && cp <= 0xFF5E) return true;   // full-width ASCII forms
  return false;
}

Status nfc_region(std::string_view s, std::string* out) {
  utf8proc_uint8_t* res = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &res,
                                          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    return Status(n == UTF8PROC_ERROR_NOMEM ? ErrorCode::kOutOfMemory : ErrorCode::kInvalidArgument,
                  std::string("[tokenizer] NFC failed: ") + utf8proc_errmsg(n));
  }
  out->append(reinterpret_cast<const char*>(res), static_cast<size_t>(n));
  std::free(res);
  return Status::ok();
}

}  // namespace

bool is_trivially_nfc(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    uint32_t cp;
    bool ok;
    i += utf8_decode(text.substr(i), &cp, &ok);
    if (!is_nfc_safe(cp)) return false;
  }
  return true;
}

Status append_nfc(std::string_view text, std::string* out) {
  size_t copied = 0;        // text[0, copied) is already in `out`
  size_t last_safe = 0;     // start of the last safe code point seen (a valid cut point)
  size_t region = SIZE_MAX; // start of the region needing utf8proc, if any
  for (size_t i = 0; i < text.size();) {
    uint32_t cp;
    bool ok;
    size_t n = 1;
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      cp = static_cast<uint8_t>(text[i]);
    } else {
      n = utf8_decode(text.substr(i), &cp, &ok);
    }
    if (is_nfc_safe(cp)) {
      if (region != SIZE_MAX) {  // close the region in front of this safe character
        out->append(text.data() + copied, region - copied);
        POCKET_RETURN_IF_ERROR(nfc_region(text.substr(region, i - region), out));
        copied = i;
        region = SIZE_MAX;
      }
      last_safe = i;
    } else if (region == SIZE_MAX) {
      region = last_safe < copied ? copied : last_safe;  // include the starter it may compose with
    }
    i += n;
  }
  if (region != SIZE_MAX) {
    out->append(text.data() + copied, region - copied);
    return nfc_region(text.substr(region), out);
  }
  out->append(text.data() + copied, text.size() - copied);
  return Status::ok();
}

}  // namespace pocket
