// The constrained-decoding rows of `pocket bench` (bench_constrain.h). Each run generates up to n tokens
// under the constraint from the same prompt with a fresh constraint; the session's stats split the decode
// time into the constraint's share (mask + advance) and the rest (the forward pass and sampling). The first
// run meets the grammar's mask cache cold; the later runs are warm, as every request after the first is in
// an app that keeps its schema.
#include "bench_constrain.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "commands.h"
#include "generate/session.h"
#include "sampling/rng.h"
#include "task/task.h"

namespace pocket::cli {

namespace {

Expected<std::string> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("[bench] cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int bench_constrained(const ConstrainBenchArgs& a, nlohmann::json* json) {
  auto model = Model::load(a.model);
  if (!model) return report("bench", model.status());
  std::string schema, grammar, source;
  if (!a.schema_file.empty()) {
    auto s = slurp(a.schema_file);
    if (!s) return report("bench", s.status());
    schema = *s;
  }
  if (!a.grammar_file.empty()) {
    auto s = slurp(a.grammar_file);
    if (!s) return report("bench", s.status());
    grammar = *s;
  }
  if (!a.source_file.empty()) {
    auto s = slurp(a.source_file);
    if (!s) return report("bench", s.status());
    source = *s;
  }
  if (source.empty()) {
    // Grounded ("x-pocket-copy") strings need a text to copy from: the demo's, when none is given.
    source = "墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。支持七天无理由退货。"
             "Hot sale! Brand: Zephyr running shoes in orange, size EU 42, $89.99, mesh upper.";
  }
  SessionOptions so;
  so.n_threads = a.threads;
  so.n_ctx = std::min<int64_t>((*model)->hparams().n_ctx_train, a.n_prompt + a.n_gen + 8);
  auto session = Session::create(*model, so);
  if (!session) return report("bench", session.status());
  const int64_t n_vocab = (*model)->hparams().n_vocab;
  Rng rng(4321);
  std::vector<int32_t> prompt(static_cast<size_t>(std::max(1, a.n_prompt)));
  for (auto& id : prompt) id = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(n_vocab));

  struct Run {
    double setup_ms = 0;  // building the constraint: schema compiled, vocabulary indexed (first run only)
    double mask_ms = 0, step_ms = 0;
    int64_t n = 0;
  };
  std::vector<Run> runs;
  for (int r = 0; r < 1 + a.reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    auto c = grammar.empty() ? make_json_constraint(**model, schema, source) : make_grammar_constraint(**model, grammar, source);
    if (!c) return report("bench", c.status());
    const auto st_start = std::chrono::steady_clock::now();
    (*session)->reset();
    GenerateOptions go;
    go.n_predict = a.n_gen;
    go.add_bos = false;
    go.stop_at_eos = false;  // the constraint ends the output (or the token limit does)
    go.constraint = c->get();
    GenerateStats st;
    Status s = (*session)->generate_tokens(prompt, go, nullptr, nullptr, &st);
    if (!s.is_ok()) return report("bench", s);
    Run run;
    run.setup_ms = std::chrono::duration<double, std::milli>(st_start - t0).count();
    run.n = st.n_constrained;
    if (run.n > 0) {
      run.mask_ms = st.constraint_seconds * 1e3 / static_cast<double>(run.n);
      run.step_ms = (st.decode_seconds - st.constraint_seconds) * 1e3 / static_cast<double>(run.n);
    }
    runs.push_back(run);
  }
  std::vector<double> warm_mask, warm_step, warm_ratio;
  for (size_t i = 1; i < runs.size(); ++i) {
    warm_mask.push_back(runs[i].mask_ms);
    warm_step.push_back(runs[i].step_ms);
    warm_ratio.push_back(runs[i].step_ms > 0 ? runs[i].mask_ms / runs[i].step_ms : 0.0);
  }
  const double cold_ratio = runs[0].step_ms > 0 ? runs[0].mask_ms / runs[0].step_ms : 0.0;
  const std::string what = grammar.empty() ? (a.schema_file.empty() ? "any JSON object" : a.schema_file) : a.grammar_file;
  if (json != nullptr) {
    (*json)["constrained"] = {{"constraint", what},
                              {"n_vocab", n_vocab},
                              {"tokens_per_run", runs.back().n},
                              {"cold_setup_ms", runs[0].setup_ms},
                              {"warm_setup_ms", runs.back().setup_ms},
                              {"cold_mask_ms_per_token", runs[0].mask_ms},
                              {"cold_mask_fraction_of_step", cold_ratio},
                              {"warm_mask_ms_per_token_median", median(warm_mask)},
                              {"decode_step_ms_median", median(warm_step)},
                              {"warm_mask_fraction_of_step_median", median(warm_ratio)}};
    return 0;
  }
  std::printf("\nconstrained decoding (%s, vocabulary %lld, %lld tokens per run):\n", what.c_str(),
              static_cast<long long>(n_vocab), static_cast<long long>(runs.back().n));
  std::printf("| run | mask + advance ms/token | decode step ms/token | mask / step |\n| --- | ---: | ---: | ---: |\n");
  std::printf("| first (cold mask cache) | %.4f | %.3f | %.1f%% |\n", runs[0].mask_ms, runs[0].step_ms, 100.0 * cold_ratio);
  std::printf("| later (median of %d) | %.4f | %.3f | %.1f%% |\n", a.reps, median(warm_mask), median(warm_step),
              100.0 * median(warm_ratio));
  std::printf("building the constraint: %.1f ms the first time (schema compiled, vocabulary indexed), %.2f ms after "
              "(cached)\n", runs[0].setup_ms, runs.back().setup_ms);
  return 0;
}

}  // namespace pocket::cli
