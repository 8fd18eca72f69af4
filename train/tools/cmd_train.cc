// `pocket-train pretrain` and `pocket-train sft`: flags -> TrainConfig -> run_training. With --nproc N the
// command re-executes itself N times as ranks 0..N-1 of a data-parallel group (spawn_ranks, args.h).
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "nn/trainer.h"

namespace pocket::train::cli {

int cmd_train(Stage stage, int argc, char** argv) {
  const char* name = stage == Stage::kSft ? "sft" : "pretrain";
  Args a(argc, argv, 2);
  if (a.has("help")) {
    std::printf("usage: pocket-train %s [flags]\n%s", name, train_flags_help());
    return 0;
  }
  if (std::string u = a.unknown(train_flag_names()); !u.empty()) {
    return report(name, invalid_argument("unknown flag(s) " + u + " (see --help)"));
  }
  TrainConfig cfg;
  cfg.stage = stage;
  if (stage == Stage::kSft) {  // SFT defaults: short runs over small data, from a pretrained model
    cfg.lr = 3e-4;
    cfg.min_lr = 3e-5;
    cfg.warmup_steps = 20;
    cfg.weight_decay = 0.0;
    cfg.max_steps = 200;
    cfg.eval_interval = 50;
  }
  DistOptions dist;
  int64_t nproc = 1;
  if (Status st = apply_train_flags(a, &cfg, &dist, &nproc); !st.is_ok()) return report(name, st);
  if (stage == Stage::kSft && cfg.init_from.empty() && !has_checkpoint(cfg.out_dir)) {
    return report(name, invalid_argument("sft needs --init PRETRAINED_RUN_DIR"));
  }
  if (nproc > 1) return spawn_ranks(argc, argv, nproc, cfg.out_dir);
  auto r = run_training(cfg, dist);
  if (!r) return report(name, r.status());
  return 0;
}

}  // namespace pocket::train::cli
