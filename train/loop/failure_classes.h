// Why a task answer failed: each wrong answer of the app tasks (docs/tasks.md) gets one or more failure classes
// (invalid JSON, missing/extra/wrong field, hallucinated value, wrong label, rewrite unchanged...), which the
// SFT loop engine (sft_loop.h) counts and targets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/tasks.h"

namespace pocket::train {

enum class FailureClass {
  kEmpty,                 // no answer at all
  kInvalidJson,           // extract, tool: not a JSON object
  kMissingField,          // extract: a gold field absent; tool: a gold argument absent
  kExtraField,            // a field or argument the gold answer does not have
  kWrongValue,            // a field present with another value that does appear in the prompt (wrong span)
  kHallucinatedValue,     // a field present with a wrong value that appears nowhere in the prompt
  kWrongTool,             // tool: another tool named (including "none" for a request a tool serves, and back)
  kWrongLabel,            // intent, route: a valid label, not the gold one
  kInvalidLabel,          // intent, route: not one of the task's labels
  kRewriteUnchanged,      // rewrite: the noisy input copied back although it needed correcting
  kRewriteOvercorrected,  // rewrite: the input was already correct and the answer changed it
  kRewriteWrong,          // rewrite: any other inexact correction
  kOther,                 // inexact for a reason none of the above names
};
inline constexpr int kNumFailureClasses = static_cast<int>(FailureClass::kOther) + 1;

std::string_view failure_class_name(FailureClass c);  // "invalid_json", "missing_field", ...
Expected<FailureClass> parse_failure_class(std::string_view name);

struct FailureReport {
  bool exact = false;                  // the scorer's exact match (then `classes` is empty)
  std::vector<FailureClass> classes;   // each at most once, in enum order
  std::string hint;                    // the gold label (intent, route) or tool name (tool) of a failure
};

// Classifies `prediction` against the example's gold answer. JSON answers are compared field by field
// (nested "args" flattened to "args.x"; numbers by their shortest text, as the scorer compares them).
FailureReport classify_failure(const TaskExample& gold, std::string_view prediction);

// The sentence a rewrite prompt asks to correct (the prompt without its instruction line).
std::string rewrite_input(const TaskExample& e);

// Whether `e` exercises what failure class `c` got wrong, so that training on it targets the class: e.g.
// examples with many fields for missing_field, few for extra_field, already-correct inputs for
// rewrite_overcorrected, the failing gold label for wrong_label. `hints` are the hints of the failures
// being targeted (any example of the cell qualifies when a class has no finer trait).
bool example_targets(FailureClass c, const TaskExample& e, const std::vector<std::string>& hints);

}  // namespace pocket::train
