// `pocket-train make-tasks` (the generated app-task splits, docs/tasks.md) and `pocket-train score-tasks`
// (greedy answers of a .pocket model, or given predictions, scored per task and language).
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "args.h"
#include "commands.h"
#include "data/chat_data.h"
#include "data/task_scorer.h"
#include "data/tasks.h"
#include "generate/session.h"
#include "task_layer_answers.h"

namespace pocket::train::cli {

namespace {

Expected<std::string> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("[score-tasks] cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status write_split(const std::string& path, const std::vector<TaskExample>& v) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return io_error("[make-tasks] cannot write " + path);
  for (const auto& e : v) out << task_example_to_json(e) << "\n";
  out.flush();
  if (!out) return io_error("[make-tasks] write failed: " + path);
  return Status::ok();
}

// Predictions file: one JSON object per line with a string "prediction", in the order of the data file.
Expected<std::vector<std::string>> read_predictions(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(std::string text, read_all(path));
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("prediction") || !j["prediction"].is_string()) {
      return corrupt_file("[score-tasks] expected {\"prediction\": string}: " + path + ":" + std::to_string(line_no));
    }
    out.push_back(j["prediction"].get<std::string>());
  }
  return out;
}

// Greedy answers of the model at `model_path` to each prompt, rendered with the package's chat template as
// `pocket run --special` would see it. Progress goes to stderr.
Expected<std::vector<std::string>> generate_answers(const std::string& model_path, const std::vector<TaskExample>& data,
                                                    int32_t max_tokens, int32_t threads) {
  POCKET_ASSIGN_OR_RETURN(auto model, Model::load(model_path));
  std::string tmpl = model->config().chat_template;
  if (tmpl.empty() || tmpl == "none") tmpl = "chatml";
  SessionOptions so;
  so.n_threads = threads;
  POCKET_ASSIGN_OR_RETURN(auto session, Session::create(model, so));
  GenerateOptions go;
  go.n_predict = max_tokens;
  go.sampling = SamplingParams::greedy();
  go.add_bos = model->config().add_bos && tmpl != "llama2" && tmpl != "llama3";  // those render BOS themselves
  go.parse_special = true;
  go.stop_at_eos = true;
  std::vector<std::string> out;
  out.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    const Conversation c = {{"user", data[i].prompt}, {"assistant", data[i].answer}};
    POCKET_ASSIGN_OR_RETURN(std::string prompt, render_prompt(tmpl, c));
    session->reset();
    std::string answer;
    Status st = session->generate(prompt, go, [&](int32_t, std::string_view t) {
      answer.append(t);
      return true;
    });
    if (st.code() == ErrorCode::kContextExceeded) {
      answer.clear();  // scored as a wrong answer; the prompt does not fit this model
    } else if (!st.is_ok()) {
      return st;
    }
    out.push_back(std::move(answer));
    if ((i + 1) % 100 == 0) std::fprintf(stderr, "score-tasks: %zu / %zu\n", i + 1, data.size());
  }
  return out;
}

}  // namespace

int cmd_make_tasks(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("out")) {
    std::printf("usage: pocket-train make-tasks -o DIR [--seed S] [--train N] [--dev N] [--test N] [--open-values P]\n"
                "  writes DIR/{train,dev,test}.jsonl: the extract, intent, rewrite, tool and route tasks in English\n"
                "  and Chinese, chat lines {\"messages\":[user, assistant],\"task\",\"lang\"} (docs/tasks.md)\n"
                "  --open-values P (0..1, default 0): in extraction, each of brand, colour and product name is\n"
                "  composed fresh from parts with probability P instead of drawn from the fixed lexicon\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"out", "seed", "train", "dev", "test", "open-values", "help"}); !u.empty()) {
    return report("make-tasks", invalid_argument("unknown flag(s) " + u));
  }
  auto open_values = a.f64("open-values", 0.0);
  if (!open_values || !(*open_values >= 0.0 && *open_values <= 1.0)) {
    return report("make-tasks", invalid_argument("bad --open-values (a probability in [0, 1])"));
  }
  TaskGenOptions gen;
  gen.open_values = *open_values;
  TaskSplitSizes sizes;
  auto seed = a.i64("seed", 1);
  auto n_train = a.i64("train", sizes.train);
  auto n_dev = a.i64("dev", sizes.dev);
  auto n_test = a.i64("test", sizes.test);
  if (!seed || !n_train || !n_dev || !n_test || *n_train < 0 || *n_dev < 0 || *n_test < 0) {
    return report("make-tasks", invalid_argument("bad --seed/--train/--dev/--test (non-negative integers)"));
  }
  sizes = {*n_train, *n_dev, *n_test};
  const std::string dir = a.str("out");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return report("make-tasks", io_error("[make-tasks] cannot create " + dir + ": " + ec.message()));
  const TaskSets sets = make_task_sets(static_cast<uint64_t>(*seed), sizes, gen);
  const std::pair<const char*, const std::vector<TaskExample>*> splits[] = {
      {"train", &sets.train}, {"dev", &sets.dev}, {"test", &sets.test}};
  std::printf("%-8s %-4s %8s %8s %8s\n", "task", "lang", "train", "dev", "test");
  std::map<std::pair<int, int>, std::array<int64_t, 3>> counts;
  for (int s = 0; s < 3; ++s) {
    for (const auto& e : *splits[s].second) ++counts[{static_cast<int>(e.task), static_cast<int>(e.lang)}][s];
  }
  for (const auto& [key, n] : counts) {
    std::printf("%-8s %-4s %8lld %8lld %8lld\n", std::string(task_name(static_cast<TaskKind>(key.first))).c_str(),
                std::string(lang_name(static_cast<Lang>(key.second))).c_str(), (long long)n[0], (long long)n[1],
                (long long)n[2]);
  }
  std::printf("%-8s %-4s %8zu %8zu %8zu\n", "total", "", sets.train.size(), sets.dev.size(), sets.test.size());
  for (const auto& [name, v] : splits) {
    Status st = write_split(dir + "/" + name + ".jsonl", *v);
    if (!st.is_ok()) return report("make-tasks", st);
  }
  const int64_t want = sizes.train + sizes.dev + sizes.test;
  const int64_t got = static_cast<int64_t>(sets.train.size() + sets.dev.size() + sets.test.size());
  if (got < want) {
    std::fprintf(stderr, "make-tasks: warning: %lld examples asked for, %lld distinct ones generated\n",
                 (long long)want, (long long)got);
  }
  std::fprintf(stderr, "make-tasks: wrote %s/{train,dev,test}.jsonl\n", dir.c_str());
  return 0;
}

