// The SFT loop engine (`pocket-train loop`): evaluate, classify failures, train on examples aimed at the top
// failure classes, and keep a round only if no (task, language) cell drops more than a margin (else roll
// back); every round's table goes to OUT/loop.json. Guide: docs/mopd.md. Torch-free header.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "data/task_scorer.h"
#include "data/tasks.h"
#include "loop/failure_classes.h"
#include "nn/answers.h"
#include "run/train_config.h"

namespace pocket::train {

// ---- the regression gate

struct CellChange {
  TaskKind task = TaskKind::kExtract;
  Lang lang = Lang::kEn;
  int64_t n = 0;
  double before = 0, after = 0;  // the task metric (task_scorer.h) on the held-out examples of the cell
  double se = 0;                 // paired_gate: standard error of the mean per-example change (0 otherwise)
  double allowed = 0;            // the drop the gate allowed this cell: margin + z * se
};
struct GateDecision {
  bool accepted = false;
  double margin = 0;
  double z = 0;                   // paired_gate's z (0: the point-estimate gate)
  std::vector<CellChange> cells;  // every cell scored before, in task then language order
  double worst_drop = 0;          // max over cells of before - after (negative: every cell improved)
  std::string reason;             // which cells broke the gate, or the worst cell when it held
};
// Accepts iff every cell scored before scores at least before - margin after (a cell missing after counts as 0).
GateDecision regression_gate(const std::vector<CellScore>& before, const std::vector<CellScore>& after, double margin);

// The noise-aware gate (`loop --gate-z Z`). With a few dozen examples per cell one flipped answer moves an
// accuracy cell by 1/n, so a point-estimate gate at a small margin rejects rounds for noise. Both models
// answered the same examples, so each cell's change is a mean of paired per-example differences
// d_i = after_i - before_i with standard error se = sd(d) / sqrt(n) (sample sd; 0 when n < 2). A cell breaks
// the gate only when its drop exceeds margin + z * se: a one-sided test of "the cell dropped by more than the
// margin" (z = 1.64: a round whose true drops are all within the margin is wrongly rejected <= 5 % of the
// time per cell). The price is power: small cells let larger real drops through, and loop.json records each
// cell's se and allowed drop so a reader sees how much. z = 0 is exactly regression_gate. Each entry of
// `examples` is one held-out example's metric before and after.
struct PairedScore {
  TaskKind task = TaskKind::kExtract;
  Lang lang = Lang::kEn;
  double before = 0, after = 0;
};
GateDecision paired_gate(const std::vector<PairedScore>& examples, double margin, double z);

// ---- failures and the examples that target them

struct FailureCount {
  TaskKind task = TaskKind::kExtract;
  Lang lang = Lang::kEn;
  FailureClass cls = FailureClass::kOther;
  int64_t n = 0;                   // failing examples of the cell in this class
  std::vector<std::string> hints;  // their distinct gold labels / tool names (FailureReport::hint)
};
// Failure counts of `preds` (one per example of `eval`), per (task, language, class), in that order.
std::vector<FailureCount> count_failures(const std::vector<TaskExample>& eval, const std::vector<std::string>& preds);

struct TargetQuota {
  TaskKind task = TaskKind::kExtract;
  Lang lang = Lang::kEn;
  FailureClass cls = FailureClass::kOther;
  int64_t n = 0;  // examples to draw
  std::vector<std::string> hints;
};
// The `top_k` (task, class) pairs with the most failures over both languages, and `n_examples` split over
// them in proportion to their counts, each pair's share over its languages in proportion to theirs.
std::vector<TargetQuota> plan_targets(const std::vector<FailureCount>& counts, int64_t top_k, int64_t n_examples);

// Draws each quota's examples from the task generators (seeded from `seed` and the quota), preferring
// examples that exercise the class (example_targets; after 64 draws without one, any example of the cell),
// and never a prompt in `exclude` (the held-out splits).
std::vector<TaskExample> targeted_examples(const std::vector<TargetQuota>& plan, uint64_t seed,
                                           const std::unordered_set<std::string>& exclude);

// ---- the loop

struct LoopConfig {
  std::string init;                // the checkpoint (run or checkpoint directory) the loop starts from
  std::string tasks_dir;           // make-tasks output: train.jsonl (replay), dev.jsonl, test.jsonl
  std::string eval_split = "dev";  // the held-out split evaluated and gated on (test stays untouched)
  std::string out_dir;             // loop.json, round-NN/{data.jsonl, data.shard, run/}
  int64_t rounds = 3;
  double margin = 0.02;            // the most any (task, language) cell may drop
  double gate_z = 0;               // > 0: paired_gate (noise-aware) with this z; 0: regression_gate
  int64_t eval_per_cell = 20;      // held-out examples per cell (the first ones of the split, in file order)
  int64_t examples_per_round = 2000;
  double replay_fraction = 0.5;    // share of a round's examples replayed from train.jsonl
  int64_t top_classes = 3;
  uint64_t seed = 1;
  AnswerOptions answers;           // how answers are generated for evaluation (greedy by default)
  TrainConfig sft;                 // each round's fine-tune: optimiser, schedule, rows; data/init/out set per round
};

// How the loop evaluates and trains; tests replace them. answer: a checkpoint's answers to the examples;
// fine_tune: SFT from `init` on `data`, in `round_dir`; returns the new checkpoint (run) directory.
struct LoopHooks {
  std::function<Expected<std::vector<std::string>>(const std::string& checkpoint, const std::vector<TaskExample>& ex)>
      answer;
  std::function<Expected<std::string>(const std::string& init, const std::vector<TaskExample>& data,
                                      const std::string& round_dir)>
      fine_tune;
};
// checkpoint_answers (answers.h) and run_training (SFT on the round's examples tokenised with the
// checkpoint's tokenizer and chat template).
LoopHooks default_loop_hooks(const LoopConfig& c);

struct LoopRound {
  int64_t round = 0;
  std::string started_from, candidate, checkpoint;  // checkpoint: the one the next round starts from
  std::vector<FailureCount> failures;               // of started_from, on the held-out examples
  std::vector<TargetQuota> targets;
  int64_t n_targeted = 0, n_replay = 0;
  GateDecision gate;
};
struct LoopResult {
  std::vector<CellScore> start;     // the cells of the checkpoint this invocation started from
  std::vector<LoopRound> rounds;    // the rounds this invocation ran (loop.json also keeps earlier ones)
  std::string checkpoint;           // the last accepted checkpoint (init when none was)
};

// Runs the rounds. A round: failures of the current checkpoint on the held-out examples -> plan_targets ->
// targeted_examples + replay from train.jsonl -> hooks.fine_tune -> re-evaluation -> regression_gate; accepted,
// the candidate becomes current, else the next round starts again from current. Stops early when no
// failures are left. Resumes after the rounds already recorded in out_dir/loop.json.
Expected<LoopResult> run_sft_loop(const LoopConfig& c, const LoopHooks& hooks);

}  // namespace pocket::train
