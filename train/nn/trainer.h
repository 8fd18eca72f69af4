// The training and evaluation entry points every pocket-train stage uses (torch-free header; the libtorch
// code is in trainer.cc). Pretraining and SFT share one loop: they differ in how rows are packed and in
// the loss mask (SFT learns assistant tokens only) and in where the weights start.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "run/checkpoint.h"
#include "run/named_tensor.h"
#include "run/run_log.h"
#include "run/train_config.h"

namespace pocket::train {

struct TrainSummary {
  int64_t first_step = 0;          // > 0 when the run resumed from a checkpoint
  int64_t steps_done = 0;          // optimiser steps completed in total
  std::vector<StepRecord> steps;   // one record per step run by this process
  std::vector<EvalRecord> evals;
  double tokens_per_s = 0;         // this process's run, all ranks' tokens counted
  std::string checkpoint;          // the last checkpoint committed (rank 0)
};

// Runs (or resumes, when cfg.out_dir holds a checkpoint) a training run. With dist.world > 1 every process
// calls this with the same cfg and its own rank; rank 0 writes logs and checkpoints.
Expected<TrainSummary> run_training(const TrainConfig& cfg, const DistOptions& dist = {});

// Whether this libtorch can train on a CUDA device here (a CUDA build and a visible GPU); TrainConfig::device
// "cuda" needs it.
bool torch_cuda_available();

// The weights of a checkpoint (a run directory follows its `latest`), with its metadata.
struct LoadedCheckpoint {
  std::string dir;
  CheckpointMeta meta;
  std::vector<NamedTensor> weights;
  std::vector<uint8_t> tokenizer;  // the tokenizer section bytes it was trained with
};
Expected<LoadedCheckpoint> load_checkpoint(const std::string& path);

struct EvalOptions {
  std::vector<std::string> data;   // token shards; empty: the checkpoint's training data
  bool heldout = true;             // evaluate its held-out split (false: every document)
  int64_t rows = 64;               // rows of seq_len tokens (fewer when the split is smaller)
  int64_t micro_batch = 8;
  std::string answers;             // JSONL conversations: greedy answers compared with the last assistant turn
  int64_t max_answers = 32;
  int64_t max_answer_tokens = 32;
};
struct EvalResult {
  double loss = 0;                 // mean per target token
  int64_t tokens = 0;
  double answer_accuracy = -1;     // exact match after trimming whitespace (-1 when no answers given)
  int64_t n_answers = 0;
  std::vector<std::string> sample_answers;  // the first few, for reading
};
Expected<EvalResult> evaluate_checkpoint(const std::string& path, const EvalOptions& opts);

}  // namespace pocket::train
