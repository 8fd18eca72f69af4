// Grammars shared by the constraint tests and bench/constrain: a JSON object with string, integer and
// array-of-string fields, and one whose "quote" field is a COPY span of the source.
#pragma once

#include "constrain/grammar.h"

namespace pocket::testing {

inline GrammarSeq g_lit(std::string_view s) {
  GrammarSeq seq;
  Grammar::append_bytes(seq, s);
  return seq;
}
inline GrammarSeq g_cat(std::initializer_list<GrammarSeq> parts) {
  GrammarSeq out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
inline GrammarSeq g_ref(int32_t r) { return {{ElemKind::kRule, 0, 0, r}}; }
inline GrammarSeq g_range(uint8_t lo, uint8_t hi) { return {{ElemKind::kBytes, lo, hi, -1}}; }

struct JsonRules {
  int32_t ws, string, integer;
};

// ws: up to two blanks; string: JSON string (escapes incl. \uXXXX); integer: -?(0|[1-9][0-9]{0,15}).
inline JsonRules json_rules(Grammar& g) {
  JsonRules r;
  r.ws = g.repeat_rule(g_ref(g.char_class_rule({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}}, false)), 0, 2, "ws");
  const int32_t plain = g.char_class_rule({{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true);
  const int32_t hex = g.char_class_rule({{'0', '9'}, {'a', 'f'}, {'A', 'F'}}, false);
  const int32_t esc = g.alt_rule({g_ref(g.char_class_rule({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'},
                                                          {'n', 'n'}, {'r', 'r'}, {'t', 't'}}, false)),
                                  g_cat({g_lit("u"), g_ref(hex), g_ref(hex), g_ref(hex), g_ref(hex)})},
                                 "escape");
  const int32_t ch = g.alt_rule({g_ref(plain), g_cat({g_lit("\\"), g_ref(esc)})}, "char");
  r.string = g.alt_rule({g_cat({g_lit("\""), g_ref(g.repeat_rule(g_ref(ch), 0, -1, "chars")), g_lit("\"")})}, "string");
  const int32_t digits = g.repeat_rule(g_range('0', '9'), 0, 15, "digits");
  const int32_t nat = g.alt_rule({g_lit("0"), g_cat({g_range('1', '9'), g_ref(digits)})}, "nat");
  r.integer = g.alt_rule({g_ref(nat), g_cat({g_lit("-"), g_ref(nat)})}, "integer");
  return r;
}

// {"name": string, "age": integer[, "tags": [string, ...]]} with optional blanks between items.
inline Grammar json_object_grammar() {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const JsonRules j = json_rules(g);
  auto field = [&](std::string_view key, int32_t value) {
    return g_cat({g_ref(j.ws), g_lit("\""), g_lit(key), g_lit("\""), g_ref(j.ws), g_lit(":"), g_ref(j.ws), g_ref(value),
                  g_ref(j.ws)});
  };
  const int32_t more = g.repeat_rule(g_cat({g_lit(","), g_ref(j.ws), g_ref(j.string), g_ref(j.ws)}), 0, -1, "more");
  const int32_t items = g.alt_rule({g_cat({g_ref(j.string), g_ref(j.ws), g_ref(more)}), {}}, "items");
  const int32_t array = g.alt_rule({g_cat({g_lit("["), g_ref(j.ws), g_ref(items), g_lit("]")})}, "array");
  const int32_t tags = g.alt_rule({g_cat({g_lit(","), field("tags", array)}), {}}, "tags");
  g.add_alt(root, g_cat({g_lit("{"), field("name", j.string), g_lit(","), field("age", j.integer), g_ref(tags), g_lit("}")}));
  Status st = g.finalize(root);
  (void)st;
  return g;
}

// {"quote": "<a span of the source: whole words, or any substring>", "n": integer}
inline Grammar json_copy_grammar(CopyMode mode = CopyMode::kWords) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const JsonRules j = json_rules(g);
  g.add_alt(root, g_cat({g_lit("{\"quote\": \""), {copy_elem(1, mode)}, g_lit("\", \"n\": "), g_ref(j.integer),
                         g_lit("}")}));
  Status st = g.finalize(root);
  (void)st;
  return g;
}

}  // namespace pocket::testing
