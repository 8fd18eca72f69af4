// libFuzzer target for the grammar front ends: any bytes given to compile_json_schema and parse_gbnf must give
// a grammar or an error — never a crash, hang, unbounded allocation or undefined behaviour. Input that parses
// as JSON is also validated against itself as a schema (validate_json on arbitrary schemas and values).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "constrain/gbnf.h"
#include "constrain/json_schema.h"
#include "constrain/json_validate.h"

namespace {

// Every grammar that comes back is finalized and prints (its text is bounded by its size).
void touch(const pocket::Expected<pocket::Grammar>& g) {
  if (!g.has_value()) {
    if (g.status().message().empty()) __builtin_trap();  // errors always say what went wrong
    return;
  }
  if (!g->finalized() || g->to_text().empty()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  touch(pocket::parse_gbnf(text));
  touch(pocket::compile_json_schema(text));
  // The first byte picks the options for a second compilation of the rest.
  if (size > 0) {
    pocket::JsonSchemaOptions opts;
    opts.ground_strings = (data[0] & 1) != 0;
    opts.max_depth = 1 + (data[0] >> 3) % 8;
    touch(pocket::compile_json_schema(text.substr(1), opts));
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_discarded()) (void)pocket::validate_json(j, j, text);
  return 0;
}
