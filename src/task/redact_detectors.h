// Deterministic detectors of sensitive data for redaction: phone numbers, Chinese resident ID-card numbers
// (18 characters, ISO 7064 MOD 11-2 check digit, a real birth date), bank-card numbers (13-19 digits, Luhn)
// and e-mail addresses. Regular expressions (PCRE2) find candidates; the check digits decide.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pocket {

struct DetectedSpan {
  size_t begin = 0, end = 0;  // bytes of the text, [begin, end)
  std::string kind;           // "id_card", "bank_card", "phone", "email"
};

// The 18-character ID number's check character is right ('0'-'9' or 'X'/'x') and its birth date exists.
bool valid_id_card(std::string_view id18);
// The digits (separators ' ' and '-' ignored) pass the Luhn check; 13..19 digits.
bool luhn_valid(std::string_view digits);

// Every detected span, non-overlapping, in text order. Kinds are tried in the order id_card, bank_card,
// phone, email; a later kind never takes bytes an earlier one holds.
Expected<std::vector<DetectedSpan>> detect_sensitive(std::string_view text);

}  // namespace pocket
