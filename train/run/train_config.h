// TrainConfig: everything one training run depends on (model, data, optimiser, schedule, cadence), with a
// JSON form stored in every checkpoint so a resumed run, an export or an eval knows what it is reading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/hparams.h"

namespace pocket::train {

enum class Stage { kPretrain, kSft };

struct TrainConfig {
  Stage stage = Stage::kPretrain;
  HParams model;                  // architecture (ignored when init_from names a checkpoint: its model wins)
  std::vector<std::string> data;  // token shards (SFT: shards with loss masks)
  std::string tokenizer;          // tokenizer section file (tokenizer.bin) to carry into checkpoints/exports
  std::string chat_template = "chatml";
  std::string out_dir;            // checkpoints, logs, plot
  std::string init_from;          // SFT: the pretrained checkpoint directory (its latest checkpoint)

  int64_t seq_len = 128;
  int64_t micro_batch = 8;        // rows per forward pass, per process
  int64_t grad_accum = 1;         // micro-batches per optimiser step
  int64_t max_steps = 1000;
  int64_t stop_after = 0;         // > 0: stop this process after this step (tests simulate interruption)

  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup_steps = 100;
  double weight_decay = 0.1;      // matrices only; norms and biases are not decayed
  double beta1 = 0.9, beta2 = 0.95, adam_eps = 1e-8;
  double grad_clip = 1.0;         // global L2 norm; 0 disables

  uint64_t seed = 1;
  double heldout_fraction = 0.05;
  int64_t eval_interval = 100;    // steps; 0 disables periodic evaluation
  int64_t eval_rows = 32;         // held-out rows per evaluation
  int64_t log_interval = 10;
  int64_t ckpt_interval = 500;    // and always at the end
  int32_t threads = 0;            // intra-op threads; 0 = torch's default
  std::string device = "cpu";     // "cpu", "cuda" or "cuda:N" (a CUDA build of libtorch and a visible GPU)
  bool plot = true;               // loss-curve PNG through gnuplot when it is installed
  bool quiet = false;             // no progress lines on stderr

  // SFT evaluation hook: greedy answers to up to this many held-out prompts are compared with the reference.
  int64_t sft_eval_examples = 16;
  std::string sft_eval_data;      // JSONL conversations for the hook (empty: no answer check)

  // Rows in one optimiser step across all processes.
  int64_t global_rows(int world) const { return micro_batch * grad_accum * world; }
  Status validate() const;
  std::string to_json() const;
  static Expected<TrainConfig> from_json(const std::string& text);
};

const char* stage_name(Stage s);

// Data-parallel placement of this process; world == 1 means a plain single-process run.
struct DistOptions {
  int rank = 0;
  int world = 1;
  std::string rendezvous;  // "file:/path/to/store" or "tcp:HOST:PORT" (rank 0 hosts the store)
};

// Cosine decay from lr to min_lr over [warmup_steps, max_steps), after a linear warm-up from lr/warmup.
double lr_at(const TrainConfig& c, int64_t step);

}  // namespace pocket::train
