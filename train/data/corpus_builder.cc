// The corpus builder: .mo parsing, line cleaning, dedupe, the held-out split and the output files.
#include "data/corpus_builder.h"

#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace pocket::train {

namespace fs = std::filesystem;

namespace {

// ---- .mo --------------------------------------------------------------------------------------------

constexpr uint32_t kMoMagic = 0x950412de;
constexpr size_t kMoHeaderBytes = 28;

uint32_t load_u32(const uint8_t* p, bool big_endian) {
  return big_endian ? (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]
                    : (uint32_t(p[3]) << 24) | (uint32_t(p[2]) << 16) | (uint32_t(p[1]) << 8) | p[0];
}

// The string of table entry `i` (table at `table_off`), bounds-checked; `what` is "msgid"/"msgstr".
Expected<std::string_view> mo_string(std::span<const uint8_t> b, bool be, uint64_t table_off, uint64_t i,
                                     const char* what, const std::string& name) {
  const uint64_t at = table_off + 8 * i;  // the caller checked that the table lies inside the file
  const uint64_t len = load_u32(b.data() + at, be);
  const uint64_t off = load_u32(b.data() + at + 4, be);
  if (off + len + 1 > b.size()) {  // uint64: no wrap for 32-bit fields
    return corrupt_file("[mo] " + std::string(what) + " " + std::to_string(i) + " at byte " + std::to_string(off) +
                        " with length " + std::to_string(len) + " runs past the end of the file (" +
                        std::to_string(b.size()) + " bytes): " + name);
  }
  if (b[off + len] != 0) {
    return corrupt_file("[mo] " + std::string(what) + " " + std::to_string(i) + " at byte " + std::to_string(off) +
                        " is not NUL-terminated: " + name);
  }
  return std::string_view(reinterpret_cast<const char*>(b.data() + off), len);
}

// ---- UTF-8 ------------------------------------------------------------------------------------------

// Decodes the code point at s[i] (valid UTF-8 assumed) and advances i.
uint32_t next_cp(std::string_view s, size_t& i) {
  const auto c = static_cast<uint8_t>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  const int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  uint32_t cp = c & (n == 4 ? 0x07 : n == 3 ? 0x0F : 0x1F);
  for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

bool is_han(uint32_t cp) {
  return (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xF900 && cp <= 0xFAFF) ||
         (cp >= 0x20000 && cp <= 0x323AF);
}

bool is_latin_letter(uint32_t cp) {
  return (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z') ||
         (cp >= 0xC0 && cp <= 0x24F && cp != 0xD7 && cp != 0xF7);
}

// Han, kana, CJK punctuation and full-width forms: scripts written without spaces between words.
bool is_cjk(uint32_t cp) {
  return is_han(cp) || (cp >= 0x3000 && cp <= 0x30FF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
         (cp >= 0xFF00 && cp <= 0xFFEF);
}

bool is_space(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

// Removed outright: C0/C1 controls, DEL, zero-width characters and the byte-order mark.
bool is_dropped_control(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x200B && cp <= 0x200D) || cp == 0x2060 ||
         cp == 0xFEFF;
}

bool is_digit(uint32_t cp) { return (cp >= '0' && cp <= '9') || (cp >= 0xFF10 && cp <= 0xFF19); }

bool is_symbol(uint32_t cp) {
  if (cp < 0x80) return !((cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z') || is_digit(cp));
  return (cp >= 0xA1 && cp <= 0xBF) || cp == 0xD7 || cp == 0xF7 || (cp >= 0x2000 && cp <= 0x2BFF) ||
         (cp >= 0x3000 && cp <= 0x303F) || (cp >= 0xE000 && cp <= 0xF8FF) || (cp >= 0xFE30 && cp <= 0xFE6F) ||
         (cp >= 0xFF01 && cp <= 0xFF0F) || (cp >= 0xFF1A && cp <= 0xFF20) || (cp >= 0xFF3B && cp <= 0xFF40) ||
         (cp >= 0xFF5B && cp <= 0xFF65) || (cp >= 0xFFE0 && cp <= 0xFFFD) || (cp >= 0x1F000 && cp <= 0x1FAFF);
}

// Words that make up navigation bars of the HTML manuals ("Prev Up Next", "上一页 起始页 下一页").
constexpr std::string_view kNavWords[] = {"previous", "prev", "next", "up", "home", "contents", "index",
                                          "上一页", "下一页", "上一级", "起始页", "首页", "目录", "后退", "前进",
                                          "上一頁", "下一頁", "起始頁"};

// Page chrome of the extracted manuals, compared with the cleaned line (bullet removed, ASCII lower-cased).
constexpr std::string_view kBoilerplateLines[] = {
    "download the ebook", "product sitedocumentation site", "the debian administrator's handbook",
    "本页面中文版由中文 man 手册页计划提供。", "中文 man 手册页计划：https://github.com/man-pages-zh/manpages-zh",
    "《中国 linux 论坛 man 手册页翻译计划》:", "http://cmpp.linuxforum.net", "跋", "[中文版维护人]",
    "[中文版最新更新]", "[中文版校对人]"};

std::string lower_ascii(std::string_view s) {
  std::string t(s);
  for (char& c : t) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return t;
}

// A word made only of navigation words ("上一页下一页" once CJK spacing is removed), or only of brackets.
bool is_navigation_word(std::string_view w) {
  std::string t;
  for (char c : lower_ascii(w)) {
    if (c != '[' && c != ']' && c != '(' && c != ')' && c != '|' && c != '<' && c != '>' && c != '*') t.push_back(c);
  }
  std::string_view r(t);
  while (!r.empty()) {
    bool found = false;
    for (std::string_view k : kNavWords) {
      if (r.substr(0, k.size()) == k) {
        r.remove_prefix(k.size());
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

bool is_boilerplate(std::string_view line) {
  std::string_view s = line;
  while (s.size() >= 2 && (s[0] == '*' || s[0] == '+' || s[0] == '-') && s[1] == ' ') s.remove_prefix(2);
  const std::string t = lower_ascii(s);
  for (std::string_view b : kBoilerplateLines) {
    if (t == b) return true;
  }
  // "* Prev3. General Approach", "* NextChapter 2": a navigation link glued to the title it points at.
  if (s.size() < line.size()) {
    for (std::string_view k : {std::string_view("prev"), std::string_view("next")}) {
      if (t.size() > k.size() && t.compare(0, k.size(), k) == 0) {
        const char c = s[k.size()];
        if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || static_cast<uint8_t>(c) >= 0x80) return true;
      }
    }
  }
  bool nav = true;
  for (size_t i = 0; i <= line.size() && nav;) {
    const size_t e = std::min(line.find(' ', i), line.size());
    nav = is_navigation_word(line.substr(i, e - i));
    i = e + 1;
  }
  return nav;
}

// ---- Files ------------------------------------------------------------------------------------------

constexpr uint64_t kMaxInputFileBytes = uint64_t{1} << 30;

Expected<std::string> read_file(const fs::path& p) {
  std::error_code ec;
  const uint64_t size = fs::file_size(p, ec);
  if (ec) return io_error("[corpus] cannot stat " + p.string() + ": " + ec.message());
  if (size > kMaxInputFileBytes) {
    return invalid_argument("[corpus] " + p.string() + " is " + std::to_string(size) +
                            " bytes; input files are limited to 1 GiB");
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) return io_error("[corpus] cannot read " + p.string());
  std::string s(size, '\0');
  in.read(s.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) return io_error("[corpus] short read of " + p.string());
  return s;
}

Status write_file(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return io_error("[corpus] cannot write " + tmp.string());
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out) return io_error("[corpus] write failed: " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) return io_error("[corpus] cannot rename " + tmp.string() + " to " + p.string() + ": " + ec.message());
  return Status::ok();
}

// Regular files under `dir` whose names end in `ext`, sorted by path bytes (deterministic).
std::vector<fs::path> list_files(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (it->is_regular_file(ec) && n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0) {
      out.push_back(it->path());
    }
  }
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
  return out;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A kept document, in reading order.
struct Doc {
  size_t source = 0;
  std::string text;  // lines joined by '\n', no blank lines
  uint64_t key = 0;  // dedupe_hash(text)
  bool heldout = false;
};

// Removes a "(_X)" / "(&X)" / "（_X）" access-key marker from a translation and the matching marker
// character from the original, so that a pair reads as plain text.
void strip_access_keys(std::string* en, std::string* zh) {
  for (const char* open : {"(", "（"}) {
    for (char mark : {'_', '&'}) {
      const std::string head = std::string(open) + mark;
      const size_t at = zh->find(head);
      if (at == std::string::npos) continue;
      const size_t key = at + head.size();
      if (key >= zh->size() || !std::isalnum(static_cast<unsigned char>((*zh)[key]))) continue;
      const std::string close = std::string(open) == "(" ? ")" : "）";
      if (zh->compare(key + 1, close.size(), close) != 0) continue;
      zh->erase(at, head.size() + 1 + close.size());
      const size_t m = en->find(mark);
      if (m != std::string::npos && m + 1 < en->size() && std::isalpha(static_cast<unsigned char>((*en)[m + 1]))) {
        en->erase(m, 1);
      }
      return;
    }
  }
  // GTK-style markers without a bracketed key in the translation ("_Open" -> "打开").
  for (std::string* s : {en, zh}) {
    if (std::count(s->begin(), s->end(), '_') == 1) {
      const size_t m = s->find('_');
      if (m + 1 < s->size() && std::isalpha(static_cast<unsigned char>((*s)[m + 1])) &&
          (m == 0 || (*s)[m - 1] == ' ')) {
        s->erase(m, 1);
      }
    }
  }
}

std::string trim_copy(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

// ---- .mo --------------------------------------------------------------------------------------------

Expected<std::vector<MoEntry>> parse_mo(std::span<const uint8_t> b, const std::string& name) {
  if (b.size() < kMoHeaderBytes) {
    return corrupt_file("[mo] file is " + std::to_string(b.size()) + " bytes, shorter than the 28-byte header: " +
                        name);
  }
  bool be = false;
  if (load_u32(b.data(), false) == kMoMagic) {
    be = false;
  } else if (load_u32(b.data(), true) == kMoMagic) {
    be = true;
  } else {
    return corrupt_file("[mo] bad magic (not a GNU gettext catalog): " + name);
  }
  const uint32_t revision = load_u32(b.data() + 4, be);
  if ((revision >> 16) > 1) {
    return unsupported("[mo] major revision " + std::to_string(revision >> 16) + " (expected 0 or 1): " + name);
  }
  const uint64_t n = load_u32(b.data() + 8, be);
  const uint64_t orig = load_u32(b.data() + 12, be);
  const uint64_t trans = load_u32(b.data() + 16, be);
  for (auto [off, what] : {std::pair{orig, "original-string"}, std::pair{trans, "translation"}}) {
    if (off > b.size() || n > (b.size() - off) / 8) {
      return corrupt_file("[mo] " + std::string(what) + " table at byte " + std::to_string(off) + " with " +
                          std::to_string(n) + " entries of 8 bytes runs past the end of the file (" +
                          std::to_string(b.size()) + " bytes): " + name);
    }
  }
  std::vector<MoEntry> out;
  out.reserve(n);  // bounded by the file size (checked above)
  for (uint64_t i = 0; i < n; ++i) {
    POCKET_ASSIGN_OR_RETURN(std::string_view id, mo_string(b, be, orig, i, "msgid", name));
    POCKET_ASSIGN_OR_RETURN(std::string_view str, mo_string(b, be, trans, i, "msgstr", name));
    if (const size_t ctx = id.find('\x04'); ctx != std::string_view::npos) id.remove_prefix(ctx + 1);
    id = id.substr(0, id.find('\0'));
    str = str.substr(0, str.find('\0'));
    if (id.empty() || str.empty()) continue;  // the header entry, or untranslated
    out.push_back({std::string(id), std::string(str)});
  }
  return out;
}

// ---- Cleaning -------------------------------------------------------------------------------------


std::string clean_line(std::string_view line) {
  // 1. Controls and ANSI escapes out, whitespace runs collapsed, trimmed.
  std::string a;
  a.reserve(line.size());
  bool pending_space = false;
  for (size_t i = 0; i < line.size();) {
    if (line[i] == '\x1b') {  // ESC [ params intermediates final, or ESC + one character
      ++i;
      if (i < line.size() && line[i] == '[') {
        ++i;
        while (i < line.size() && static_cast<uint8_t>(line[i]) >= 0x20 && static_cast<uint8_t>(line[i]) <= 0x3F) ++i;
        if (i < line.size() && static_cast<uint8_t>(line[i]) >= 0x40 && static_cast<uint8_t>(line[i]) <= 0x7E) ++i;
      } else if (i < line.size() && static_cast<uint8_t>(line[i]) < 0x80) {
        ++i;
      }
      continue;
    }
    const uint32_t cp = next_cp(line, i);
    if (is_space(cp)) {
      pending_space = !a.empty();
      continue;
    }
    if (is_dropped_control(cp)) continue;
    if (pending_space) a.push_back(' ');
    pending_space = false;
    append_utf8(cp, &a);
  }
  // 2. NFC (whitespace and controls are unaffected by it, so the order of 1 and 2 does not matter).
  std::string b;
  if (!append_nfc(a, &b).is_ok()) b = a;  // cannot fail on valid UTF-8; keep the text if it ever does
  // 3. A space between two CJK characters is a line-filling artefact.
  std::string c;
  c.reserve(b.size());
  uint32_t prev = 0;
  for (size_t i = 0; i < b.size();) {
    const size_t at = i;
    const uint32_t cp = next_cp(b, i);
    if (cp == ' ' && is_cjk(prev) && i < b.size()) {
      size_t j = i;
      if (is_cjk(next_cp(b, j))) continue;
    }
    c.append(b, at, i - at);
    prev = cp;
  }
  return c;
}

ScriptCounts count_scripts(std::string_view s) {
  ScriptCounts c;
  for (size_t i = 0; i < s.size();) {
    const uint32_t cp = next_cp(s, i);
    if (is_space(cp)) continue;
    ++c.non_space;
    if (is_han(cp)) ++c.han;
    if (is_latin_letter(cp)) ++c.latin;
    if (!is_symbol(cp) && !is_digit(cp)) ++c.letters;
  }
  return c;
}

const char* dominant_script(const ScriptCounts& c) {
  if (c.han > 0 && 3 * c.han >= c.latin) return "zh";
  if (c.latin > 0) return "en";
  return "";
}

LineVerdict judge_line(std::string_view s, const CleanRules& rules) {
  if (s.empty()) return LineVerdict::kEmpty;
  if (is_boilerplate(s)) return LineVerdict::kBoilerplate;
  const ScriptCounts c = count_scripts(s);
  if (c.letters < static_cast<uint64_t>(std::max(rules.min_paragraph_letters, 0))) return LineVerdict::kTooShort;
  if (static_cast<double>(c.letters) < rules.min_letter_fraction * static_cast<double>(c.non_space)) {
    return LineVerdict::kMostlySymbols;
  }
  return LineVerdict::kKeep;
}

uint64_t dedupe_hash(std::string_view text) {
  std::string k;
  k.reserve(text.size());
  for (char ch : text) {
    if (ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r') continue;
    k.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
  }
  return XXH64(k.data(), k.size(), 0);
}

bool is_heldout(std::string_view doc, uint64_t seed, double heldout_frac) {
  if (!(heldout_frac > 0)) return false;
  if (heldout_frac >= 1) return true;
  const uint64_t h = XXH64(doc.data(), doc.size(), seed);
  // Top 53 bits as a uniform double in [0, 1).
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0) < heldout_frac;
}

std::string licence_summary(std::string_view text) {
  // For free-form files: the first line naming a licence, by the most specific words found.
  static const char* const kWords[] = {"general public license", "gpl", "bsd", "mit license", "public domain",
                                       "creative commons", "artistic", "permission is granted", "licen"};
  constexpr size_t kNone = std::size(kWords);
  std::vector<std::string> names;
  std::istringstream in{std::string(text)};
  std::string line, best;
  size_t best_rank = kNone;
  while (std::getline(in, line)) {
    if (line.rfind("License:", 0) == 0) {
      std::string v = trim_copy(std::string_view(line).substr(8));
      if (!v.empty() && std::find(names.begin(), names.end(), v) == names.end()) names.push_back(v);
      continue;
    }
    const std::string lower = lower_ascii(line);
    for (size_t r = 0; r < best_rank; ++r) {
      if (lower.find(kWords[r]) == std::string::npos) continue;
      std::string t = trim_copy(line);
      if (t.size() > 120) t.resize(120);
      if (is_valid_utf8(t)) best = t, best_rank = r;  // a cut inside a character is not kept
      break;
    }
  }
  if (!names.empty()) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }
  return best.empty() ? "unknown" : best;
}

// ---- The builder ----------------------------------------------------------------------------------

namespace {

class Builder {
 public:
  explicit Builder(const CorpusOptions& opts) : opts_(opts) {}

  Status run(CorpusResult* result);

 private:
  Status read_meta(const fs::path& dir, SourceStats* st);
  Status read_text_source(const fs::path& dir, size_t index, SourceStats* st);
  Status read_mo_source(const fs::path& dir, size_t index, SourceStats* st);
  // Cleans, dedupes and keeps one raw document (lines of text).
  void add_raw_document(const std::vector<std::string_view>& lines, size_t index, SourceStats* st);
  // Dedupes and keeps one clean document; false when it was dropped.
  bool keep_document(std::string text, size_t index, SourceStats* st);
  Status write_outputs(CorpusResult* result);

  const CorpusOptions& opts_;
  std::vector<Doc> docs_;
  std::unordered_set<uint64_t> seen_docs_;
  std::unordered_set<uint64_t> seen_lines_;
  std::unordered_set<uint64_t> seen_pairs_;
  std::string parallel_jsonl_;
};

Status Builder::read_meta(const fs::path& dir, SourceStats* st) {
  const fs::path meta = dir / "meta.json";
  POCKET_ASSIGN_OR_RETURN(std::string text, read_file(meta));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return corrupt_file("[corpus] not a JSON object: " + meta.string());
  st->kind = j.value("kind", std::string("text"));
  if (st->kind != "text" && st->kind != "mo") {
    return invalid_argument("[corpus] kind '" + st->kind + "' (expected \"text\" or \"mo\"): " + meta.string());
  }
  if (j.contains("packages") && j["packages"].is_array()) {
    for (const auto& p : j["packages"]) {
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) {
        return corrupt_file("[corpus] a package without a \"name\": " + meta.string());
      }
      st->packages.emplace_back(p["name"].get<std::string>(), p.value("version", std::string("unknown")));
    }
  }
  if (j.contains("licence") && j["licence"].is_string()) {
    st->licence = j["licence"].get<std::string>();
    return Status::ok();
  }
  // The union of the licence names of the packages' copyright files, in order of appearance.
  std::vector<std::string> names;
  for (const auto& f : list_files(dir / "copyright", "")) {
    POCKET_ASSIGN_OR_RETURN(std::string c, read_file(f));
    std::string s = licence_summary(c);
    for (size_t i = 0; i <= s.size();) {
      const size_t e = std::min(s.find(", ", i), s.size());
      std::string n = s.substr(i, e - i);
      if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      i = e + 2;
    }
  }
  for (const auto& n : names) st->licence += (st->licence.empty() ? "" : ", ") + n;
  if (st->licence.empty()) st->licence = "unknown";
  return Status::ok();
}

bool Builder::keep_document(std::string text, size_t index, SourceStats* st) {
  const ScriptCounts c = count_scripts(text);
  if (c.letters < static_cast<uint64_t>(std::max(opts_.rules.min_document_letters, 0))) {
    ++st->short_documents;
    return false;
  }
  const uint64_t key = dedupe_hash(text);
  if (!seen_docs_.insert(key).second) {
    ++st->duplicate_documents;
    return false;
  }
  Doc d;
  d.source = index;
  d.key = key;
  d.heldout = is_heldout(text, opts_.seed, opts_.heldout_frac);
  d.text = std::move(text);
  st->n_documents++;
  st->n_heldout += d.heldout;
  st->kept_bytes += d.text.size() + 2;  // and its blank-line separator
  st->han += c.han;
  st->latin += c.latin;
  // Bytes by script are counted per line, so that bilingual documents split fairly.
  for (size_t i = 0; i < d.text.size();) {
    const size_t e = std::min(d.text.find('\n', i), d.text.size());
    const std::string script = dominant_script(count_scripts(std::string_view(d.text).substr(i, e - i)));
    if (script == "zh") st->zh_bytes += e - i + 1;
    if (script == "en") st->en_bytes += e - i + 1;
    i = e + 1;
  }
  docs_.push_back(std::move(d));
  return true;
}

void Builder::add_raw_document(const std::vector<std::string_view>& lines, size_t index, SourceStats* st) {
  std::vector<std::string> kept;
  std::vector<uint64_t> new_keys;
  uint64_t bytes = 0, dup_bytes = 0, dup_lines = 0;
  std::unordered_set<uint64_t> in_doc;
  for (std::string_view raw : lines) {
    if (!is_valid_utf8(raw)) {
      ++st->invalid_utf8_lines;
      ++st->dropped_lines;
      continue;
    }
    std::string s = clean_line(raw);
    const LineVerdict v = judge_line(s, opts_.rules);
    if (v != LineVerdict::kKeep) {
      if (v != LineVerdict::kEmpty) ++st->dropped_lines;
      continue;
    }
    bytes += s.size();
    if (s.size() >= opts_.rules.min_dedupe_paragraph_bytes) {
      const uint64_t k = dedupe_hash(s);
      if (seen_lines_.count(k) || !in_doc.insert(k).second) {
        dup_bytes += s.size();
        ++dup_lines;
        continue;
      }
      new_keys.push_back(k);
    }
    kept.push_back(std::move(s));
  }
  if (bytes == 0) return;  // nothing but dropped lines
  if (static_cast<double>(dup_bytes) > opts_.rules.max_duplicate_fraction * static_cast<double>(bytes)) {
    ++st->duplicate_documents;
    return;
  }
  std::string text;
  for (const auto& s : kept) text += (text.empty() ? "" : "\n") + s;
  if (keep_document(std::move(text), index, st)) {
    st->duplicate_paragraphs += dup_lines;
    seen_lines_.insert(new_keys.begin(), new_keys.end());
  }
}

Status Builder::read_text_source(const fs::path& dir, size_t index, SourceStats* st) {
  for (const auto& f : list_files(dir, ".txt")) {
    POCKET_ASSIGN_OR_RETURN(std::string text, read_file(f));
    st->n_files++;
    st->raw_bytes += text.size();
    std::vector<std::string_view> lines;
    std::string_view all(text);
    for (size_t i = 0; i < all.size();) {
      size_t e = all.find('\n', i);
      if (e == std::string_view::npos) e = all.size();
      std::string_view line = all.substr(i, e - i);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line == "\f") {
        add_raw_document(lines, index, st);
        lines.clear();
      } else {
        lines.push_back(line);
      }
      i = e + 1;
    }
    add_raw_document(lines, index, st);
  }
  return Status::ok();
}

Status Builder::read_mo_source(const fs::path& dir, size_t index, SourceStats* st) {
  const size_t per_doc = static_cast<size_t>(std::max(opts_.pairs_per_document, 1));
  for (const auto& f : list_files(dir, ".mo")) {
    POCKET_ASSIGN_OR_RETURN(std::string bytes, read_file(f));
    st->n_files++;
    st->raw_bytes += bytes.size();
    POCKET_ASSIGN_OR_RETURN(
        std::vector<MoEntry> entries,
        parse_mo(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), f.string()));
    const std::string catalog = f.stem().string();
    std::string doc;
    size_t in_doc = 0;
    for (auto& e : entries) {
      if (!is_valid_utf8(e.msgid) || !is_valid_utf8(e.msgstr)) {
        ++st->invalid_utf8_lines;
        ++st->dropped_lines;
        continue;
      }
      std::string en = clean_line(e.msgid), zh = clean_line(e.msgstr);
      strip_access_keys(&en, &zh);
      en = clean_line(en);
      zh = clean_line(zh);
      const ScriptCounts ce = count_scripts(en), cz = count_scripts(zh);
      // English on one side, Chinese on the other, each mostly words.
      if (en == zh || ce.latin < 2 || cz.han < 1 || en.size() > 2000 || zh.size() > 2000 ||
          judge_line(en, opts_.rules) != LineVerdict::kKeep || judge_line(zh, opts_.rules) != LineVerdict::kKeep) {
        ++st->dropped_lines;
        continue;
      }
      if (!seen_pairs_.insert(dedupe_hash(en + "\x1f" + zh)).second) {
        ++st->duplicate_paragraphs;
        continue;
      }
      nlohmann::json j = {{"en", en}, {"zh", zh}, {"catalog", catalog}};
      parallel_jsonl_ += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      st->n_pairs++;
      doc += (doc.empty() ? "" : "\n") + en + "\n" + zh;
      if (++in_doc == per_doc) {
        keep_document(std::move(doc), index, st);
        doc.clear();
        in_doc = 0;
      }
    }
    if (!doc.empty()) keep_document(std::move(doc), index, st);
  }
  return Status::ok();
}

Status Builder::write_outputs(CorpusResult* result) {
  // Train documents in a seeded, content-keyed order, so that any prefix mixes all sources.
  std::vector<size_t> train, held;
  for (size_t i = 0; i < docs_.size(); ++i) (docs_[i].heldout ? held : train).push_back(i);
  std::vector<uint64_t> rank(docs_.size());
  for (size_t i : train) rank[i] = splitmix64(docs_[i].key ^ splitmix64(opts_.seed));
  std::stable_sort(train.begin(), train.end(), [&](size_t a, size_t b) { return rank[a] < rank[b]; });
  std::string t, h, hz, he;
  for (size_t i : train) t += docs_[i].text + "\n\n";
  for (size_t i : held) {
    h += docs_[i].text + "\n\n";
    const std::string script = dominant_script(count_scripts(docs_[i].text));
    if (script == "zh") hz += docs_[i].text + "\n\n";
    if (script == "en") he += docs_[i].text + "\n\n";
  }
  const fs::path out(opts_.out_dir);
  POCKET_RETURN_IF_ERROR(write_file(out / "train.txt", t));
  POCKET_RETURN_IF_ERROR(write_file(out / "heldout.txt", h));
  POCKET_RETURN_IF_ERROR(write_file(out / "heldout_zh.txt", hz));
  POCKET_RETURN_IF_ERROR(write_file(out / "heldout_en.txt", he));
  POCKET_RETURN_IF_ERROR(write_file(out / "parallel.jsonl", parallel_jsonl_));
  return write_file(out / "manifest.json", manifest_json(*result, opts_));
}

Status Builder::run(CorpusResult* result) {
  const fs::path raw(opts_.raw_dir);
  std::error_code ec;
  if (!fs::is_directory(raw, ec)) return invalid_argument("[corpus] --raw " + opts_.raw_dir + " is not a directory");
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(raw, ec)) {
    if (e.is_directory() && fs::exists(e.path() / "meta.json")) dirs.push_back(e.path());
  }
  if (ec) return io_error("[corpus] cannot list " + opts_.raw_dir + ": " + ec.message());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) {
    return invalid_argument("[corpus] no source directories (with a meta.json) under " + opts_.raw_dir);
  }
  fs::create_directories(opts_.out_dir, ec);
  if (ec) return io_error("[corpus] cannot create " + opts_.out_dir + ": " + ec.message());
  for (size_t i = 0; i < dirs.size(); ++i) {
    SourceStats st;
    st.name = dirs[i].filename().string();
    POCKET_RETURN_IF_ERROR(read_meta(dirs[i], &st));
    POCKET_RETURN_IF_ERROR(st.kind == "mo" ? read_mo_source(dirs[i], i, &st) : read_text_source(dirs[i], i, &st));
    result->sources.push_back(std::move(st));
  }
  SourceStats& tot = result->totals;
  tot.name = "total";
  for (const auto& s : result->sources) {
    tot.n_files += s.n_files;
    tot.raw_bytes += s.raw_bytes;
    tot.kept_bytes += s.kept_bytes;
    tot.n_documents += s.n_documents;
    tot.n_heldout += s.n_heldout;
    tot.duplicate_documents += s.duplicate_documents;
    tot.duplicate_paragraphs += s.duplicate_paragraphs;
    tot.dropped_lines += s.dropped_lines;
    tot.invalid_utf8_lines += s.invalid_utf8_lines;
    tot.short_documents += s.short_documents;
    tot.n_pairs += s.n_pairs;
    tot.han += s.han;
    tot.latin += s.latin;
    tot.zh_bytes += s.zh_bytes;
    tot.en_bytes += s.en_bytes;
  }
  return write_outputs(result);
}

nlohmann::json stats_json(const SourceStats& s) {
  nlohmann::json pk = nlohmann::json::array();
  for (const auto& [n, v] : s.packages) pk.push_back({{"name", n}, {"version", v}});
  nlohmann::json j = {{"raw_bytes", s.raw_bytes},
                      {"kept_bytes", s.kept_bytes},
                      {"documents", s.n_documents},
                      {"heldout_documents", s.n_heldout},
                      {"duplicate_documents", s.duplicate_documents},
                      {"duplicate_paragraphs", s.duplicate_paragraphs},
                      {"short_documents", s.short_documents},
                      {"dropped_lines", s.dropped_lines},
                      {"invalid_utf8_lines", s.invalid_utf8_lines},
                      {"files", s.n_files},
                      {"han_chars", s.han},
                      {"latin_letters", s.latin},
                      {"zh_bytes", s.zh_bytes},
                      {"en_bytes", s.en_bytes}};
  if (s.name != "total") {
    j["source"] = s.name;
    j["kind"] = s.kind;
    j["packages"] = pk;
    j["licence"] = s.licence;
  }
  if (s.kind == "mo" || s.name == "total") j["parallel_pairs"] = s.n_pairs;
  return j;
}

}  // namespace

std::string manifest_json(const CorpusResult& r, const CorpusOptions& opts) {
  nlohmann::json j;
  j["seed"] = opts.seed;
  j["heldout_frac"] = opts.heldout_frac;
  j["rules"] = {{"min_paragraph_letters", opts.rules.min_paragraph_letters},
                {"min_letter_fraction", opts.rules.min_letter_fraction},
                {"min_document_letters", opts.rules.min_document_letters},
                {"min_dedupe_paragraph_bytes", opts.rules.min_dedupe_paragraph_bytes},
                {"max_duplicate_fraction", opts.rules.max_duplicate_fraction},
                {"pairs_per_document", opts.pairs_per_document}};
  j["sources"] = nlohmann::json::array();
  for (const auto& s : r.sources) j["sources"].push_back(stats_json(s));
  j["totals"] = stats_json(r.totals);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Expected<CorpusResult> build_corpus(const CorpusOptions& opts) {
  if (!(opts.heldout_frac >= 0 && opts.heldout_frac < 1)) {
    return invalid_argument("[corpus] --heldout-frac " + std::to_string(opts.heldout_frac) + " (expected 0 <= f < 1)");
  }
  CorpusResult result;
  Builder b(opts);
  POCKET_RETURN_IF_ERROR(b.run(&result));
  return result;
}

}  // namespace pocket::train
