// Grammar: the builders, finalize()'s checks (undefined rules, left recursion, productivity) and flat
// layout with min_rest, to_text, and the UTF-8 expansion of code point ranges into byte-range sequences.
#include "constrain/grammar.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace pocket {
namespace {

constexpr int32_t kInf = std::numeric_limits<int32_t>::max() / 4;  // "no finite string"; sums stay in range

int32_t sat_add(int32_t a, int32_t b) { return std::min(kInf, a + b); }

void encode_utf8(uint32_t cp, uint8_t* out, int* n) {
  if (cp < 0x80) {
    out[0] = static_cast<uint8_t>(cp);
    *n = 1;
  } else if (cp < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    *n = 2;
  } else if (cp < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    *n = 3;
  } else {
    out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    *n = 4;
  }
}

// [lo, hi] within one encoding length: split until every byte position is a full range or a fixed byte.
void split_same_length(uint32_t lo, uint32_t hi, int n_bytes,
                       std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  for (int i = 1; i < n_bytes; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, n_bytes, out);
        split_same_length((lo | m) + 1, hi, n_bytes, out);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, n_bytes, out);
        split_same_length(hi & ~m, hi, n_bytes, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  int na = 0, nb = 0;
  encode_utf8(lo, a, &na);
  encode_utf8(hi, b, &nb);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (int i = 0; i < na; ++i) seq.emplace_back(a[i], b[i]);
  out->push_back(std::move(seq));
}

std::string byte_text(uint8_t b, bool in_class) {
  if (b == '\\' || b == '"' || (in_class && (b == ']' || b == '-' || b == '^'))) return std::string("\\") + char(b);
  if (b == '\n') return "\\n";
  if (b == '\t') return "\\t";
  if (b == '\r') return "\\r";
  if (b < 0x20 || b >= 0x7F) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", b);
    return buf;
  }
  return std::string(1, char(b));
}

}  // namespace

void utf8_range_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  static constexpr uint32_t kMaxOfLength[4] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  hi = std::min<uint32_t>(hi, 0x10FFFF);
  for (int n = 1; n <= 4 && lo <= hi; ++n) {
    if (lo > kMaxOfLength[n - 1]) continue;
    const uint32_t end = std::min(hi, kMaxOfLength[n - 1]);
    split_same_length(lo, end, n, out);
    lo = end + 1;
  }
}

int32_t Grammar::add_rule(std::string name) {
  rules_.push_back({std::move(name), {}});
  flat_.clear();  // any change invalidates a previous layout
  return static_cast<int32_t>(rules_.size()) - 1;
}

int32_t Grammar::find_rule(std::string_view name) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

void Grammar::add_alt(int32_t rule, GrammarSeq seq) {
  rules_[static_cast<size_t>(rule)].alts.push_back(std::move(seq));
  flat_.clear();
}

void Grammar::append_bytes(GrammarSeq& seq, std::string_view bytes) {
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    seq.push_back({ElemKind::kBytes, b, b, -1});
  }
}

int32_t Grammar::char_class_rule(std::vector<CodepointRange> ranges, bool negated) {
  // Normalise: clip to Unicode, sort, merge, then complement if negated, then drop surrogates.
  std::vector<CodepointRange> norm;
  for (CodepointRange r : ranges) {
    if (r.lo > r.hi || r.lo > 0x10FFFF) continue;
    norm.push_back({r.lo, std::min<uint32_t>(r.hi, 0x10FFFF)});
  }
  std::sort(norm.begin(), norm.end(), [](CodepointRange a, CodepointRange b) { return a.lo < b.lo; });
  std::vector<CodepointRange> merged;
  for (CodepointRange r : norm) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<CodepointRange> comp;
    uint32_t next = 0;
    for (CodepointRange r : merged) {
      if (r.lo > next) comp.push_back({next, r.lo - 1});
      next = r.hi + 1;
    }
    if (next <= 0x10FFFF) comp.push_back({next, 0x10FFFF});
    merged = std::move(comp);
  }
  std::vector<CodepointRange> final_ranges;
  for (CodepointRange r : merged) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      final_ranges.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) final_ranges.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) final_ranges.push_back({0xE000, r.hi});
  }
  // The class's text is its cache key.
  std::string name = "[";
  for (CodepointRange r : final_ranges) {
    char buf[32];
    if (r.lo == r.hi) {
      std::snprintf(buf, sizeof buf, "\\u%04X", r.lo);
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04X-\\u%04X", r.lo, r.hi);
    }
    name += buf;
  }
  name += "]";
  for (const auto& [key, rule] : class_cache_) {
    if (key == name) return rule;
  }
  const int32_t rule = add_rule("class");  // to_text shows the class through its byte ranges
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
  for (CodepointRange r : final_ranges) utf8_range_sequences(r.lo, r.hi, &seqs);
  for (const auto& s : seqs) {
    GrammarSeq seq;
    for (auto [lo, hi] : s) append_range(seq, lo, hi);
    add_alt(rule, std::move(seq));
  }
  class_cache_.emplace_back(std::move(name), rule);
  return rule;
}

