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
#include "speculative/block_drafter.h"
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

// One block drafter pass over the prompt's context (its features from the target's hidden states, fed chunk
// by chunk through the session's transformer `t`), in seconds: the median of `n` timed proposals after one.
Expected<double> time_block_drafter(const SpecBenchArgs& a, std::shared_ptr<const Model> model, Transformer& t,
                                    const std::vector<int32_t>& prompt, int n_threads, int n) {
  OpenOptions open;
  open.load = a.no_mmap ? FileLoad::kRead : FileLoad::kMap;
  POCKET_ASSIGN_OR_RETURN(auto dm, BlockDrafterModel::load(a.draft_model, open));
  const int32_t block = dm->config().block_size;
  ThreadPool pool(n_threads);
  POCKET_ASSIGN_OR_RETURN(auto drafter, PackagedBlockDrafter::create(model, std::move(dm), t.n_ctx(), &pool));
  const int64_t d = model->hparams().n_embd, n_ctx = static_cast<int64_t>(prompt.size()) - 1;  // the last: the anchor
  t.truncate(0);
  for (int64_t pos = 0; pos < n_ctx; pos += t.shape().n_batch) {
    const int64_t rows = std::min(t.shape().n_batch, n_ctx - pos);
    POCKET_RETURN_IF_ERROR(t.forward(std::span<const int32_t>(prompt.data() + pos, static_cast<size_t>(rows)), false));
    TargetHiddenStates hs;
    hs.layers = t.shape().hidden_layers;
    hs.data = t.hidden_states();
    hs.layer_stride = t.hidden_rows() * d;
    hs.pos0 = pos;
    hs.n_rows = rows;
    hs.n_embd = d;
    POCKET_RETURN_IF_ERROR(drafter->observe_hidden(hs));
  }
  std::vector<int32_t> out(static_cast<size_t>(std::min(a.draft_max, block)));
  std::vector<double> times;
  for (int r = 0; r <= n; ++r) {
    const double s0 = now_s();
    POCKET_ASSIGN_OR_RETURN(const int32_t drafted, drafter->propose(prompt, out));
    if (drafted <= 0) return Status(ErrorCode::kInternal, "[bench] the block drafter proposed nothing");
    if (r > 0) times.push_back(now_s() - s0);
  }
  return median(times);
}

}  // namespace

Expected<BenchSessions> make_bench_sessions(const std::shared_ptr<const Model>& model, const SessionOptions& so,
                                            const SpeculativeOptions& spec) {
  BenchSessions b;
  POCKET_ASSIGN_OR_RETURN(b.plain, Session::create(model, so));
  POCKET_ASSIGN_OR_RETURN(b.spec, SpeculativeSession::create(model, so, spec));
  const std::string& off = b.spec->spec_disabled_reason();
  if (!off.empty()) std::fprintf(stderr, "pocket bench: speculation off, decoding plainly: %s\n", off.c_str());
  return b;
}

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
  auto sessions = make_bench_sessions(*model, so, spec);
  if (!sessions) return report("bench", sessions.status());
  auto& plain = sessions->plain;
  auto& specs = sessions->spec;
  const std::string& off = specs->spec_disabled_reason();

  GenerateOptions go;
  go.n_predict = a.n_gen;
  go.stop_at_eos = false;
  go.add_bos = false;  // the prompt is already encoded
  std::vector<int32_t> out_plain, out_spec;
  std::vector<double> tps_plain, tps_spec;
  SpecStats ss;
  for (int r = 0; r <= a.reps; ++r) {  // run 0 is the warm-up
    plain->reset();
    specs->reset();
    out_plain.clear();
    out_spec.clear();
    GenerateStats gp, gs;
    Status st = plain->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
      out_plain.push_back(id);
      return true;
    }, nullptr, &gp);
    if (st.is_ok()) {
      st = specs->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
        out_spec.push_back(id);
        return true;
      }, nullptr, &gs);
    }
    if (!st.is_ok()) return report("bench", st);
    if (r == 0) continue;
    tps_plain.push_back(gp.decode_tps());
    tps_spec.push_back(gs.decode_tps());
    ss = specs->spec_stats();
  }
  const bool same = out_plain == out_spec;

  // The verify pass against one decode step, at the depth of the prompt: medians over alternating pairs.
  Transformer& t = specs->transformer();  // sized for k + 1 logit rows
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
  double draft_s = 0;  // one block drafter pass at the prompt's depth (--spec block)
  if (*method == SpecMethod::kBlock && off.empty() && prompt.size() >= 2) {
    Expected<double> ds = time_block_drafter(a, *model, t, prompt, specs->n_threads(), a.reps * 4);
    if (!ds) return report("bench", ds.status());
    draft_s = *ds;
    t.truncate(0);
  }
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
                              {"drafter_pass_ms", draft_s * 1e3},
                              {"drafter_pass_ratio", last.step_s > 0 ? draft_s / last.step_s : 0.0},
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
  if (draft_s > 0) {
    std::printf("block drafter pass at depth %lld: %.3f ms = %.2fx a decode step\n", static_cast<long long>(depth - 1),
                draft_s * 1e3, last.step_s > 0 ? draft_s / last.step_s : 0.0);
  }
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
