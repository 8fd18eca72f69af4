// score-tasks --task-layer (task_layer_answers.h).
#include "task_layer_answers.h"

#include <cstdio>

#include "generate/session.h"
#include "task/task.h"

namespace pocket::train {

namespace {

// The text after the instruction the task layer puts back (task_user_message in src/task/task_prompt.cc).
std::string strip_instruction(const std::string& prompt) {
  static const char* kPrefixes[] = {"提取JSON：\n", "Extract JSON:\n", "判断意图：", "Classify intent: ",
                                    "路由（local或cloud）：\n", "Route (local or cloud):\n", "改正句子：",
                                    "Correct the sentence: ", "调用工具（JSON）：\n", "Call a tool (JSON):\n"};
  for (const char* p : kPrefixes) {
    const std::string_view ps(p);
    if (prompt.compare(0, ps.size(), ps) == 0) return prompt.substr(ps.size());
  }
  return prompt;
}

}  // namespace

const nlohmann::ordered_json& product_schema() {
  static const nlohmann::ordered_json s = nlohmann::ordered_json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "x-pocket-copy": true},
      "brand": {"type": "string", "x-pocket-copy": true},
      "price": {"type": "number", "minimum": 0, "x-pocket-copy": true},
      "colour": {"type": "string", "x-pocket-copy": true},
      "size": {"type": "string", "x-pocket-copy": true},
      "material": {"type": "string", "x-pocket-copy": true}
    },
    "required": ["name"],
    "additionalProperties": false
  })");
  return s;
}

nlohmann::ordered_json tool_call_schema(const std::string& prompt) {
  nlohmann::ordered_json alts = nlohmann::ordered_json::array();
  size_t pos = 0;
  while (pos < prompt.size()) {
    size_t end = prompt.find('\n', pos);
    if (end == std::string::npos) end = prompt.size();
    const std::string line = prompt.substr(pos, end - pos);
    pos = end + 1;
    const size_t open = line.find('('), close = line.rfind(')');
    if (line.rfind("- ", 0) != 0 || open == std::string::npos || close == std::string::npos || close < open) continue;
    const std::string name = line.substr(2, open - 2);
    nlohmann::ordered_json props = nlohmann::ordered_json::object(), required = nlohmann::ordered_json::array();
    std::string args = line.substr(open + 1, close - open - 1);
    size_t a = 0;
    while (a <= args.size() && !args.empty()) {
      size_t comma = args.find(',', a);
      if (comma == std::string::npos) comma = args.size();
      std::string arg = args.substr(a, comma - a);
      a = comma + 1;
      while (!arg.empty() && arg.front() == ' ') arg.erase(arg.begin());
      const bool optional = !arg.empty() && arg.back() == '?';
      if (optional) arg.pop_back();
      if (arg.empty()) continue;
      nlohmann::ordered_json p;
      if (arg == "amount" || arg == "max_price") p = {{"type", "number"}, {"minimum", 0}, {"x-pocket-copy", true}};
      else if (name == "convert_currency" && (arg == "from" || arg == "to")) p = {{"enum", {"USD", "EUR", "CNY", "JPY", "GBP"}}};
      else p = {{"type", "string"}, {"x-pocket-copy", true}};
      props[arg] = p;
      if (!optional) required.push_back(arg);
      if (comma == args.size()) break;
    }
    alts.push_back({{"type", "object"},
                    {"properties", {{"tool", {{"const", name}}},
                                    {"args", {{"type", "object"}, {"properties", props}, {"required", required},
                                              {"additionalProperties", false}}}}},
                    {"required", {"tool", "args"}},
                    {"additionalProperties", false}});
  }
  alts.push_back({{"type", "object"},
                  {"properties", {{"tool", {{"const", "none"}}},
                                  {"args", {{"type", "object"}, {"properties", nlohmann::ordered_json::object()},
                                            {"additionalProperties", false}}}}},
                  {"required", {"tool", "args"}},
                  {"additionalProperties", false}});
  return {{"anyOf", alts}};
}

namespace {

nlohmann::ordered_json plain_request(const TaskExample& e, int32_t max_tokens) {
  const std::string text = strip_instruction(e.prompt);
  switch (e.task) {
    case TaskKind::kExtract:
      return {{"task", "extract"}, {"text", text}, {"schema", product_schema()}, {"max_tokens", max_tokens}};
    case TaskKind::kIntent:
      return {{"task", "classify"}, {"text", text}, {"labels", intent_labels()}};
    case TaskKind::kRoute:
      return {{"task", "route"}, {"text", text}};
    case TaskKind::kTool:
      return {{"task", "extract"}, {"text", text}, {"schema", tool_call_schema(e.prompt)},
              {"instruction", e.lang == Lang::kZh ? "调用工具（JSON）：" : "Call a tool (JSON):"},
              {"max_tokens", max_tokens}};
    case TaskKind::kRewrite:
      return {{"task", "rewrite"}, {"text", text}, {"max_tokens", max_tokens}};
  }
  return {};
}

}  // namespace

nlohmann::ordered_json task_layer_request(const TaskExample& e, int32_t max_tokens, int32_t beams) {
  nlohmann::ordered_json req = plain_request(e, max_tokens);
  if (beams != 0 && req.value("task", "") == "extract") req["beams"] = beams;
  return req;
}

Expected<std::vector<std::string>> task_layer_answers(const std::string& model_path, const std::vector<TaskExample>& data,
                                                      int32_t max_tokens, int32_t threads, int32_t beams) {
  POCKET_ASSIGN_OR_RETURN(auto model, Model::load(model_path));
  SessionOptions so;
  so.n_threads = threads;
  so.n_logit_rows = 16;
  POCKET_ASSIGN_OR_RETURN(auto session, Session::create(model, so));
  std::vector<std::string> out;
  out.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    const nlohmann::ordered_json req = task_layer_request(data[i], max_tokens, beams);
    auto r = run_task(*session, req);
    std::string answer;
    if (!r) {
      // A prompt too long for the model scores as a wrong answer, as with free generation; any other error
      // is reported.
      if (r.status().code() != ErrorCode::kContextExceeded) {
        return Status(r.status().code(), r.status().message() + " (example " + std::to_string(i + 1) + ")");
      }
    } else if (r->contains("result")) {
      answer = (*r)["result"].dump();
    } else if (r->contains("label")) {
      answer = (*r)["label"].get<std::string>();
    } else if (r->contains("route")) {
      answer = (*r)["route"].get<std::string>();
    } else if (r->contains("text")) {
      answer = (*r)["text"].get<std::string>();
    }
    out.push_back(std::move(answer));
    if ((i + 1) % 100 == 0) std::fprintf(stderr, "score-tasks --task-layer: %zu / %zu\n", i + 1, data.size());
  }
  return out;
}

}  // namespace pocket::train
