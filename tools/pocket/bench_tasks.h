// `pocket bench --spec METHOD --task-prompts FILE.jsonl`: speculative against plain greedy decoding on task
// prompts (the `pocket-train make-tasks` format), side by side in one process, reported per task and language.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pocket::cli {

struct TaskBenchArgs {
  std::string model, method, draft_model, tasks_file;
  int draft_max = 8;
  int per_task = 20;   // examples per task, the first in file order
  int n_gen = 128;     // most tokens generated per example (generation stops at a stop token)
  int reps = 3;        // timed runs per example and mode, alternating plain and speculative; medians kept
  int threads = 0;
  bool fallback = true;
  bool no_mmap = false;
};

// Prints a markdown table (or fills `json` when non-null). Returns the exit code: non-zero when an output
// differs from plain decoding (the report says which example) or on any error.
int bench_tasks(const TaskBenchArgs& a, nlohmann::json* json);

}  // namespace pocket::cli
