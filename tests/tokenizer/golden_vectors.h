// Reads llama.cpp-style golden tokenizer vectors: NAME.inp holds cases each followed by a line
// "__ggml_vocab_test__"; NAME.out holds one line of space-separated ids per case.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace pocket::testing {

struct GoldenCase {
  std::string text;
  std::vector<int32_t> ids;
};

inline std::string slurp_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Empty when the files are missing or the counts disagree (the caller asserts non-empty).
inline std::vector<GoldenCase> read_golden(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = slurp_text(inp_path), out = slurp_text(out_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<GoldenCase> cases;
  size_t pos = 0;
  while (pos < inp.size()) {
    const size_t at = inp.find(sep, pos);
    if (at == std::string::npos) break;
    cases.push_back({inp.substr(pos, at - pos), {}});
    pos = at + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    if (i >= cases.size()) return {};
    std::istringstream nums(line);
    int32_t v;
    while (nums >> v) cases[i].ids.push_back(v);
    ++i;
  }
  if (i != cases.size()) return {};
  return cases;
}

}  // namespace pocket::testing
