// Speculative rows of `pocket bench`: plain vs speculative greedy decoding of the same prompt, and the
// verify-pass cost (k + 1 rows with all logits) relative to one single-row decode step.
#include "bench_spec.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "commands.h"
#include "generate/session.h"
#include "sampling/rng.h"
#include "speculative/speculative_session.h"

namespace pocket::cli {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace

int bench_speculative(const SpecBenchArgs& a, nlohmann::json* json) {
  auto method = parse_spec_method(a.method);
  if (!method) return report("bench", method.status());
  OpenOptions open;
  open.load = a.no_mmap ? FileLoad::kRead : FileLoad::kMap;
  auto model = Model::load(a.model, open);
  if (!model) return report("bench", model.status());
  const HParams& h = (*model)->hparams();

  std::vector<int32_t> prompt;
  if (!a.prompt_file.empty()) {
    std::ifstream in(a.prompt_file, std::ios::binary);
    if (!in) return report("bench", io_error("[bench] cannot read prompt file '" + a.prompt_file + "'"));
    std::stringstream ss;
    ss << in.rdbuf();
    EncodeOptions eo;
    eo.add_bos = (*model)->config().add_bos;
    if (Status st = (*model)->tokenizer().encode(ss.str(), eo, &prompt); !st.is_ok()) return report("bench", st);
  } else {
    Rng rng(1234);
    prompt.resize(static_cast<size_t>(std::max(1, a.n_prompt)));
    for (auto& id : prompt) id = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(h.n_vocab));
  }
  SessionOptions so;
  so.n_threads = a.threads;
  so.n_ctx = std::min<int64_t>(h.n_ctx_train, static_cast<int64_t>(prompt.size()) + a.n_gen + kMaxDraft + 2);
  SpeculativeOptions spec;
  spec.method = *method;
  spec.draft_max = a.draft_max;
  spec.draft_model_path = a.draft_model;
  spec.draft_open = open;
  spec.fallback.enabled = a.fallback;
  auto plain = Session::create(*model, so);
  if (!plain) return report("bench", plain.status());
  auto specs = SpeculativeSession::create(*model, so, spec);
  if (!specs) return report("bench", specs.status());
  const std::string& off = (*specs)->spec_disabled_reason();
  if (!off.empty()) std::fprintf(stderr, "pocket bench: speculation off, decoding plainly: %s\n", off.c_str());

