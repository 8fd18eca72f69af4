// Training and evaluating the block drafter (`pocket-train drafter`; docs/training.md, "Block drafter"):
// the frozen target's tapped states, anchor blocks in the target's greedy answers, a position-weighted
// cross-entropy, AdamW with warmup + cosine, held-out greedy acceptance length, resumable checkpoints,
// export of the f32 and quantised packages. Torch-free header.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/drafter_data.h"

namespace pocket::train {

struct DrafterTrainOptions {
  std::string target;     // the target .pocket
  std::string data;       // drafter-data file (training)
  std::string eval_data;  // drafter-data file (held-out; empty: no evaluation)
  std::string run_dir;
  int64_t n_layers = 2;                 // drafter blocks
  std::vector<int32_t> taps = {1, 3};   // tapped target layers
  int32_t block = 8;                    // tokens per draft
  int64_t steps = 3000;
  double lr = 1e-3, min_lr_ratio = 0.1, weight_decay = 0.01, grad_clip = 1.0;
  int64_t warmup = 100;
  double gamma = 4.0;               // position weight exp(-(r-1)/gamma)
  int64_t seqs_per_step = 16;
  int64_t anchors_per_seq = 16;     // anchor blocks sampled per sequence per step (all when fewer)
  int64_t log_every = 20, eval_every = 500, ckpt_every = 250, eval_seqs = 250;
  int32_t threads = 1;
  uint64_t seed = 1;
  bool resume = false;
  bool random_init = false;  // random blocks instead of the target's last layers (tests)
  std::string init_package;  // start from this drafter package's weights (same configuration), e.g. to
                             // continue a finished run with a fresh schedule, or to warm-start a drafter for
                             // a fine-tuned target from the previous target's drafter (only the fingerprint
                             // may differ)
  bool quiet = false;
  int64_t stop_at = 0;       // > 0: checkpoint and return at this step, as if interrupted (tests)
  std::vector<std::string> export_types = {"q8", "q4_g32"};  // besides f32: RUN/drafter-<type>.pocket
};

// Trains (or resumes from run_dir/latest) for o.steps steps, evaluates every eval_every steps, checkpoints
// every ckpt_every steps and at the end, then writes run_dir/drafter-f32.pocket and one package per
// export type.
Status train_block_drafter(const DrafterTrainOptions& o);

// Greedy acceptance of drafts against the target's own tokens, per task (index = TaskKind) and overall.
struct DrafterTaskStats {
  int64_t n_sequences = 0;
  int64_t n_anchors = 0;
  double sum_accept = 0;        // sum over anchors of 1 + leading drafts equal to the target's tokens
  int64_t walk_tokens = 0;      // generated tokens after the first, along the greedy speculative walk
  int64_t walk_passes = 0;      // verify passes of that walk
  double tau_anchor() const { return n_anchors > 0 ? sum_accept / static_cast<double>(n_anchors) : 0; }
  double tau() const { return walk_passes > 0 ? static_cast<double>(walk_tokens) / static_cast<double>(walk_passes) : 0; }
};
struct DrafterEvalReport {
  double loss = 0;                     // position-weighted CE per labelled block position
  std::vector<double> position_acc;    // top-1 accuracy at block position r = 1..B (index r-1)
  std::array<DrafterTaskStats, 5> tasks;
  DrafterTaskStats all;
  std::string table() const;  // human table: tau per task, per-position accuracy
  std::string json() const;
};

// Evaluates the drafter package `drafter_path` (f32 or quantised, decoded to f32) against `target_path`
// on every anchor of the first `limit` sequences (0: all) of the drafter-data file `data_path`.
Expected<DrafterEvalReport> evaluate_drafter_package(const std::string& drafter_path, const std::string& target_path,
                                                     const std::string& data_path, int64_t limit, int32_t threads,
                                                     double gamma = 4.0);

}  // namespace pocket::train