int32_t Grammar::repeat_rule(const GrammarSeq& item, int32_t min, int32_t max, std::string_view stem) {
  const std::string base(stem);
  // The optional tail after the `min` mandatory copies: `tail ::= item tail | ""` when unbounded, else a
  // chain `opt_k ::= item opt_{k-1} | ""` of max - min links (the last one `item | ""`).
  int32_t tail = -1;
  if (max < 0) {
    tail = add_rule(base + "-star");
    GrammarSeq more = item;
    append_rule(more, tail);
    add_alt(tail, std::move(more));
    add_alt(tail, {});
  } else {
    for (int32_t k = 0; k < max - min; ++k) {
      const int32_t opt = add_rule(base + "-opt");
      GrammarSeq more = item;
      if (tail >= 0) append_rule(more, tail);
      add_alt(opt, std::move(more));
      add_alt(opt, {});
      tail = opt;
    }
  }
  const int32_t rule = add_rule(base);
  GrammarSeq seq;
  for (int32_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
  if (tail >= 0) append_rule(seq, tail);
  add_alt(rule, std::move(seq));
  return rule;
}

int32_t Grammar::alt_rule(std::vector<GrammarSeq> alts, std::string_view stem) {
  const int32_t rule = add_rule(std::string(stem));
  for (auto& a : alts) add_alt(rule, std::move(a));
  return rule;
}

Status Grammar::finalize(int32_t root) {
  flat_.clear();
  const auto n = static_cast<size_t>(rules_.size());
  if (root < 0 || static_cast<size_t>(root) >= n) {
    return invalid_argument("[grammar] root rule #" + std::to_string(root) + " does not exist (" +
                            std::to_string(n) + " rules)");
  }
  if (rules_.size() > static_cast<size_t>(kMaxRules)) {
    return invalid_argument("[grammar] " + std::to_string(n) + " rules, more than the limit " + std::to_string(kMaxRules));
  }
  // Every element well formed; every referenced rule exists and has an alternative.
  size_t n_elems = 2;
  for (size_t r = 0; r < n; ++r) {
    for (const GrammarSeq& seq : rules_[r].alts) {
      n_elems += seq.size() + 1;
      for (const GrammarElem& e : seq) {
        if (e.kind == ElemKind::kEnd) {
          return invalid_argument("[grammar] rule '" + rules_[r].name + "' holds an end marker inside an alternative");
        }
        if (e.kind == ElemKind::kBytes && e.lo > e.hi) {
          return invalid_argument("[grammar] rule '" + rules_[r].name + "' has an empty byte range");
        }
        if (e.kind == ElemKind::kCopy && e.lo > 1) {
          return invalid_argument("[grammar] rule '" + rules_[r].name + "' has a copy span with minimum " +
                                  std::to_string(e.lo) + " (expected 0 or 1)");
        }
        if (e.kind == ElemKind::kCopy && e.hi > static_cast<uint8_t>(CopyMode::kSubstring)) {
          return invalid_argument("[grammar] rule '" + rules_[r].name + "' has a copy span with mode " +
                                  std::to_string(e.hi) + " (expected 0: whole words, or 1: any substring)");
        }
        if (e.kind != ElemKind::kRule) continue;
        if (e.rule < 0 || static_cast<size_t>(e.rule) >= n) {
          return invalid_argument("[grammar] rule '" + rules_[r].name + "' refers to rule #" + std::to_string(e.rule) +
                                  ", which does not exist");
        }
        if (rules_[static_cast<size_t>(e.rule)].alts.empty()) {
          return invalid_argument("[grammar] rule '" + rules_[static_cast<size_t>(e.rule)].name +
                                  "' is used by rule '" + rules_[r].name + "' but never defined (no alternatives)");
        }
      }
    }
  }
  if (rules_[static_cast<size_t>(root)].alts.empty()) {
    return invalid_argument("[grammar] root rule '" + rules_[static_cast<size_t>(root)].name + "' has no alternatives");
  }
  if (n_elems > kMaxElems) {
    return invalid_argument("[grammar] " + std::to_string(n_elems) + " elements, more than the limit " +
                            std::to_string(kMaxElems));
  }
  auto elem_min = [&](const GrammarElem& e, const std::vector<int32_t>& rule_min) -> int32_t {
    switch (e.kind) {
      case ElemKind::kBytes: return 1;
      case ElemKind::kCopy: return e.lo;
      case ElemKind::kRule: return rule_min[static_cast<size_t>(e.rule)];
      case ElemKind::kEnd: return 0;
    }
    return 0;
  };
  // Shortest string per rule (kInf: the rule derives no finite string); a fixpoint of relaxations.
  std::vector<int32_t> rule_min(n, kInf);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      for (const GrammarSeq& seq : rules_[r].alts) {
        int32_t len = 0;
        for (const GrammarElem& e : seq) len = sat_add(len, elem_min(e, rule_min));
        if (len < rule_min[r]) {
          rule_min[r] = len;
          changed = true;
        }
      }
    }
  }
  // Rules reachable from the root through productive alternatives (the only ones laid out usefully).
  auto alt_productive = [&](const GrammarSeq& seq) {
    for (const GrammarElem& e : seq) {
      if (e.kind == ElemKind::kRule && rule_min[static_cast<size_t>(e.rule)] >= kInf) return false;
    }
    return true;
  };
  if (rule_min[static_cast<size_t>(root)] >= kInf) {
    return invalid_argument("[grammar] root rule '" + rules_[static_cast<size_t>(root)].name +
                            "' derives no finite string (every alternative recurses forever)");
  }
  // Left recursion: an edge r -> s when s can start r's match without a byte consumed before it.
  // Found by a depth-first search over reachable rules (colour 1 = on the current path).
  std::vector<uint8_t> colour(n, 0);
  std::vector<int32_t> path;
  Status left_error;
  auto dfs = [&](auto&& self, int32_t r) -> bool {
    colour[static_cast<size_t>(r)] = 1;
    path.push_back(r);
    for (const GrammarSeq& seq : rules_[static_cast<size_t>(r)].alts) {
      if (!alt_productive(seq)) continue;
      for (const GrammarElem& e : seq) {
        if (e.kind == ElemKind::kRule) {
          const auto s = static_cast<size_t>(e.rule);
          if (colour[s] == 1) {
            std::string cycle;
            auto it = std::find(path.begin(), path.end(), e.rule);
            for (; it != path.end(); ++it) cycle += rules_[static_cast<size_t>(*it)].name + " -> ";
            cycle += rules_[s].name;
            left_error = invalid_argument("[grammar] rule '" + rules_[s].name +
                                          "' is left-recursive (reaches itself without consuming a byte: " + cycle + ")");
            return false;
          }
          if (colour[s] == 0 && !self(self, e.rule)) return false;
        }
        if (elem_min(e, rule_min) > 0) break;  // later elements are preceded by a consumed byte
      }
    }
    path.pop_back();
    colour[static_cast<size_t>(r)] = 2;
    return true;
  };
  if (!dfs(dfs, root)) return left_error;
  // Rules reachable through non-first positions still need the check: run from every reachable rule.
  std::vector<uint8_t> reachable(n, 0);
  std::vector<int32_t> todo = {root};
  reachable[static_cast<size_t>(root)] = 1;
  while (!todo.empty()) {
    const int32_t r = todo.back();
    todo.pop_back();
    for (const GrammarSeq& seq : rules_[static_cast<size_t>(r)].alts) {
      if (!alt_productive(seq)) continue;
      for (const GrammarElem& e : seq) {
        if (e.kind == ElemKind::kRule && !reachable[static_cast<size_t>(e.rule)]) {
          reachable[static_cast<size_t>(e.rule)] = 1;
          todo.push_back(e.rule);
        }
      }
    }
  }
  for (size_t r = 0; r < n; ++r) {
    if (reachable[r] && colour[r] == 0 && !dfs(dfs, static_cast<int32_t>(r))) return left_error;
  }
  // Flat layout: position 0 = {root, end}; then each productive alternative of every rule. Alternatives
  // that can never complete are left out, so every stack the matcher builds can reach the end.
  flat_.push_back({ElemKind::kRule, 0, 0, root});
  flat_.push_back({ElemKind::kEnd, 0, 0, -1});
  alt_starts_.assign(n, {});
  uses_copy_ = false;
  for (size_t r = 0; r < n; ++r) {
    for (const GrammarSeq& seq : rules_[r].alts) {
      if (!alt_productive(seq)) continue;
      alt_starts_[r].push_back(static_cast<int32_t>(flat_.size()));
      for (const GrammarElem& e : seq) {
        flat_.push_back(e);
        if (e.kind == ElemKind::kCopy && reachable[r]) uses_copy_ = true;
      }
      flat_.push_back({ElemKind::kEnd, 0, 0, -1});
    }
  }
  min_rest_.assign(flat_.size(), 0);
  for (size_t i = flat_.size(); i-- > 0;) {
    if (flat_[i].kind == ElemKind::kEnd) {
      min_rest_[i] = 0;
    } else {
      min_rest_[i] = sat_add(elem_min(flat_[i], rule_min), min_rest_[i + 1]);
    }
  }
  root_ = root;
  return Status::ok();
}

