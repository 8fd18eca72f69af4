// The bilingual pretraining corpus builder behind `pocket-train build-corpus`: reads the plain text that
// scripts/build-corpus.sh extracted from Debian packages and npm, and gettext catalogs for parallel pairs;
// cleans, splits into documents, deduplicates and splits train/held-out; writes the corpus and a manifest.
// Torch-free. Not thread-safe; one builder per run.
//
// Input layout (one directory per source under RAW):
//   RAW/<source>/meta.json        {"kind": "text"|"mo", "packages": [{"name": ..., "version": ...}, ...],
//                                  "licence": "..." (optional; otherwise read from the copyright files)}
//   RAW/<source>/copyright/<pkg>  the package's /usr/share/doc/<pkg>/copyright (or LICENSE), optional
//   RAW/<source>/**/*.txt         kind "text": UTF-8 text, one paragraph per line; a line holding only a
//                                 form feed (\f) ends a document. Files are read in byte order of their path.
//   RAW/<source>/**/*.mo          kind "mo": GNU gettext catalogs; msgid (English) / msgstr (Chinese) pairs.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/utf8.h"

#include "core/status.h"

namespace pocket::train {

// ---- GNU gettext .mo catalogs -----------------------------------------------------------------------
//
// Layout (all integers uint32 in the file's byte order, told by the magic):
//   0  magic 0x950412de      4  revision (major = rev >> 16, must be 0 or 1)
//   8  N, number of strings  12 O, offset of the original-string table  16 T, offset of the translation table
//   20 S, hash table size    24 H, hash table offset (both ignored here)
//   O + 8*i: (length, offset) of msgid i;  T + 8*i: (length, offset) of msgstr i.
//   Each string is `length` bytes followed by a NUL. A msgid may be "context\x04id" and "singular\0plural";
//   a msgstr of a plural entry holds its forms separated by NULs.

struct MoEntry {
  std::string msgid;   // singular form, context removed
  std::string msgstr;  // first (singular) form
};

// Parses a whole .mo file held in `bytes`; `name` is used in error messages. Every offset and length is
// checked against the buffer before use, and the entry count against the bytes that could hold it before
// anything is allocated. The header entry (empty msgid) and untranslated entries are skipped.
Expected<std::vector<MoEntry>> parse_mo(std::span<const uint8_t> bytes, const std::string& name);

// ---- Cleaning -------------------------------------------------------------------------------------

// Thresholds of the cleaning rules (see docs/corpus.md). Letters are any non-space character that is
// neither ASCII/CJK/general punctuation or symbol, nor a digit.
struct CleanRules {
  int min_paragraph_letters = 2;        // fewer letters: the line is dropped (rules, page numbers)
  double min_letter_fraction = 0.5;     // letters / non-space characters below this: mostly symbols
  int min_document_letters = 16;        // a document with fewer letters after cleaning is dropped
  size_t min_dedupe_paragraph_bytes = 64;  // shorter lines (headings, verse lines) are never deduplicated
  double max_duplicate_fraction = 0.5;  // a document losing more of its bytes to paragraph dedupe is dropped
};

// UTF-8 validity is pocket::is_valid_utf8 (tokenizer/utf8.h): strict (no overlongs, surrogates, > U+10FFFF).

// One line of raw text -> its cleaned form: ANSI escape sequences and control characters removed, NFC,
// every run of whitespace (including NBSP and U+3000) collapsed to one space, a space between two CJK
// characters removed (an artefact of line filling), trimmed. Precondition: `line` is valid UTF-8.
std::string clean_line(std::string_view line);

// Why a cleaned line is dropped, or kKeep.
enum class LineVerdict { kKeep, kEmpty, kTooShort, kMostlySymbols, kBoilerplate };
LineVerdict judge_line(std::string_view cleaned, const CleanRules& rules);

struct ScriptCounts {
  uint64_t han = 0;     // CJK unified ideographs (all blocks) and compatibility ideographs
  uint64_t latin = 0;   // Latin letters (ASCII and the Latin-1/Extended-A/B letters)
  uint64_t letters = 0; // every letter, as judge_line counts them
  uint64_t non_space = 0;
};
ScriptCounts count_scripts(std::string_view s);

// The dominant script of a text by UTF-8 bytes: "zh" when its Han characters take at least as many bytes
// as its Latin letters (3 * han >= latin, han > 0), "en" when it has Latin letters, else "".
const char* dominant_script(const ScriptCounts& c);

// The dedupe key of a paragraph or document: whitespace removed, ASCII lower-cased, hashed with XXH64.
uint64_t dedupe_hash(std::string_view text);

// True when the document goes to the held-out split: a stable hash of its text and the seed, compared
// against `heldout_frac`. The same text and seed always land on the same side.
bool is_heldout(std::string_view doc, uint64_t seed, double heldout_frac);

// Licence short names from a Debian copyright file: the distinct `License:` values of a DEP-5 file in order
// of appearance, joined with ", "; for a free-form file, the line that names its licence most specifically
// (GPL, BSD, MIT, public domain, ... before any line that merely says "licence"), trimmed to 120 bytes;
// "unknown" when neither is found.
std::string licence_summary(std::string_view copyright_text);

// ---- The builder ----------------------------------------------------------------------------------

struct CorpusOptions {
  std::string raw_dir;
  std::string out_dir;
  double heldout_frac = 0.01;
  uint64_t seed = 1;
  int pairs_per_document = 16;  // parallel pairs rendered into one bilingual training document
  CleanRules rules;
};

struct SourceStats {
  std::string name;
  std::string kind;                   // "text" or "mo"
  std::vector<std::pair<std::string, std::string>> packages;  // (name, version)
  std::string licence;
  uint64_t n_files = 0;
  uint64_t raw_bytes = 0;             // bytes of the input files
  uint64_t kept_bytes = 0;            // bytes of the documents written (train + held-out)
  uint64_t n_documents = 0;           // documents written
  uint64_t n_heldout = 0;
  uint64_t duplicate_documents = 0;   // documents dropped as exact duplicates (or mostly duplicate lines)
  uint64_t duplicate_paragraphs = 0;  // lines dropped as exact duplicates of an earlier line
  uint64_t dropped_lines = 0;         // lines dropped by the cleaning rules (incl. invalid UTF-8)
  uint64_t invalid_utf8_lines = 0;
  uint64_t short_documents = 0;       // documents dropped as too short
  uint64_t n_pairs = 0;               // kind "mo": parallel pairs kept
  uint64_t han = 0, latin = 0;        // in the kept documents
  uint64_t zh_bytes = 0, en_bytes = 0;  // kept bytes by the dominant script of each line
};

struct CorpusResult {
  std::vector<SourceStats> sources;  // in name order
  SourceStats totals;
};

// Runs the whole build: reads every source under opts.raw_dir, writes train.txt, heldout.txt,
// heldout_zh.txt, heldout_en.txt, parallel.jsonl and manifest.json into opts.out_dir (each written to a
// .tmp file and renamed). Deterministic for the same input and seed.
Expected<CorpusResult> build_corpus(const CorpusOptions& opts);

// The manifest as JSON text (what build_corpus writes to manifest.json).
std::string manifest_json(const CorpusResult& r, const CorpusOptions& opts);

}  // namespace pocket::train
