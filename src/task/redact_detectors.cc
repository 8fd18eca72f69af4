// Redaction's deterministic detectors: PCRE2 patterns for the candidates, check digits to confirm them.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "task/redact_detectors.h"

#include <pcre2.h>

#include <algorithm>
#include <memory>

namespace pocket {

namespace {

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

struct Pattern {
  const char* kind;
  const char* regex;
};

// Digits are ASCII [0-9] (not \d, which with UCP also matches other scripts' digits). Each pattern refuses to
// start or end inside a longer run of digits, so "a 20-digit number" is not read as a card plus two digits.
constexpr Pattern kPatterns[] = {
    {"id_card", R"((?<![0-9A-Za-z])[1-9][0-9]{16}[0-9Xx](?![0-9A-Za-z]))"},
    {"bank_card", R"((?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9]))"},
    // Chinese mobiles (+86 optional, 11 digits from 13x-19x, spaced 3-4-4 or not), landlines with an area
    // code (010-12345678), international numbers with a + and 7-15 digits, and North American (555) 123-4567.
    {"phone", R"((?<![0-9+])(?:(?:\+|00)86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![0-9]))"},
    {"phone", R"((?<![0-9])0[1-9][0-9]{1,2}-[1-9][0-9]{6,7}(?![0-9]))"},
    {"phone", R"((?<![0-9+])\+[1-9][0-9]{0,2}(?:[ -]?\(?[0-9]{1,4}\)?){2,5}(?![0-9]))"},
    {"phone", R"((?<![0-9])\(?[2-9][0-9]{2}\)?[ .-][0-9]{3}[ .-][0-9]{4}(?![0-9]))"},
    {"email", R"([A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})"},
};

int count_digits(std::string_view s) {
  return static_cast<int>(std::count_if(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }));
}

bool confirm(std::string_view kind, std::string_view m) {
  if (kind == "id_card") return valid_id_card(m);
  if (kind == "bank_card") return luhn_valid(m);
  if (kind == "phone") {
    const int d = count_digits(m);
    return d >= 7 && d <= 15;
  }
  return true;
}

}  // namespace

bool valid_id_card(std::string_view id) {
  if (id.size() != 18) return false;
  static constexpr int kWeights[17] = {7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2};
  static constexpr char kCheck[11] = {'1', '0', 'X', '9', '8', '7', '6', '5', '4', '3', '2'};
  int sum = 0;
  for (int i = 0; i < 17; ++i) {
    if (id[i] < '0' || id[i] > '9') return false;
    sum += (id[i] - '0') * kWeights[i];
  }
  const char c = id[17] == 'x' ? 'X' : id[17];
  if (c != kCheck[sum % 11]) return false;
  // Birth date YYYYMMDD at characters 6..13: a real date between 1900 and 2099.
  auto num = [&](size_t at, size_t n) {
    int v = 0;
    for (size_t i = 0; i < n; ++i) v = v * 10 + (id[at + i] - '0');
    return v;
  };
  const int y = num(6, 4), m = num(10, 2), d = num(12, 2);
  if (y < 1900 || y > 2099 || m < 1 || m > 12 || d < 1) return false;
  static constexpr int kDays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (d > kDays[m - 1]) return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return !(m == 2 && d == 29 && !leap);
}

bool luhn_valid(std::string_view s) {
  std::string digits;
  for (char c : s) {
    if (c >= '0' && c <= '9') digits.push_back(c);
    else if (c != ' ' && c != '-') return false;
  }
  if (digits.size() < 13 || digits.size() > 19) return false;
  int sum = 0;
  bool dbl = false;
  for (size_t i = digits.size(); i-- > 0;) {
    int v = digits[i] - '0';
    if (dbl) v = v * 2 > 9 ? v * 2 - 9 : v * 2;
    sum += v;
    dbl = !dbl;
  }
  return sum % 10 == 0;
}

Expected<std::vector<DetectedSpan>> detect_sensitive(std::string_view text) {
  // Compiled once per process (pcre2_code is read-only once compiled; match data is per call).
  static const auto compiled = [] {
    std::vector<std::unique_ptr<pcre2_code, CodeDeleter>> v;
    for (const Pattern& p : kPatterns) {
      int err = 0;
      PCRE2_SIZE off = 0;
      v.emplace_back(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.regex), PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off,
                                   nullptr));
    }
    return v;
  }();
  std::vector<DetectedSpan> spans;
  auto overlaps = [&](size_t b, size_t e) {
    return std::any_of(spans.begin(), spans.end(), [&](const DetectedSpan& s) { return b < s.end && s.begin < e; });
  };
  for (size_t pi = 0; pi < std::size(kPatterns); ++pi) {
    pcre2_code* code = compiled[pi].get();
    if (code == nullptr) return Status(ErrorCode::kInternal, std::string("[redact] pattern for ") + kPatterns[pi].kind + " did not compile");
    std::unique_ptr<pcre2_match_data, MatchDeleter> md(pcre2_match_data_create_from_pattern(code, nullptr));
    size_t start = 0;
    while (start <= text.size()) {
      // NO_UTF_CHECK is not used: invalid UTF-8 in the text is reported by PCRE2 as an error below.
      const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), start, 0, md.get(), nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) return invalid_argument("[redact] the text is not valid UTF-8 (PCRE2 error " + std::to_string(rc) + ")");
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
      const size_t b = ov[0], e = ov[1];
      if (e > b && confirm(kPatterns[pi].kind, text.substr(b, e - b)) && !overlaps(b, e)) {
        spans.push_back({b, e, kPatterns[pi].kind});
      }
      start = e > b ? e : b + 1;
      // Advance past a UTF-8 continuation byte so the next match starts on a character.
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
  std::sort(spans.begin(), spans.end(), [](const DetectedSpan& a, const DetectedSpan& b) { return a.begin < b.begin; });
  return spans;
}

}  // namespace pocket
