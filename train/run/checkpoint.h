// Checkpoint directories: run_dir/ckpt-NNNNNNN/{model.pt, optim.pt, rng.pt, meta.json, tokenizer.bin} and
// run_dir/latest naming the newest. A checkpoint is written to a .tmp directory and renamed into place, and
// `latest` is replaced atomically, so an interruption never leaves a half checkpoint that resume would read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/batch_loader.h"
#include "model/hparams.h"
#include "run/train_config.h"

namespace pocket::train {

struct CheckpointMeta {
  int64_t step = 0;          // optimiser steps completed
  LoaderState loader;        // the training loader's position after `step` steps
  int64_t tokens = 0;        // tokens processed so far (all processes)
  double elapsed_s = 0;      // training time so far (excluding evaluation)
  TrainConfig config;        // the run's configuration
  HParams hparams;           // the model
};

std::string checkpoint_name(int64_t step);  // "ckpt-0000100"
Status write_checkpoint_meta(const std::string& dir, const CheckpointMeta& m);
Expected<CheckpointMeta> read_checkpoint_meta(const std::string& dir);

// Renames `tmp_dir` to run_dir/checkpoint_name(step), points run_dir/latest at it and removes all but the
// newest `keep` checkpoints.
Status commit_checkpoint(const std::string& run_dir, const std::string& tmp_dir, int64_t step, int keep = 2);

// A run directory (follows `latest`) or a checkpoint directory -> the checkpoint directory.
Expected<std::string> resolve_checkpoint(const std::string& path);
bool has_checkpoint(const std::string& run_dir);

Expected<std::vector<uint8_t>> read_binary_file(const std::string& path);
Status write_binary_file(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace pocket::train
