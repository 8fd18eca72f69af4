// How the task layer turns a request into the model's prompt: the task's instruction line before the text
// (the format the default model was fine-tuned on, docs/tasks.md), one user turn in the package's chat
// template, the user's text always encoded as plain text (special-token spellings in it stay text).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/model.h"

namespace pocket {

// True when `text` holds a CJK ideograph or CJK punctuation (the instruction is then given in Chinese).
bool looks_chinese(std::string_view text);

// The user turn for `task` ("extract", "classify"/"intent", "route", "rewrite", "tool") over `text`:
// the default instruction in the text's language, or `instruction` when not empty, then the text.
std::string task_user_message(std::string_view task, std::string_view text, std::string_view instruction);

// Token ids of one user turn (after an optional system turn) ending with the assistant's generation
// prompt; BOS first where the package asks for it. `chat` false or a package without a chat template:
// the user message alone. Special-token text in `user` or `system` is encoded as plain text.
Expected<std::vector<int32_t>> render_task_prompt(const Model& model, std::string_view user, std::string_view system,
                                                  bool chat);

// The tokens a generation stops at (EOS and the package's stop tokens, each once), as the session stops:
// an answer's probability ends with the probability that one of them follows it.
std::vector<int32_t> stop_token_ids(const Model& model);

struct TaskOptions;
struct ClassifyResult;
class Session;
// Scores `labels` as the answer to an already rendered prompt (task_classify and task_route; task.h).
Expected<ClassifyResult> classify_prompt(Session& s, std::span<const int32_t> prompt,
                                         const std::vector<std::string>& labels, const TaskOptions& opts,
                                         double calibration_t);

}  // namespace pocket
