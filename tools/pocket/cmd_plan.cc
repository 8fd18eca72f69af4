// `pocket plan -m M -c CTX`: the exact bytes a session would hold, computed without allocating anything.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "core/thread_pool.h"
#include "format/package.h"
#include "model/memory_plan.h"

namespace pocket::cli {

void register_plan(CLI::App& app) {
  struct Args {
    std::string model;
    int64_t ctx = 0, batch = 0;
    int threads = 0;
    double budget_mb = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("plan", "Print a session's memory plan (weights, KV cache, activations, logits)");
  c->add_option("-m,--model", a->model, "Model package (.pocket)")->required();
  c->add_option("-c,--ctx-size", a->ctx, "Context length (default: the package's)");
  c->add_option("-b,--batch-size", a->batch, "Rows per prefill pass (default: min(ctx, 128))");
  c->add_option("-t,--threads", a->threads, "Threads (default: physical cores)");
  c->add_option("--mem-budget", a->budget_mb, "Check the plan against this many MiB (exit 1 if over)");
  c->callback([a] {
    OpenOptions lazy;
    lazy.load = FileLoad::kMapLazy;  // the descriptor only
    auto pkg = Package::open(a->model, lazy);
    if (!pkg) throw CLI::RuntimeError(report("plan", pkg.status()));
    auto h = HParams::from_json(pkg->descriptor_json());
    if (!h) throw CLI::RuntimeError(report("plan", h.status()));
    auto cfg = InferenceConfig::from_json(pkg->config_json());
    if (!cfg) throw CLI::RuntimeError(report("plan", cfg.status()));
    SessionShape s;
    s.n_ctx = a->ctx > 0 ? a->ctx : cfg->context_length;
    s.n_batch = a->batch > 0 ? std::min(a->batch, s.n_ctx) : std::min<int64_t>(s.n_ctx, kDefaultBatch);
    s.n_threads = a->threads > 0 ? a->threads : ThreadPool::default_threads();
    s.n_logit_rows = 1;
    s.residual_act = residual_activations(*pkg);
    s.kv_f16 = kv_cache_f16(*pkg);  // as a session decides it (it printed the f32 size for every model before)
    const MemoryPlan p = make_memory_plan(*h, s, pkg->file_size());
    std::printf("model %s, context %lld, batch %lld, %lld threads\n%s", a->model.c_str(), static_cast<long long>(s.n_ctx),
                static_cast<long long>(s.n_batch), static_cast<long long>(s.n_threads), p.to_string().c_str());
    if (a->budget_mb > 0) {
      const double need = static_cast<double>(p.total()) / (1024.0 * 1024.0);
      if (need > a->budget_mb) {
        std::printf("over budget: needs %.2f MiB, budget %.2f MiB\n", need, a->budget_mb);
        throw CLI::RuntimeError(1);
      }
      std::printf("within budget: needs %.2f MiB of %.2f MiB\n", need, a->budget_mb);
    }
  });
}

}  // namespace pocket::cli
