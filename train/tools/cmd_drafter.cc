// `pocket-train drafter`: train a block drafter for a target .pocket on drafter-data output and export its
// packages; with --eval-package, measure a drafter package's greedy acceptance on a drafter-data file.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "nn/drafter_trainer.h"

namespace pocket::train::cli {

namespace {

Expected<std::vector<int32_t>> parse_layers(const std::string& s) {
  std::vector<int32_t> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      out.push_back(static_cast<int32_t>(std::stoi(part)));
    } catch (...) {
      return invalid_argument("[drafter] --taps takes comma-separated layer numbers, got '" + s + "'");
    }
  }
  return out;
}

}  // namespace

int cmd_drafter(int argc, char** argv) {
  Args a(argc, argv, 2);
  const bool eval_only = a.has("eval-package");
  if (a.has("help") || !a.has("target") || !a.has("data") || (!eval_only && !a.has("out"))) {
    std::printf(
        "usage: pocket-train drafter --target TARGET.pocket --data TRAIN.bin -o RUNDIR [--eval-data DEV.bin]\n"
        "         [--layers 2] [--taps 1,3] [--block 8] [--steps N] [--lr 1e-3] [--warmup 100] [--gamma 4]\n"
        "         [--seqs 16] [--anchors 16] [--eval-every 500] [--eval-seqs 250] [--ckpt-every 250]\n"
        "         [--log-every 20] [--threads 1] [--seed 1] [--export q8,q4_g32] [--init DRAFTER.pocket]\n"
        "         [--resume] [--quiet]\n"
        "       pocket-train drafter --eval-package DRAFTER.pocket --target TARGET.pocket --data TEST.bin\n"
        "         [--limit N] [--threads 1] [--json OUT]\n"
        "  trains a DFlash-style block drafter on the target's greedy outputs (drafter-data); writes\n"
        "  RUNDIR/drafter-f32.pocket and RUNDIR/drafter-<type>.pocket. --eval-package prints the greedy\n"
        "  acceptance length tau per task (tokens per verify pass) and per-position accuracy\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"target", "data", "out", "eval-data", "layers", "taps", "block", "steps", "lr",
                                 "warmup", "gamma", "seqs", "anchors", "eval-every", "eval-seqs", "ckpt-every",
                                 "log-every", "threads", "seed", "export", "resume", "quiet", "eval-package", "limit",
                                 "json", "random-init", "init", "help"});
      !u.empty()) {
    return report("drafter", invalid_argument("unknown flag(s) " + u));
  }
  auto threads = a.i64("threads", 1);
  if (!threads || *threads < 1) return report("drafter", invalid_argument("bad --threads"));
  if (eval_only) {
    auto limit = a.i64("limit", 0);
    auto gamma = a.f64("gamma", 4.0);
    if (!limit || *limit < 0 || !gamma) return report("drafter", invalid_argument("bad --limit/--gamma"));
    auto rep = evaluate_drafter_package(a.str("eval-package"), a.str("target"), a.str("data"), *limit,
                                        static_cast<int32_t>(*threads), *gamma);
    if (!rep) return report("drafter", rep.status());
    std::printf("%s", rep->table().c_str());
    if (a.has("json")) {
      std::ofstream out(a.str("json"));
      out << rep->json() << "\n";
      if (!out) return report("drafter", io_error("[drafter] cannot write " + a.str("json")));
    }
    return 0;
  }
  DrafterTrainOptions o;
  o.target = a.str("target");
  o.data = a.str("data");
  o.eval_data = a.str("eval-data");
  o.run_dir = a.str("out");
  auto layers = a.i64("layers", o.n_layers);
  auto block = a.i64("block", o.block);
  auto steps = a.i64("steps", o.steps);
  auto lr = a.f64("lr", o.lr);
  auto warmup = a.i64("warmup", o.warmup);
  auto gamma = a.f64("gamma", o.gamma);
  auto seqs = a.i64("seqs", o.seqs_per_step);
  auto anchors = a.i64("anchors", o.anchors_per_seq);
  auto eval_every = a.i64("eval-every", o.eval_every);
  auto eval_seqs = a.i64("eval-seqs", o.eval_seqs);
  auto ckpt_every = a.i64("ckpt-every", o.ckpt_every);
  auto log_every = a.i64("log-every", o.log_every);
  auto seed = a.i64("seed", static_cast<int64_t>(o.seed));
  if (!layers || !block || !steps || !lr || !warmup || !gamma || !seqs || !anchors || !eval_every || !eval_seqs ||
      !ckpt_every || !log_every || !seed || *layers < 1 || *block < 1 || *steps < 1 || *lr <= 0 || *warmup < 0 ||
      *gamma <= 0 || *seqs < 1 || *anchors < 1 || *log_every < 1) {
    return report("drafter", invalid_argument("bad numeric flag (see --help)"));
  }
  o.n_layers = *layers;
  o.block = static_cast<int32_t>(*block);
  o.steps = *steps;
  o.lr = *lr;
  o.warmup = *warmup;
  o.gamma = *gamma;
  o.seqs_per_step = *seqs;
  o.anchors_per_seq = *anchors;
  o.eval_every = *eval_every;
  o.eval_seqs = *eval_seqs;
  o.ckpt_every = *ckpt_every;
  o.log_every = *log_every;
  o.seed = static_cast<uint64_t>(*seed);
  o.threads = static_cast<int32_t>(*threads);
  o.resume = a.has("resume");
  o.quiet = a.has("quiet");
  o.random_init = a.has("random-init");
  o.init_package = a.str("init");
  if (a.has("taps")) {
    auto taps = parse_layers(a.str("taps"));
    if (!taps) return report("drafter", taps.status());
    o.taps = *taps;
  }
  if (a.has("export")) {
    o.export_types.clear();
    std::stringstream ss(a.str("export"));
    std::string t;
    while (std::getline(ss, t, ',')) {
      if (!t.empty() && t != "f32") o.export_types.push_back(t);
    }
  }
  Status st = train_block_drafter(o);
  if (!st.is_ok()) return report("drafter", st);
  return 0;
}

}  // namespace pocket::train::cli
