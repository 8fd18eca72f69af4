// App-task data for fine-tuning small models: five generated tasks (extraction, intent, rewriting, tool
// choice, routing) in English and Chinese, split train/dev/test with no prompt shared between splits.
// Deterministic for a seed and sizes. Formats and examples: docs/tasks.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/chat_data.h"

namespace pocket::train {

enum class TaskKind { kExtract, kIntent, kRewrite, kTool, kRoute };
enum class Lang { kEn, kZh };

inline constexpr std::array<TaskKind, 5> kAllTasks = {TaskKind::kExtract, TaskKind::kIntent, TaskKind::kRewrite,
                                                      TaskKind::kTool, TaskKind::kRoute};
inline constexpr std::array<Lang, 2> kAllLangs = {Lang::kEn, Lang::kZh};

std::string_view task_name(TaskKind t);  // "extract", "intent", "rewrite", "tool", "route"
std::string_view lang_name(Lang l);      // "en", "zh"
Expected<TaskKind> parse_task_kind(std::string_view name);
Expected<Lang> parse_lang(std::string_view name);

// One example: a single user turn and the expected assistant answer.
struct TaskExample {
  TaskKind task = TaskKind::kExtract;
  Lang lang = Lang::kEn;
  std::string prompt;
  std::string answer;
};

// {"messages":[{"role":"user",...},{"role":"assistant",...}],"task":"extract","lang":"zh"}: a chat line that
// `pocket-train tokenize --chat` and `sft --eval-data` read (they ignore the extra keys).
std::string task_example_to_json(const TaskExample& e);
// Parses such lines; the prompt is the last user turn before the last assistant turn. Errors name the line.
Expected<std::vector<TaskExample>> parse_task_examples_jsonl(const std::string& text, const std::string& source);

// The intent labels of the intent task, in a fixed order.
const std::vector<std::string>& intent_labels();

// Generator options. open_values (0..1): in extraction, the chance that each of the brand, colour and
// product name is composed fresh from parts (an open vocabulary) instead of drawn from the generator's fixed
// lexicon, so a model must copy what the text says rather than recognise a value it has seen. 0 (the
// default) gives exactly the lexicon-only examples of earlier versions.
struct TaskGenOptions {
  double open_values = 0.0;
};

// One example of `task` in `lang`, drawn from a generator seeded with `seed`.
TaskExample generate_task_example(TaskKind task, Lang lang, uint64_t seed, const TaskGenOptions& o = {});

struct TaskSplitSizes {
  int64_t train = 20000, dev = 500, test = 1000;
};
struct TaskSets {
  std::vector<TaskExample> train, dev, test;
};

// Each split holds its size spread evenly over the 10 (task, language) cells (the remainder to the first
// cells), mixed in a seeded order. Test is drawn first, then dev, then train, each cell from its own seeded
// stream, skipping any prompt already drawn, so the splits are disjoint and free of duplicate prompts. A cell
// whose generator runs out of new prompts (after many tries) is left short rather than looping.
TaskSets make_task_sets(uint64_t seed, const TaskSplitSizes& sizes, const TaskGenOptions& o = {});

}  // namespace pocket::train