std::string Grammar::to_text() const {
  // Names are not unique (generated rules repeat stems): a repeated name gets its rule number appended.
  const auto n = rules_.size();
  std::vector<std::string> names(n);
  for (size_t r = 0; r < n; ++r) {
    const bool dup = find_rule(rules_[r].name) != static_cast<int32_t>(r);
    std::string base = rules_[r].name.empty() ? "rule" : rules_[r].name;
    for (char& c : base) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
      if (!ok) c = '-';
    }
    names[r] = dup || base != rules_[r].name ? base + "-" + std::to_string(r) : base;
  }
  std::string out;
  auto emit_rule = [&](size_t r) {
    out += names[r] + " ::=";
    const auto& alts = rules_[r].alts;
    for (size_t a = 0; a < alts.size(); ++a) {
      if (a > 0) out += " |";
      if (alts[a].empty()) out += " \"\"";
      std::string literal;
      auto flush = [&] {
        if (!literal.empty()) out += " \"" + literal + "\"";
        literal.clear();
      };
      for (const GrammarElem& e : alts[a]) {
        if (e.kind == ElemKind::kBytes && e.lo == e.hi) {
          literal += byte_text(e.lo, false);
          continue;
        }
        flush();
        if (e.kind == ElemKind::kBytes) {
          out += " [" + byte_text(e.lo, true) + "-" + byte_text(e.hi, true) + "]";
        } else if (e.kind == ElemKind::kRule) {
          out += " " + names[static_cast<size_t>(e.rule)];
        } else if (e.kind == ElemKind::kCopy) {
          out += copy_mode(e) == CopyMode::kSubstring ? " %copy-any" : " %copy";
          if (e.lo == 1) out += "1";
        }
      }
      flush();
    }
    out += "\n";
  };
  if (root_ >= 0) emit_rule(static_cast<size_t>(root_));
  for (size_t r = 0; r < n; ++r) {
    if (static_cast<int32_t>(r) != root_) emit_rule(r);
  }
  return out;
}

}  // namespace pocket
