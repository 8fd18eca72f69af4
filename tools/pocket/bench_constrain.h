// `pocket bench --json-schema-file S` / `--grammar-file G`: the cost of constrained decoding — the mask and
// the constraint's advance per token against the decode step it rides on, measured in the same runs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pocket::cli {

struct ConstrainBenchArgs {
  std::string model, schema_file, grammar_file, source_file;
  int n_prompt = 64, n_gen = 128, reps = 5, threads = 0;
};

// Prints markdown (or fills `json` when non-null). Returns the process exit code.
int bench_constrained(const ConstrainBenchArgs& a, nlohmann::json* json);

}  // namespace pocket::cli
