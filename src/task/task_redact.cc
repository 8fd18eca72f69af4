// Redaction: deterministic detectors first (phones, ID cards, bank cards, e-mails), then the model's
// grounded extraction of names and addresses (every value a span of the text, by construction).
#include <algorithm>

#include "task/redact_detectors.h"
#include "task/task.h"
#include "tokenizer/utf8.h"

namespace pocket {

namespace {

// Names and addresses as arrays of spans of the text (the grammar's copy terminal).
constexpr std::string_view kPeopleSchema = R"({"type":"object","properties":{
  "names":{"type":"array","items":{"type":"string","x-pocket-copy":true},"maxItems":8},
  "addresses":{"type":"array","items":{"type":"string","x-pocket-copy":true},"maxItems":4}}})";

std::string upper(std::string_view kind) {
  std::string s(kind);
  for (char& c : s) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return s;
}

}  // namespace

Expected<RedactResult> task_redact(Session* s, std::string_view text, const TaskOptions& opts) {
  if (!is_valid_utf8(text)) return invalid_argument("[redact] the text is not valid UTF-8");
  POCKET_ASSIGN_OR_RETURN(std::vector<DetectedSpan> found, detect_sensitive(text));
  RedactResult r;
  for (const DetectedSpan& d : found) r.spans.push_back({d.begin, d.end, d.kind, "detector"});
  if (s != nullptr) {
    const bool zh = std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0xE4; });
    const std::string_view instruction = zh ? "提取人名和地址（JSON）：" : "Extract names and addresses (JSON):";
    POCKET_ASSIGN_OR_RETURN(ExtractResult ex, task_extract(*s, text, kPeopleSchema, opts, false, instruction));
    auto add = [&](const char* key, const char* kind) {
      if (!ex.value.contains(key)) return;
      for (const auto& v : ex.value[key]) {
        if (!v.is_string()) continue;
        const std::string needle = v.get<std::string>();
        if (needle.empty()) continue;
        // Every occurrence that no earlier span covers.
        for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) {
          const size_t end = at + needle.size();
          const bool taken = std::any_of(r.spans.begin(), r.spans.end(),
                                         [&](const RedactSpan& x) { return at < x.end && x.begin < end; });
          if (!taken) r.spans.push_back({at, end, kind, "model"});
        }
      }
    };
    add("names", "name");
    add("addresses", "address");
  }
  std::sort(r.spans.begin(), r.spans.end(), [](const RedactSpan& a, const RedactSpan& b) { return a.begin < b.begin; });
  size_t pos = 0;
  for (const RedactSpan& sp : r.spans) {
    r.text.append(text.substr(pos, sp.begin - pos));
    r.text += "[" + upper(sp.kind) + "]";
    pos = sp.end;
  }
  r.text.append(text.substr(pos));
  return r;
}

}  // namespace pocket
