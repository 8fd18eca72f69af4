// Single-thread tokenizer throughput on the Qwen3 tokenizer over mixed Chinese/English text: the 320
// qwen3-zhen cases joined by newlines and repeated to 1 MiB (bench/tokenizer_hf.mjs builds the same corpus
// for the Hugging Face library). Data: $POCKET_SHARED_DATA or ../shared/data; skipped when absent.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer/hf_loader.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string data_dir() {
  const char* env = std::getenv("POCKET_SHARED_DATA");
  return env ? env : POCKET_SHARED_DATA;
}

std::vector<std::string> corpus_lines() {
  std::ifstream in(data_dir() + "/tokenizers/qwen3/qwen3-zhen.inp", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str(), sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> lines;
  for (size_t pos = 0, at; (at = all.find(sep, pos)) != std::string::npos; pos = at + sep.size()) {
    lines.push_back(all.substr(pos, at - pos));
  }
  return lines;
}

// The cases joined by "\n", whole copies repeated until the text reaches `bytes`.
std::string corpus(size_t bytes) {
  std::string one;
  for (const auto& l : corpus_lines()) one += l + "\n";
  std::string s;
  while (!one.empty() && s.size() < bytes) s += one;
  return s;
}

const pocket::Tokenizer* qwen3() {
  static std::unique_ptr<pocket::Tokenizer> tok = [] {
    auto t = pocket::load_hf_tokenizer(data_dir() + "/tokenizers/qwen3/tokenizer.json");
    return t.has_value() ? std::move(t).value() : nullptr;
  }();
  return tok.get();
}

void BM_EncodeQwen3Mixed1MiB(benchmark::State& state) {
  const pocket::Tokenizer* tok = qwen3();
  if (tok == nullptr) {
    state.SkipWithError("Qwen3 tokenizer.json not found (../shared/data absent?)");
    return;
  }
  const std::string text = corpus(1 << 20);
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    if (!tok->encode(text, {.parse_special = true}, &ids).is_ok()) state.SkipWithError("encode failed");
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(ids.size());
  state.counters["bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_EncodeQwen3Mixed1MiB)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Short texts (one case at a time): per-call overhead matters here.
void BM_EncodeQwen3Lines(benchmark::State& state) {
  const pocket::Tokenizer* tok = qwen3();
  if (tok == nullptr) {
    state.SkipWithError("Qwen3 tokenizer.json not found (../shared/data absent?)");
    return;
  }
  const std::vector<std::string> lines = corpus_lines();
  size_t bytes = 0;
  std::vector<int32_t> ids;
  for (auto _ : state) {
    for (const auto& l : lines) {
      ids.clear();
      (void)tok->encode(l, {}, &ids);
      bytes += l.size();
    }
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_EncodeQwen3Lines)->Unit(benchmark::kMillisecond);

void BM_DecodeQwen3Mixed1MiB(benchmark::State& state) {
  const pocket::Tokenizer* tok = qwen3();
  if (tok == nullptr) {
    state.SkipWithError("Qwen3 tokenizer.json not found (../shared/data absent?)");
    return;
  }
  const std::string text = corpus(1 << 20);
  std::vector<int32_t> ids;
  (void)tok->encode(text, {}, &ids);
  for (auto _ : state) benchmark::DoNotOptimize(tok->decode(ids));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_DecodeQwen3Mixed1MiB)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
