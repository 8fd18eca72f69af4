// The optimiser and the on-disk training state shared by stages that run their own loop over the libtorch
// model (MOPD): AdamW with decay on matrices only, and a checkpoint (model, optimiser, RNG, metadata,
// tokenizer) written to a .tmp directory and committed atomically. Internal to train/ (includes torch).
#pragma once

#include <torch/optim/adamw.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "nn/llama_torch.h"
#include "run/checkpoint.h"
#include "run/train_config.h"
#include "tokenizer/tokenizer.h"

namespace pocket::train {

// AdamW over `params`: weight decay on matrices (dim >= 2), none on norms and biases, in two groups
// (matrices first); the schedule sets lr per step. Every training loop in train/ builds its optimiser here.
std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, double lr, double beta1,
                                                double beta2, double eps, double weight_decay);
// The same over the model's parameters with betas, eps, lr and weight decay from `c`.
std::unique_ptr<torch::optim::AdamW> make_adamw(Llama& model, const TrainConfig& c);

// Writes run_dir/ckpt-NNNNNNN (model.pt, optim.pt, rng.pt, meta.json, tokenizer.bin, plus `extra_files`
// as {name, text}) through a .tmp directory and commit_checkpoint; `committed` receives its path.
Status save_train_state(const std::string& run_dir, Llama& model, torch::optim::AdamW& opt, const CheckpointMeta& meta,
                        const std::vector<uint8_t>& tokenizer,
                        const std::vector<std::pair<std::string, std::string>>& extra_files, std::string* committed);

// Loads model.pt, optim.pt and rng.pt of checkpoint directory `dir` onto `device` (whatever device wrote them).
Status load_train_state(const std::string& dir, Llama& model, torch::optim::AdamW& opt, torch::Device device);

// The tokens that end a generated answer: EOS and the chat end-of-turn markers (<|im_end|>, <|eot_id|>).
std::vector<int32_t> end_of_turn_ids(const Tokenizer& tok);

}  // namespace pocket::train