int cmd_score_tasks(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("data") || (a.has("model") == a.has("pred"))) {
    std::printf("usage: pocket-train score-tasks (-m MODEL.pocket | --pred PRED.jsonl) --data TEST.jsonl [--limit N]\n"
                "         [--max-tokens N] [--threads N] [--json OUT] [--save-pred OUT.jsonl] [--task-layer [--beams N]]\n"
                "  -m: greedy answers of the model (prompts rendered with its chat template); with --task-layer\n"
                "  through the runtime's task layer (schema-constrained, grounded extraction and tool calls, label\n"
                "  probabilities for intent and route; docs/tasks.md; --beams N: alternatives per value, 1 = greedy,\n"
                "  default the task layer's 2);\n"
                "  --pred: one\n"
                "  {\"prediction\": ...} line per data line, in order. Prints a table per task x language.\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"model", "pred", "data", "limit", "max-tokens", "threads", "json", "save-pred", "task-layer", "beams", "help"});
      !u.empty()) {
    return report("score-tasks", invalid_argument("unknown flag(s) " + u));
  }
  auto limit = a.i64("limit", 0);
  auto max_tokens = a.i64("max-tokens", 96);
  auto threads = a.i64("threads", 0);
  auto beams = a.i64("beams", 0);
  if (!limit || !max_tokens || !threads || *limit < 0 || *max_tokens < 1 || *threads < 0) {
    return report("score-tasks", invalid_argument("bad --limit/--max-tokens/--threads"));
  }
  if (!beams || (a.has("beams") && (*beams < 1 || *beams > 16 || !a.has("task-layer")))) {
    return report("score-tasks", invalid_argument("--beams must be in 1..16, with --task-layer"));
  }
  const std::string data_path = a.str("data");
  auto text = read_all(data_path);
  if (!text) return report("score-tasks", text.status());
  auto data = parse_task_examples_jsonl(*text, data_path);
  if (!data) return report("score-tasks", data.status());
  if (*limit > 0 && static_cast<size_t>(*limit) < data->size()) data->resize(static_cast<size_t>(*limit));

  Expected<std::vector<std::string>> preds =
      a.has("pred")         ? read_predictions(a.str("pred"))
      : a.has("task-layer") ? task_layer_answers(a.str("model"), *data, static_cast<int32_t>(*max_tokens),
                                                 static_cast<int32_t>(*threads), static_cast<int32_t>(*beams))
                            : generate_answers(a.str("model"), *data, static_cast<int32_t>(*max_tokens), static_cast<int32_t>(*threads));
  if (!preds) return report("score-tasks", preds.status());
  if (preds->size() < data->size()) {
    return report("score-tasks", invalid_argument("[score-tasks] " + std::to_string(preds->size()) +
                                                  " predictions for " + std::to_string(data->size()) +
                                                  " examples: " + a.str("pred")));
  }
  TaskScoreboard board;
  for (size_t i = 0; i < data->size(); ++i) board.add((*data)[i], (*preds)[i]);
  std::printf("%s", board.table().c_str());
  if (a.has("json")) {
    std::ofstream out(a.str("json"));
    out << board.json() << "\n";
    if (!out) return report("score-tasks", io_error("[score-tasks] cannot write " + a.str("json")));
  }
  if (a.has("save-pred")) {
    std::ofstream out(a.str("save-pred"));
    for (size_t i = 0; i < data->size(); ++i) {
      nlohmann::ordered_json j;
      j["task"] = std::string(task_name((*data)[i].task));
      j["lang"] = std::string(lang_name((*data)[i].lang));
      j["prediction"] = (*preds)[i];
      j["answer"] = (*data)[i].answer;
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    if (!out) return report("score-tasks", io_error("[score-tasks] cannot write " + a.str("save-pred")));
  }
  return 0;
}

}  // namespace pocket::train::cli
