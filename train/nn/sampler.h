// Batched sampling of chat answers from the libtorch model: MOPD's on-policy samples and greedy answers for
// evaluation. Internal to train/ (includes torch); answers.h is the torch-free entry point.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "nn/llama_torch.h"

namespace pocket::train {

// Sampling decodes incrementally with a KV cache (LlamaImpl::forward_cached): the prompts in one pass, then
// one column per new token, logits at the last column only; the loss pass over the sampled batch is the
// ordinary forward().
struct SampleOptions {
  int64_t max_new_tokens = 64;    // per row; fewer when the prompt leaves less room in n_ctx_train
  double temperature = 1.0;       // 0: greedy (argmax); otherwise softmax(logits / temperature)
  std::vector<int32_t> stop_ids;  // a sampled stop token ends the row's answer and is kept as part of it
};

// Prompts with their sampled answers, laid out for one forward pass over all rows. Row b is
// [pad x (P - len_b)] [prompt_b] [answer_b] [filler], P the longest prompt: padding is segment 0 and prompt +
// answer segment 1, with RoPE positions 0.. from the prompt's first token, so every prompt and answer is
// computed exactly as it is alone (the model masks attention across segments). Columns after a row's answer
// hold filler that no answer column can read (attention is causal).
struct SampledBatch {
  torch::Tensor inputs;     // [B, T] int64, the columns fed to the model (the last answer token is only a target)
  torch::Tensor positions;  // [B, T] int64
  torch::Tensor segments;   // [B, T] int64
  torch::Tensor mask;       // [B, T] f32: 1 where the logits at this column predict an answer token
  std::vector<std::vector<int32_t>> answers;  // the sampled tokens of each row, stop token included when drawn
  std::vector<bool> stopped;                  // the row ended at a stop token (not at its token budget)
  int64_t n_tokens = 0;                       // prompt + answer tokens over all rows (no padding)
};

// Samples an answer after each prompt (prompts non-empty). Row b draws from its own generator seeded with
// row_seeds[b] (one per prompt; unused when greedy), so a prompt's sample does not depend on which other
// prompts share its batch: the same seeds give the same samples in one process or split over several.
// Runs without gradients.
SampledBatch sample_batch(Llama& model, const std::vector<std::vector<int32_t>>& prompts, const SampleOptions& o,
                          const std::vector<uint64_t>& row_seeds);

}  // namespace pocket::train
