// Scoring of task answers (tasks.h): exact match, field-F1 over the key=value pairs of JSON answers,
// label accuracy, and a character edit similarity for rewrites; aggregated per (task, language).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/tasks.h"

namespace pocket::train {

// Field-F1 of a predicted JSON object against the gold one. Both are flattened to key=value pairs (nested
// objects as "args.city"; strings by value, numbers by their shortest text so 59.90 == 59.9 == "59.9";
// nulls dropped, so a null field counts as absent). Per example: precision = matched / predicted pairs,
// recall = matched / gold pairs, F1 their harmonic mean; 1 when both are empty. A prediction that is not a
// JSON object (after trimming whitespace) scores 0.
double field_f1(std::string_view gold_json, std::string_view pred_json);

// 1 - Levenshtein distance / the longer length, over Unicode code points (1 for two empty strings).
double edit_similarity(std::string_view a, std::string_view b);

struct AnswerScore {
  bool exact = false;    // trimmed equality; for JSON tasks, the same pairs in any key order
  double score = 0.0;    // the task's metric (task_metric_name)
};

// extract, tool: field_f1; intent, route: accuracy (trimmed, case-insensitive, final '.' ignored);
// rewrite: edit_sim (exact match is reported beside it).
AnswerScore score_answer(TaskKind task, std::string_view gold, std::string_view pred);
std::string_view task_metric_name(TaskKind task);

struct CellScore {
  TaskKind task;
  Lang lang;
  int64_t n = 0;
  double score_sum = 0.0;
  int64_t n_exact = 0;
  double score() const { return n > 0 ? score_sum / static_cast<double>(n) : 0.0; }
  double exact() const { return n > 0 ? static_cast<double>(n_exact) / static_cast<double>(n) : 0.0; }
};

// Accumulates scores per (task, language). Not thread-safe.
class TaskScoreboard {
 public:
  TaskScoreboard();
  AnswerScore add(const TaskExample& gold, std::string_view prediction);
  // The cells with at least one example, in task then language order.
  std::vector<CellScore> cells() const;
  int64_t n() const;
  double exact() const;        // over all examples
  double macro_score() const;  // mean of the non-empty cells' scores
  // A text table (task, lang, n, metric, score, exact, and an overall row) and the same as JSON.
  std::string table() const;
  std::string json() const;

 private:
  std::vector<CellScore> cells_;  // all 10 cells, task-major
};

}  // namespace pocket::train
