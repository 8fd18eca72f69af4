// Token-mask cost of grammar-constrained decoding, single thread: a mask on first visit of a configuration
// (fresh CompiledGrammar: empty cache and transitions), the same mask when cached, and inside a COPY span
// (walked per generation); for a JSON object grammar inside a free string and between fields, on Qwen3's
// 151,669-token vocabulary and pocket-nano's 8k byte-level BPE. Data: $POCKET_SHARED_DATA or ../shared/data
// (Qwen3) and models/pocket-nano-q4.pocket; a benchmark is skipped when its vocabulary is absent.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "constrain/grammar_constraint.h"
#include "constrain/test_grammars.h"
#include "format/package.h"
#include "tokenizer/hf_loader.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace pocket;

const std::string kSource =
    "Apple AirPods Pro 2 (2nd generation), $329 at Best Buy — colour: white. 苹果 AirPods Pro 第二代，售价 1899 元，"
    "颜色：白色。 Reviewers said \"the noise cancelling is excellent\" and the battery lasts 6 hours.";

std::string data_dir() {
  const char* env = std::getenv("POCKET_SHARED_DATA");
  return env ? env : POCKET_SHARED_DATA;
}

struct Vocab {
  std::unique_ptr<Tokenizer> tok;
  std::shared_ptr<const VocabIndex> index;
};

const Vocab* qwen3() {
  static Vocab v = [] {
    Vocab out;
    auto t = load_hf_tokenizer(data_dir() + "/tokenizers/qwen3/tokenizer.json");
    if (t.has_value()) {
      out.tok = std::move(t).value();
      out.index = VocabIndex::build(*out.tok);
    }
    return out;
  }();
  return v.tok ? &v : nullptr;
}

const Vocab* nano() {
  static Vocab v = [] {
    Vocab out;
    auto pkg = Package::open(std::string(POCKET_SOURCE_DIR) + "/models/pocket-nano-q4.pocket");
    if (pkg.has_value()) {
      auto t = load_tokenizer_section(pkg->tokenizer_bytes());
      if (t.has_value()) {
        out.tok = std::move(t).value();
        out.index = VocabIndex::build(*out.tok);
      }
    }
    return out;
  }();
  return v.tok ? &v : nullptr;
}

enum Where { kInString, kBetweenFields, kInCopy, kCopyStart };

// The prefix that brings the grammar to the measured configuration, fed as the tokenizer's tokens.
std::string prefix(Where w) {
  switch (w) {
    case kInString: return "{\"name\": \"Apple AirPods Pro wor";
    case kBetweenFields: return "{\"name\": \"Apple\",";
    case kInCopy: return "{\"quote\": \"Apple AirPods Pro 2 (2nd generation), $329 at Best Buy — colour: white. 苹果";
    case kCopyStart: return "{\"quote\": \"";  // the span may start anywhere in the source
  }
  return {};
}

std::unique_ptr<TokenConstraint> at(const CompiledGrammar& g, const Vocab& v, Where w, benchmark::State& state) {
  auto c = g.start(kSource);
  if (!c.has_value()) {
    state.SkipWithError(c.status().to_string().c_str());
    return nullptr;
  }
  std::vector<int32_t> ids;
  if (!v.tok->encode(prefix(w), {}, &ids).is_ok()) state.SkipWithError("encode failed");
  for (int32_t id : ids) {
    if (!(*c)->accept(id).is_ok()) {
      state.SkipWithError("prefix token refused");
      return nullptr;
    }
  }
  return std::move(c).value();
}

Grammar grammar_for(Where w) { return w == kInCopy || w == kCopyStart ? testing::json_copy_grammar() : testing::json_object_grammar(); }

void run_mask(benchmark::State& state, const Vocab* v, Where w, bool cold, size_t cache_bytes = 64u << 20) {
  if (v == nullptr) {
    state.SkipWithError("vocabulary not found (../shared/data or models/ absent)");
    return;
  }
  std::vector<float> logits(static_cast<size_t>(v->index->n_vocab()), 0.0f);
  auto g = CompiledGrammar::create(grammar_for(w), v->index, cache_bytes);
  auto c = at(**g, *v, w, state);
  if (c == nullptr) return;
  if (!cold && !c->mask(logits.data(), v->index->n_vocab(), -1).is_ok()) state.SkipWithError("mask failed");
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      g = CompiledGrammar::create(grammar_for(w), v->index);
      c = at(**g, *v, w, state);
      state.ResumeTiming();
    }
    if (!c->mask(logits.data(), v->index->n_vocab(), -1).is_ok()) state.SkipWithError("mask failed");
    benchmark::DoNotOptimize(logits.data());
  }
  int allowed = 0;
  for (float l : logits) allowed += l > -1e30f;
  state.counters["allowed"] = allowed;
}

