// `pocket plan -m M -c CTX [--spec block -md D]`: the exact bytes a session would hold, computed without
// allocating anything; with a block drafter or a draft model, its package and session bytes beside the target's.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "core/thread_pool.h"
#include "format/package.h"
#include "model/memory_plan.h"
#include "model/model.h"
#include "spec_flags.h"
#include "speculative/block_drafter.h"
#include "speculative/draft_length.h"
#include "speculative/draft_model_drafter.h"

namespace pocket::cli {

namespace {

struct PlanArgs {
  std::string model, spec = "none", draft_model;
  int64_t ctx = 0, batch = 0;
  int threads = 0, draft_max = 8;
  double budget_mb = 0;
};

double mib(uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

int plan(const PlanArgs& a) {
  if (Status st = check_spec_flags("plan", a.spec, a.draft_model); !st.is_ok()) return report("plan", st);
  if (a.spec != "none" && (a.draft_max < 1 || a.draft_max > kMaxDraft)) {
    return report("plan", invalid_argument("[plan] --draft-max must be 1.." + std::to_string(kMaxDraft)));
  }
  OpenOptions lazy;
  lazy.load = FileLoad::kMapLazy;  // the descriptor only
  auto pkg = Package::open(a.model, lazy);
  if (!pkg) return report("plan", pkg.status());
  auto h = HParams::from_json(pkg->descriptor_json());
  if (!h) return report("plan", h.status());
  auto cfg = InferenceConfig::from_json(pkg->config_json());
  if (!cfg) return report("plan", cfg.status());
  SessionShape s;
  s.n_ctx = a.ctx > 0 ? a.ctx : cfg->context_length;
  s.n_batch = a.batch > 0 ? std::min(a.batch, s.n_ctx) : std::min<int64_t>(s.n_ctx, kDefaultBatch);
  s.n_threads = a.threads > 0 ? a.threads : ThreadPool::default_threads();
  s.n_logit_rows = 1;
  s.residual_act = residual_activations(*pkg);
  s.kv_f16 = kv_cache_f16(*pkg);  // as a session decides it (it printed the f32 size for every model before)

  // A speculative session verifies k + 1 rows in one pass (a block drafter: k at most its block) and, with a
  // block drafter, keeps the tapped layers' outputs for it.
  std::shared_ptr<const BlockDrafterModel> drafter;
  int64_t k = a.draft_max;
  if (a.spec == "block") {
    auto target = Model::load(a.model, lazy);
    if (!target) return report("plan", target.status());
    auto d = BlockDrafterModel::load(a.draft_model, lazy);
    if (!d) return report("plan", d.status());
    if (Status st = (*d)->config().check_target(**target); !st.is_ok()) return report("plan", st);
    drafter = std::move(*d);
    k = std::min<int64_t>(k, drafter->config().block_size);
    s.hidden_layers = drafter->config().target_layers;
  }
  std::shared_ptr<const Model> draft_model;  // --spec draft: the draft model's own session
  if (a.spec == "draft") {
    auto target = Model::load(a.model, lazy);
    if (!target) return report("plan", target.status());
    auto d = Model::load(a.draft_model, lazy);
    if (!d) return report("plan", d.status());
    if (Status st = check_vocab_compatible(**target, **d, a.draft_model); !st.is_ok()) return report("plan", st);
    draft_model = std::move(*d);
  }
  if (a.spec != "none") {
    s.n_logit_rows = k + 1;
    s.n_batch = std::min(s.n_ctx, std::max(s.n_batch, k + 1));
  }
  const MemoryPlan p = make_memory_plan(*h, s, pkg->file_size());
  std::printf("model %s, context %lld, batch %lld, %lld threads", a.model.c_str(), static_cast<long long>(s.n_ctx),
              static_cast<long long>(s.n_batch), static_cast<long long>(s.n_threads));
  if (a.spec != "none") std::printf(", --spec %s (k = %lld: %lld logit rows)", a.spec.c_str(),
                                    static_cast<long long>(k), static_cast<long long>(k + 1));
  std::printf("\n%s", p.to_string().c_str());
  uint64_t total = p.total();
  if (drafter != nullptr) {
    const BlockDrafterConfig& c = drafter->config();
    const MemoryPlan d = drafter->session_plan(s.n_ctx, s.n_threads);
    std::string taps;
    for (int32_t l : c.target_layers) taps += (taps.empty() ? "" : ",") + std::to_string(l);
    std::printf("\nblock drafter %s (%lld layers, block %d, target layers %s)\n%s", a.draft_model.c_str(),
                static_cast<long long>(c.blocks.n_layers), c.block_size, taps.c_str(), d.to_string().c_str());
    total += d.total();
    std::printf("\ntarget + drafter  %10.2f MiB\n", mib(total));
  }
  if (draft_model != nullptr) {
    const MemoryPlan d = DraftModelDrafter::plan_for(*draft_model, s.n_ctx, s.n_threads);
    std::printf("\ndraft model %s (%lld layers)\n%s", a.draft_model.c_str(),
                static_cast<long long>(draft_model->hparams().n_layers), d.to_string().c_str());
    total += d.total();
    std::printf("\ntarget + draft model  %10.2f MiB\n", mib(total));
  }
  if (a.budget_mb > 0) {
    const double need = mib(total);
    if (need > a.budget_mb) {
      std::printf("over budget: needs %.2f MiB, budget %.2f MiB\n", need, a.budget_mb);
      if ((drafter != nullptr || draft_model != nullptr) && mib(p.total()) <= a.budget_mb) {
        std::printf("the target alone fits (%.2f MiB): a session would decode without speculation\n", mib(p.total()));
      }
      return 1;
    }
    std::printf("within budget: needs %.2f MiB of %.2f MiB\n", need, a.budget_mb);
  }
  return 0;
}

}  // namespace

void register_plan(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* c = app.add_subcommand("plan", "Print a session's memory plan (weights, KV cache, activations, logits)");
  c->add_option("-m,--model", a->model, "Model package (.pocket)")->required();
  c->add_option("-c,--ctx-size", a->ctx, "Context length (default: the package's)");
  c->add_option("-b,--batch-size", a->batch, "Rows per prefill pass (default: min(ctx, 128))");
  c->add_option("-t,--threads", a->threads, "Threads (default: physical cores)");
  c->add_option("--mem-budget", a->budget_mb, "Check the plan against this many MiB (exit 1 if over)");
  c->add_option("--spec", a->spec, "Plan a speculative session: none, ngram or block (with the drafter, -md)")
      ->check(CLI::IsMember({"none", "ngram", "draft", "block"}));
  c->add_option("--model-draft", a->draft_model, "--spec block: the block drafter package (also -md)");
  c->add_option("--draft-max", a->draft_max, "Longest draft k (1..16): the verify pass's k + 1 logit rows");
  c->callback([a] {
    if (int rc = plan(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
