// `pocket-train loop`: the SFT loop engine — evaluate, classify failures, train on targeted examples, keep a
// round only if no (task, language) cell drops by more than --margin (docs/mopd.md). The fine-tune of each
// round takes sft's optimiser and cadence flags (args.h).
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "loop/sft_loop.h"

namespace pocket::train::cli {

int cmd_loop(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("init") || !a.has("tasks") || !a.has("out")) {
    std::printf(
        "usage: pocket-train loop --init CKPT --tasks DIR --out DIR [--rounds R] [--margin M] [--gate-z Z]\n"
        "         [--eval-split dev] [--eval-per-cell N] [--examples N] [--replay F] [--top-classes K] [--max-tokens N]\n"
        "         [--answer-batch N] [--seed S] [sft flags: --steps --batch --seq-len --lr --min-lr --warmup ...]\n"
        "  Each round: greedy answers of the current checkpoint on the first N examples per cell of DIR/<split>.jsonl\n"
        "  (20), failure classes counted, --examples (2000) new examples drawn for the top K (3) classes' cells,\n"
        "  a share --replay (0.5) of them replayed from DIR/train.jsonl, an SFT round, and the regression gate:\n"
        "  accepted iff no cell's score drops more than --margin (0.02), else rolled back. --gate-z Z > 0: the\n"
        "  noise-aware gate, a cell breaks it only when its drop exceeds margin + Z x the standard error of its\n"
        "  paired per-example changes (1.64: one-sided 5 %%). Writes OUT/loop.json\n"
        "  and OUT/round-NN/; running it again resumes after the rounds loop.json records.\n");
    return a.has("help") ? 0 : 1;
  }
  std::vector<std::string> known = train_flag_names();
  known.insert(known.end(), {"tasks", "rounds", "margin", "gate-z", "eval-split", "eval-per-cell", "examples", "replay",
                             "top-classes", "max-tokens", "answer-batch", "help"});
  if (std::string u = a.unknown(known); !u.empty()) {
    return report("loop", invalid_argument("unknown flag(s) " + u + " (see --help)"));
  }
  LoopConfig c;
  TrainConfig& sft = c.sft;
  sft.stage = Stage::kSft;  // sft's defaults for each round's fine-tune
  sft.lr = 3e-4;
  sft.min_lr = 3e-5;
  sft.warmup_steps = 10;
  sft.weight_decay = 0.0;
  sft.max_steps = 100;
  sft.eval_interval = 0;
  DistOptions dist;
  int64_t nproc = 1;
  if (Status st = apply_train_flags(a, &sft, &dist, &nproc); !st.is_ok()) return report("loop", st);
  if (nproc > 1 || dist.world > 1) return report("loop", invalid_argument("loop runs in one process"));
  c.init = a.str("init");
  c.tasks_dir = a.str("tasks");
  c.out_dir = a.str("out");
  c.eval_split = a.str("eval-split", c.eval_split);
  c.seed = sft.seed;
  auto rounds = a.i64("rounds", c.rounds);
  auto margin = a.f64("margin", c.margin);
  auto gate_z = a.f64("gate-z", c.gate_z);
  auto per_cell = a.i64("eval-per-cell", c.eval_per_cell);
  auto examples = a.i64("examples", c.examples_per_round);
  auto replay = a.f64("replay", c.replay_fraction);
  auto top = a.i64("top-classes", c.top_classes);
  auto max_tokens = a.i64("max-tokens", c.answers.max_new_tokens);
  auto batch = a.i64("answer-batch", c.answers.batch);
  for (const Status& st : {rounds.status(), margin.status(), gate_z.status(), per_cell.status(), examples.status(), replay.status(),
                           top.status(), max_tokens.status(), batch.status()}) {
    if (!st.is_ok()) return report("loop", st);
  }
  c.rounds = *rounds;
  c.margin = *margin;
  c.gate_z = *gate_z;
  c.eval_per_cell = *per_cell;
  c.examples_per_round = *examples;
  c.replay_fraction = *replay;
  c.top_classes = *top;
  c.answers.max_new_tokens = *max_tokens;
  c.answers.batch = *batch;
  c.answers.threads = sft.threads;
  auto r = run_sft_loop(c, default_loop_hooks(c));
  if (!r) return report("loop", r.status());
  std::printf("loop: %zu round(s) run; current checkpoint %s (table: %s/loop.json)\n", r->rounds.size(),
              r->checkpoint.c_str(), c.out_dir.c_str());
  return 0;
}

}  // namespace pocket::train::cli