void BM_Qwen3_ColdMask_InString(benchmark::State& s) { run_mask(s, qwen3(), kInString, true); }
void BM_Qwen3_WarmMask_InString(benchmark::State& s) { run_mask(s, qwen3(), kInString, false); }
// The cache full (here: no room at all): transitions are memoised but every mask is walked.
void BM_Qwen3_UncachedMask_InString(benchmark::State& s) { run_mask(s, qwen3(), kInString, false, 0); }
void BM_Qwen3_ColdMask_BetweenFields(benchmark::State& s) { run_mask(s, qwen3(), kBetweenFields, true); }
void BM_Qwen3_WarmMask_BetweenFields(benchmark::State& s) { run_mask(s, qwen3(), kBetweenFields, false); }
void BM_Qwen3_ColdMask_InCopy(benchmark::State& s) { run_mask(s, qwen3(), kInCopy, true); }
void BM_Qwen3_WarmMask_InCopy(benchmark::State& s) { run_mask(s, qwen3(), kInCopy, false); }
void BM_Qwen3_ColdMask_CopyStart(benchmark::State& s) { run_mask(s, qwen3(), kCopyStart, true); }
void BM_Qwen3_WarmMask_CopyStart(benchmark::State& s) { run_mask(s, qwen3(), kCopyStart, false); }
void BM_Nano_ColdMask_InString(benchmark::State& s) { run_mask(s, nano(), kInString, true); }
void BM_Nano_WarmMask_InString(benchmark::State& s) { run_mask(s, nano(), kInString, false); }
void BM_Nano_ColdMask_BetweenFields(benchmark::State& s) { run_mask(s, nano(), kBetweenFields, true); }
void BM_Nano_WarmMask_BetweenFields(benchmark::State& s) { run_mask(s, nano(), kBetweenFields, false); }
void BM_Nano_ColdMask_InCopy(benchmark::State& s) { run_mask(s, nano(), kInCopy, true); }
void BM_Nano_WarmMask_InCopy(benchmark::State& s) { run_mask(s, nano(), kInCopy, false); }

// Steady state of a whole generation: mask + greedy pick + accept per token over a JSON object written by
// the tokenizer's own tokens, after one warm-up generation (the cache then holds every configuration).
void BM_Qwen3_GenerationPerToken(benchmark::State& state) {
  const Vocab* v = qwen3();
  if (v == nullptr) {
    state.SkipWithError("vocabulary not found");
    return;
  }
  const std::string text = "{\"name\": \"Apple AirPods Pro 2, the wireless earbuds\", \"age\": 1899, \"tags\": "
                           "[\"audio\", \"apple\", \"白色\"]}";
  std::vector<int32_t> ids;
  (void)v->tok->encode(text, {}, &ids);
  auto g = CompiledGrammar::create(testing::json_object_grammar(), v->index);
  std::vector<float> logits(static_cast<size_t>(v->index->n_vocab()), 0.0f);
  auto once = [&] {
    auto c = (*g)->start();
    for (int32_t id : ids) {
      if (!(*c)->mask(logits.data(), v->index->n_vocab(), -1).is_ok() || !(*c)->accept(id).is_ok()) {
        state.SkipWithError("generation refused");
        return;
      }
    }
  };
  once();
  for (auto _ : state) once();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(ids.size()));
  state.counters["tokens"] = static_cast<double>(ids.size());
}

BENCHMARK(BM_Qwen3_ColdMask_InString)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Qwen3_WarmMask_InString)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Qwen3_UncachedMask_InString)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Qwen3_ColdMask_BetweenFields)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Qwen3_WarmMask_BetweenFields)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Qwen3_ColdMask_InCopy)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Qwen3_WarmMask_InCopy)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Qwen3_ColdMask_CopyStart)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Qwen3_WarmMask_CopyStart)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Qwen3_GenerationPerToken)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Nano_ColdMask_InString)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Nano_WarmMask_InString)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Nano_ColdMask_BetweenFields)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Nano_WarmMask_BetweenFields)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Nano_ColdMask_InCopy)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Nano_WarmMask_InCopy)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
