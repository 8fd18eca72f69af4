// One JSON request for every task (the server's POST /v1/pocket/task, the C API's pocket_task and
// `pocket task --json`): parses and checks the request, runs the task, returns the result as JSON.
#include <cmath>

#include "task/task.h"

namespace pocket {

namespace {

nlohmann::ordered_json usage(const GenerateStats& st) {
  return {{"prompt_tokens", st.n_prompt},
          {"completion_tokens", st.n_generated},
          {"prefill_tokens_per_second", st.prefill_tps()},
          {"decode_tokens_per_second", st.decode_tps()},
          {"constraint_ms", st.constraint_seconds * 1e3}};
}

nlohmann::ordered_json classify_json(const ClassifyResult& c) {
  nlohmann::ordered_json labels = nlohmann::ordered_json::array();
  for (const LabelScore& l : c.labels) {
    labels.push_back({{"label", l.label}, {"probability", l.probability}, {"logprob", l.logprob}, {"tokens", l.n_tokens}});
  }
  return {{"label", c.top}, {"confidence", c.confidence}, {"margin", c.margin}, {"entropy", c.entropy}, {"labels", labels}};
}

// Known keys per task: anything else is an error naming it (a misspelt "lables" must not be ignored).
Status check_keys(const nlohmann::ordered_json& req, std::initializer_list<const char*> extra) {
  static const char* kCommon[] = {"task", "text", "instruction", "max_tokens", "temperature", "seed", "system", "chat"};
  for (auto it = req.begin(); it != req.end(); ++it) {
    bool known = false;
    for (const char* k : kCommon) known = known || it.key() == k;
    for (const char* k : extra) known = known || it.key() == k;
    if (!known) return invalid_argument("[task] unknown key '" + it.key() + "' in the request");
  }
  return Status::ok();
}

template <typename T>
Status get(const nlohmann::ordered_json& req, const char* key, T* out, const char* type) {
  auto it = req.find(key);
  if (it == req.end()) return Status::ok();
  bool ok = false;
  if constexpr (std::is_same_v<T, std::string>) ok = it->is_string();
  else if constexpr (std::is_same_v<T, bool>) ok = it->is_boolean();
  else if constexpr (std::is_integral_v<T>) ok = it->is_number_integer();
  else ok = it->is_number();
  if (!ok) return invalid_argument(std::string("[task] '") + key + "' must be " + type);
  *out = it->get<T>();
  return Status::ok();
}

}  // namespace

nlohmann::ordered_json redact_result_json(std::string_view text, const RedactResult& r) {
  nlohmann::ordered_json spans = nlohmann::ordered_json::array();
  for (const RedactSpan& sp : r.spans) {
    spans.push_back({{"begin", sp.begin}, {"end", sp.end}, {"kind", sp.kind}, {"source", sp.source},
                     {"text", text.substr(sp.begin, sp.end - sp.begin)}});
  }
  return {{"task", "redact"}, {"text", r.text}, {"spans", spans}};
}

Expected<nlohmann::ordered_json> run_task(Session& s, const nlohmann::ordered_json& req, const std::atomic<bool>* cancel,
                                          const TaskGenerateFn& generate) {
  if (!req.is_object()) return invalid_argument("[task] the request must be a JSON object");
  std::string task, text, instruction;
  POCKET_RETURN_IF_ERROR(get(req, "task", &task, "a string"));
  POCKET_RETURN_IF_ERROR(get(req, "text", &text, "a string"));
  POCKET_RETURN_IF_ERROR(get(req, "instruction", &instruction, "a string"));
  if (task.empty()) return invalid_argument("[task] 'task' is required: extract, classify, route, rewrite or redact");
  if (!req.contains("text")) return invalid_argument("[task] 'text' is required");
  TaskOptions o;
  o.cancel = cancel;
  o.generate = generate;
  int64_t max_tokens = o.max_tokens;
  double temperature = 0.0;
  uint64_t seed = 0;
  POCKET_RETURN_IF_ERROR(get(req, "max_tokens", &max_tokens, "an integer"));
  POCKET_RETURN_IF_ERROR(get(req, "temperature", &temperature, "a number"));
  POCKET_RETURN_IF_ERROR(get(req, "seed", &seed, "a non-negative integer"));
  POCKET_RETURN_IF_ERROR(get(req, "system", &o.system, "a string"));
  POCKET_RETURN_IF_ERROR(get(req, "chat", &o.chat, "a boolean"));
  if (max_tokens < 1 || max_tokens > 1 << 20) return invalid_argument("[task] 'max_tokens' must be in 1..1048576");
  if (!(temperature >= 0.0) || !std::isfinite(temperature)) return invalid_argument("[task] 'temperature' must be >= 0");
  o.max_tokens = static_cast<int32_t>(max_tokens);
  if (temperature > 0.0) {
    o.sampling = SamplingParams{};
    o.sampling.temperature = static_cast<float>(temperature);
  }
  o.sampling.seed = seed;

  if (task == "extract") {
    POCKET_RETURN_IF_ERROR(check_keys(req, {"schema", "ground", "beams"}));
    bool ground = false;
    POCKET_RETURN_IF_ERROR(get(req, "ground", &ground, "a boolean"));
    int64_t beams = 0;
    POCKET_RETURN_IF_ERROR(get(req, "beams", &beams, "an integer"));
    if (req.contains("beams") && (beams < 1 || beams > 16)) return invalid_argument("[task] 'beams' must be in 1..16");
    if (beams > 1 && temperature > 0.0) {
      return invalid_argument("[task] 'beams' > 1 searches for the most probable answer: it needs temperature 0");
    }
    o.beams = static_cast<int32_t>(beams);
    std::string schema;
    if (auto it = req.find("schema"); it != req.end()) {
      if (!it->is_object()) return invalid_argument("[task] 'schema' must be a JSON object (a JSON schema)");
      schema = it->dump();
    }
    POCKET_ASSIGN_OR_RETURN(ExtractResult r, task_extract(s, text, schema, o, ground, instruction));
    const AnswerConfidence& c = r.confidence;
    return nlohmann::ordered_json{{"task", task},
                                  {"result", r.value},
                                  {"valid", r.validation_errors.empty()},
                                  {"validation_errors", r.validation_errors},
                                  {"confidence", {{"min_token_probability", c.min_token_probability},
                                                  {"mean_token_logprob", c.mean_token_logprob},
                                                  {"mean_entropy", c.mean_entropy},
                                                  {"sequence_logprob", c.sequence_logprob}}},
                                  {"text", r.text},
                                  {"usage", usage(r.stats)}};
  }
  if (task == "classify") {
    POCKET_RETURN_IF_ERROR(check_keys(req, {"labels", "calibration_t"}));
    auto it = req.find("labels");
    if (it == req.end() || !it->is_array()) return invalid_argument("[task] classify needs 'labels', an array of strings");
    std::vector<std::string> labels;
    for (const auto& l : *it) {
      if (!l.is_string()) return invalid_argument("[task] every label must be a string");
      labels.push_back(l.get<std::string>());
    }
    double t = 1.0;
    POCKET_RETURN_IF_ERROR(get(req, "calibration_t", &t, "a number"));
    POCKET_ASSIGN_OR_RETURN(ClassifyResult r, task_classify(s, text, labels, o, instruction, t));
    nlohmann::ordered_json j = classify_json(r);
    j["task"] = task;
    return j;
  }
  if (task == "route") {
    POCKET_RETURN_IF_ERROR(check_keys(req, {"threshold", "calibration_t"}));
    double threshold = 0.5, t = 1.0;
    POCKET_RETURN_IF_ERROR(get(req, "threshold", &threshold, "a number"));
    POCKET_RETURN_IF_ERROR(get(req, "calibration_t", &t, "a number"));
    POCKET_ASSIGN_OR_RETURN(RouteResult r, task_route(s, text, threshold, o, instruction, t));
    return nlohmann::ordered_json{{"task", task}, {"route", r.route}, {"p_local", r.p_local}, {"confidence", r.confidence},
                          {"threshold", threshold}, {"entropy", r.scores.entropy}, {"scores", classify_json(r.scores)}};
  }
  if (task == "rewrite") {
    POCKET_RETURN_IF_ERROR(check_keys(req, {}));
    POCKET_ASSIGN_OR_RETURN(RewriteResult r, task_rewrite(s, text, o, instruction));
    return nlohmann::ordered_json{{"task", task}, {"text", r.text}, {"usage", usage(r.stats)}};
  }
  if (task == "redact") {
    POCKET_RETURN_IF_ERROR(check_keys(req, {"model"}));
    bool use_model = false;
    POCKET_RETURN_IF_ERROR(get(req, "model", &use_model, "a boolean"));
    POCKET_ASSIGN_OR_RETURN(RedactResult r, task_redact(use_model ? &s : nullptr, text, o));
    return redact_result_json(text, r);
  }
  return invalid_argument("[task] unknown task '" + task + "' (extract, classify, route, rewrite, redact)");
}

}  // namespace pocket
