// score-tasks --task-layer: the answers of a .pocket model through the runtime's task layer (src/task/)
// instead of free generation — extraction and tool calls constrained to a JSON schema with grounded values,
// intent and route chosen by label probabilities, rewrites generated as before. docs/tasks.md.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "data/tasks.h"

namespace pocket::train {

// The extraction schema of the product task (docs/tasks.md): every string a span of the description, the
// price a number written in it.
const nlohmann::ordered_json& product_schema();

// The tool-call schema for a tool prompt: one alternative per listed tool `name(arg, optional?)` (string
// arguments spans of the request, amounts numbers in it, currencies ISO codes) plus {"tool":"none","args":{}}.
nlohmann::ordered_json tool_call_schema(const std::string& prompt);

// The task layer's request for one example (the prompt's instruction line is the task layer's default, so
// the model sees the same prompt as with free generation). `beams`: the extraction request's "beams" (0: the task layer's default).
nlohmann::ordered_json task_layer_request(const TaskExample& e, int32_t max_tokens, int32_t beams = 0);

// The answers, one per example, as the scorer reads them (compact JSON, a label, a sentence).
Expected<std::vector<std::string>> task_layer_answers(const std::string& model_path, const std::vector<TaskExample>& data,
                                                      int32_t max_tokens, int32_t threads, int32_t beams = 0);

}  // namespace pocket::train
