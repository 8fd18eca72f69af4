// Failure classes of task answers and the traits that target them (failure_classes.h).
#include "loop/failure_classes.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "data/task_scorer.h"

namespace pocket::train {

namespace {

constexpr std::string_view kNames[kNumFailureClasses] = {
    "empty",       "invalid_json", "missing_field", "extra_field",       "wrong_value",           "hallucinated_value",
    "wrong_tool",  "wrong_label",  "invalid_label", "rewrite_unchanged", "rewrite_overcorrected", "rewrite_wrong",
    "other"};

std::string trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(ws) - b + 1));
}

// Trimmed, lower-case, trailing '.' dropped: how the scorer compares labels.
std::string label_of(std::string_view s) {
  std::string out = trim(s);
  while (!out.empty() && (out.back() == '.' || out.back() == ' ')) out.pop_back();
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// key -> value text, nested objects as "args.city"; strings by value, other values by their JSON text
// (numbers in shortest form), nulls dropped — the scorer's pairs, kept as a map.
void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, std::string>* out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix + it.key();
    const nlohmann::json& v = it.value();
    if (v.is_null()) continue;
    if (v.is_object()) flatten(v, key + ".", out);
    else (*out)[key] = v.is_string() ? v.get<std::string>() : v.dump();
  }
}

bool json_fields(std::string_view text, std::map<std::string, std::string>* out) {
  nlohmann::json j = nlohmann::json::parse(trim(text), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  flatten(j, "", out);
  return true;
}

void add(FailureReport* r, FailureClass c) {
  if (std::find(r->classes.begin(), r->classes.end(), c) == r->classes.end()) r->classes.push_back(c);
}

void classify_json(const TaskExample& gold, std::string_view pred, FailureReport* r) {
  std::map<std::string, std::string> g, p;
  json_fields(gold.answer, &g);
  if (!json_fields(pred, &p)) {
    add(r, FailureClass::kInvalidJson);
    return;
  }
  if (gold.task == TaskKind::kTool) {
    r->hint = g.count("tool") ? g["tool"] : "";
    if (p.count("tool") == 0 || p["tool"] != g["tool"]) {
      add(r, FailureClass::kWrongTool);
      return;  // the arguments of another tool are not comparable field by field
    }
  }
  for (const auto& [key, value] : g) {
    auto it = p.find(key);
    if (it == p.end()) {
      add(r, FailureClass::kMissingField);
    } else if (it->second != value) {
      add(r, gold.prompt.find(it->second) == std::string::npos ? FailureClass::kHallucinatedValue
                                                               : FailureClass::kWrongValue);
    }
  }
  for (const auto& [key, value] : p) {
    if (g.count(key) == 0) add(r, FailureClass::kExtraField);
  }
}

bool valid_label(TaskKind task, const std::string& label) {
  if (task == TaskKind::kRoute) return label == "local" || label == "cloud";
  const auto& labels = intent_labels();
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// Fields of a JSON answer (extract) or arguments of a tool call; -1 when it is not a JSON object.
int n_fields(const TaskExample& e) {
  std::map<std::string, std::string> f;
  if (!json_fields(e.answer, &f)) return -1;
  if (e.task != TaskKind::kTool) return static_cast<int>(f.size());
  return static_cast<int>(f.size()) - (f.count("tool") ? 1 : 0);
}

std::string tool_name(const TaskExample& e) {
  std::map<std::string, std::string> f;
  json_fields(e.answer, &f);
  return f.count("tool") ? f["tool"] : "";
}

}  // namespace

std::string_view failure_class_name(FailureClass c) { return kNames[static_cast<int>(c)]; }

Expected<FailureClass> parse_failure_class(std::string_view name) {
  for (int i = 0; i < kNumFailureClasses; ++i) {
    if (kNames[i] == name) return static_cast<FailureClass>(i);
  }
  return invalid_argument("[loop] unknown failure class '" + std::string(name) + "'");
}

std::string rewrite_input(const TaskExample& e) {
  for (std::string_view head : {std::string_view("Correct the sentence: "), std::string_view("改正句子：")}) {
    if (e.prompt.rfind(head, 0) == 0) return e.prompt.substr(head.size());
  }
  return e.prompt;
}

FailureReport classify_failure(const TaskExample& gold, std::string_view prediction) {
  FailureReport r;
  r.exact = score_answer(gold.task, gold.answer, prediction).exact;
  if (r.exact) return r;
  if (trim(prediction).empty()) {
    add(&r, FailureClass::kEmpty);
    if (gold.task == TaskKind::kIntent || gold.task == TaskKind::kRoute) r.hint = label_of(gold.answer);
    if (gold.task == TaskKind::kTool) r.hint = tool_name(gold);
    return r;
  }
  switch (gold.task) {
    case TaskKind::kExtract:
    case TaskKind::kTool:
      classify_json(gold, prediction, &r);
      break;
    case TaskKind::kIntent:
    case TaskKind::kRoute: {
      r.hint = label_of(gold.answer);
      add(&r, valid_label(gold.task, label_of(prediction)) ? FailureClass::kWrongLabel : FailureClass::kInvalidLabel);
      break;
    }
    case TaskKind::kRewrite: {
      const std::string input = trim(rewrite_input(gold)), pred = trim(prediction), want = trim(gold.answer);
      if (input == want) add(&r, FailureClass::kRewriteOvercorrected);
      else if (pred == input) add(&r, FailureClass::kRewriteUnchanged);
      else add(&r, FailureClass::kRewriteWrong);
      break;
    }
  }
  if (r.classes.empty()) add(&r, FailureClass::kOther);
  std::sort(r.classes.begin(), r.classes.end());
  return r;
}

bool example_targets(FailureClass c, const TaskExample& e, const std::vector<std::string>& hints) {
  auto hinted = [&](const std::string& v) {
    return hints.empty() || std::find(hints.begin(), hints.end(), v) != hints.end();
  };
  switch (c) {
    case FailureClass::kMissingField:  // many fields to copy: extract 4+, tool 2+ arguments
      return n_fields(e) >= (e.task == TaskKind::kTool ? 2 : 4);
    case FailureClass::kExtraField:  // few fields, so that leaving the rest out is what is learned
      return n_fields(e) >= 0 && n_fields(e) <= (e.task == TaskKind::kTool ? 1 : 3);
    case FailureClass::kWrongTool:
      return hinted(tool_name(e));
    case FailureClass::kWrongLabel:
    case FailureClass::kInvalidLabel:
      return hinted(label_of(e.answer));
    case FailureClass::kEmpty:
      if (e.task == TaskKind::kIntent || e.task == TaskKind::kRoute) return hinted(label_of(e.answer));
      if (e.task == TaskKind::kTool) return hinted(tool_name(e));
      return true;
    case FailureClass::kRewriteOvercorrected:
      return trim(rewrite_input(e)) == trim(e.answer);
    case FailureClass::kRewriteUnchanged:
    case FailureClass::kRewriteWrong:
      return trim(rewrite_input(e)) != trim(e.answer);
    default:
      return true;
  }
}

}  // namespace pocket::train
