// Task prompts as the chat models see them, and a checkpoint's answers to them computed in libtorch
// (batched, greedy by default) — the evaluation path of `pocket-train loop`. Torch-free header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/tasks.h"
#include "tokenizer/tokenizer.h"

namespace pocket::train {

// The example's user turn rendered with `chat_template` and the generation prompt, tokenised as SFT and
// `pocket run --special` tokenise it (special tokens parsed; BOS first unless the template renders it).
Expected<std::vector<int32_t>> encode_task_prompt(const Tokenizer& tok, const std::string& chat_template,
                                                  const TaskExample& e);

struct AnswerOptions {
  int64_t max_new_tokens = 96;
  int64_t batch = 16;        // prompts per forward pass (sorted by length, so padding stays small)
  double temperature = 0.0;  // 0: greedy
  uint64_t seed = 1;         // for temperature > 0
  int32_t threads = 0;       // torch intra-op threads; 0 leaves torch's setting
};

// The checkpoint's answer to every example, in order, decoded without the end-of-turn token. A prompt that
// leaves no room in the model's context gets an empty answer (scored as wrong), as in `score-tasks`.
Expected<std::vector<std::string>> checkpoint_answers(const std::string& checkpoint,
                                                      const std::vector<TaskExample>& examples,
                                                      const AnswerOptions& o);

}  // namespace pocket::train