  GenerateOptions go;
  go.n_predict = a.n_gen;
  go.stop_at_eos = false;
  go.add_bos = false;  // the prompt is already encoded
  std::vector<int32_t> out_plain, out_spec;
  std::vector<double> tps_plain, tps_spec;
  SpecStats ss;
  for (int r = 0; r <= a.reps; ++r) {  // run 0 is the warm-up
    (*plain)->reset();
    (*specs)->reset();
    out_plain.clear();
    out_spec.clear();
    GenerateStats gp, gs;
    Status st = (*plain)->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
      out_plain.push_back(id);
      return true;
    }, nullptr, &gp);
    if (st.is_ok()) {
      st = (*specs)->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
        out_spec.push_back(id);
        return true;
      }, nullptr, &gs);
    }
    if (!st.is_ok()) return report("bench", st);
    if (r == 0) continue;
    tps_plain.push_back(gp.decode_tps());
    tps_spec.push_back(gs.decode_tps());
    ss = (*specs)->spec_stats();
  }
  const bool same = out_plain == out_spec;

  // The verify pass against one decode step, at the depth of the prompt: medians over alternating pairs.
  Transformer& t = (*specs)->transformer();  // sized for k + 1 logit rows
  const int64_t rows = a.draft_max + 1;
  std::vector<int32_t> batch(static_cast<size_t>(rows), prompt.back());
  const int64_t depth = static_cast<int64_t>(prompt.size());
  struct VerifyCost {
    int64_t rows;
    double step_s, verify_s;
    double ratio() const { return step_s > 0 ? verify_s / step_s : 0.0; }
  };
  auto measure = [&](int64_t n) -> Expected<VerifyCost> {
    std::vector<double> t1, tk;
    for (int r = 0; r <= a.reps * 4; ++r) {  // pair 0 is the warm-up
      t.truncate(depth);
      double s0 = now_s();
      POCKET_RETURN_IF_ERROR(t.forward(std::span<const int32_t>(batch.data(), 1), false));
      const double one = now_s() - s0;
      t.truncate(depth);
      s0 = now_s();
      POCKET_RETURN_IF_ERROR(t.forward(std::span<const int32_t>(batch.data(), static_cast<size_t>(n)), true));
      const double many = now_s() - s0;
      if (r == 0) continue;
      t1.push_back(one);
      tk.push_back(many);
    }
    return VerifyCost{n, median(t1), median(tk)};
  };
  std::vector<VerifyCost> curve;
  for (int64_t n = a.verify_curve ? 2 : rows; n <= rows; ++n) {
    Expected<VerifyCost> c = measure(n);
    if (!c) return report("bench", c.status());
    curve.push_back(*c);
  }
  t.truncate(depth);
  const VerifyCost& last = curve.back();  // k + 1 rows
  const double p = median(tps_plain), s = median(tps_spec);
  const std::string N = std::to_string(a.n_gen);
  if (json != nullptr) {
    (*json)["speculative"] = {{"method", a.method},
                              {"draft_max", a.draft_max},
                              {"prompt_tokens", prompt.size()},
                              {"plain_tps_median", p},
                              {"spec_tps_median", s},
                              {"speedup", p > 0 ? s / p : 0.0},
                              {"tokens_per_pass", ss.tokens_per_pass()},
                              {"acceptance_rate", ss.acceptance_rate()},
                              {"passes", ss.n_passes},
                              {"plain_passes", ss.n_plain},
                              {"fallback", a.fallback},
                              {"outputs_identical", same},
                              {"verify_rows", rows},
                              {"verify_ms", last.verify_s * 1e3},
                              {"decode_step_ms", last.step_s * 1e3},
                              {"verify_cost_ratio", last.ratio()},
                              {"spec_disabled_reason", off}};
    if (a.verify_curve) {
      nlohmann::json c = nlohmann::json::array();
      for (const VerifyCost& v : curve) {
        c.push_back({{"rows", v.rows}, {"verify_ms", v.verify_s * 1e3}, {"decode_step_ms", v.step_s * 1e3},
                     {"ratio", v.ratio()}});
      }
      (*json)["speculative"]["verify_curve"] = c;
    }
    return 0;  // "outputs_identical" says whether the outputs matched
  }
  std::printf("\n| test | t/s (median) | tokens/pass | acceptance | speedup |\n| --- | ---: | ---: | ---: | ---: |\n");
  std::printf("| tg%s plain | %.2f | 1.00 | - | 1.00x |\n", N.c_str(), p);
  std::printf("| tg%s spec=%s k=%d | %.2f | %.2f | %.1f%% | %.2fx |\n", N.c_str(), a.method.c_str(), a.draft_max, s,
              ss.tokens_per_pass(), 100.0 * ss.acceptance_rate(), p > 0 ? s / p : 0.0);
  std::printf("\nprompt %zu tokens; outputs %s; last run: %lld target passes, %lld of them plain (fallback)\n",
              prompt.size(), same ? "identical (lossless)" : "DIFFER", static_cast<long long>(ss.n_passes),
              static_cast<long long>(ss.n_plain));
  std::printf("verify pass of %lld rows at depth %lld: %.3f ms vs one decode step %.3f ms = %.2fx\n",
              static_cast<long long>(rows), static_cast<long long>(depth), last.verify_s * 1e3, last.step_s * 1e3,
              last.ratio());
  if (a.verify_curve) {
    std::printf("\n| rows verified (k + 1) | verify pass | decode step | ratio |\n| ---: | ---: | ---: | ---: |\n");
    for (const VerifyCost& v : curve) {
      std::printf("| %lld | %.3f ms | %.3f ms | %.2fx |\n", static_cast<long long>(v.rows), v.verify_s * 1e3,
                  v.step_s * 1e3, v.ratio());
    }
  }
  return same ? 0 : 1;
}

}  // namespace pocket::cli
