// App-task data (train/data/tasks.h) and its scorer (task_scorer.h): determinism, disjoint splits, counts,
// answers grounded in their prompts, hand-checked scores, and make-tasks / score-tasks end to end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "data/chat_data.h"
#include "data/task_scorer.h"
#include "data/tasks.h"
#include "model/hparams.h"
#include "nn/model_facade.h"
#include "run/exporter.h"
#include "train_test_util.h"

namespace pocket::train {
namespace {

using pocket::testing::TempDir;

std::vector<std::string> prompts(const std::vector<TaskExample>& v) {
  std::vector<std::string> out;
  for (const auto& e : v) out.push_back(e.prompt);
  return out;
}

const TaskSets& sets() {
  static const TaskSets s = make_task_sets(7, {.train = 2000, .dev = 200, .test = 300});
  return s;
}

std::vector<TaskExample> all_examples() {
  std::vector<TaskExample> v = sets().train;
  v.insert(v.end(), sets().dev.begin(), sets().dev.end());
  v.insert(v.end(), sets().test.begin(), sets().test.end());
  return v;
}

TEST(Tasks, DeterministicForASeed) {
  const TaskSets a = make_task_sets(7, {.train = 2000, .dev = 200, .test = 300});
  EXPECT_EQ(prompts(a.train), prompts(sets().train));
  EXPECT_EQ(prompts(a.test), prompts(sets().test));
  const TaskSets b = make_task_sets(8, {.train = 2000, .dev = 200, .test = 300});
  EXPECT_NE(prompts(b.test), prompts(sets().test));
  for (size_t i = 0; i < a.dev.size(); ++i) EXPECT_EQ(a.dev[i].answer, sets().dev[i].answer);
}

TEST(Tasks, SplitsAreDisjointWithoutDuplicates) {
  std::set<std::string> seen;
  for (const auto& p : prompts(all_examples())) EXPECT_TRUE(seen.insert(p).second) << "duplicate prompt: " << p;
  EXPECT_EQ(seen.size(), 2500u);
}

TEST(Tasks, EveryTaskAndLanguageHasItsShare) {
  for (const auto* split : {&sets().train, &sets().dev, &sets().test}) {
    std::map<std::pair<TaskKind, Lang>, int64_t> n;
    for (const auto& e : *split) ++n[{e.task, e.lang}];
    ASSERT_EQ(n.size(), 10u);
    for (const auto& [cell, count] : n) EXPECT_EQ(count, static_cast<int64_t>(split->size() / 10));
  }
  // A size that does not divide by 10: the first cells (task-major, en before zh) take the remainder.
  const TaskSets odd = make_task_sets(3, {.train = 0, .dev = 0, .test = 13});
  ASSERT_EQ(odd.test.size(), 13u);
  std::map<std::pair<TaskKind, Lang>, int64_t> n;
  for (const auto& e : odd.test) ++n[{e.task, e.lang}];
  EXPECT_EQ((n[{TaskKind::kExtract, Lang::kEn}]), 2);
  EXPECT_EQ((n[{TaskKind::kIntent, Lang::kEn}]), 2);
  EXPECT_EQ((n[{TaskKind::kIntent, Lang::kZh}]), 1);
  EXPECT_EQ((n[{TaskKind::kRoute, Lang::kZh}]), 1);
}

TEST(Tasks, PromptsCarryTheirInstructionAndStayCompact) {
  for (const auto& e : all_examples()) {
    const bool zh = e.lang == Lang::kZh;
    const char* head = nullptr;
    switch (e.task) {
      case TaskKind::kExtract: head = zh ? "提取JSON：" : "Extract JSON:"; break;
      case TaskKind::kIntent: head = zh ? "判断意图：" : "Classify intent:"; break;
      case TaskKind::kRewrite: head = zh ? "改正句子：" : "Correct the sentence:"; break;
      case TaskKind::kTool: head = zh ? "调用工具（JSON）：" : "Call a tool (JSON):"; break;
      case TaskKind::kRoute: head = zh ? "路由（local或cloud）：" : "Route (local or cloud):"; break;
    }
    EXPECT_EQ(e.prompt.rfind(head, 0), 0u) << e.prompt;
    EXPECT_LE(e.prompt.size(), 400u) << e.prompt;  // bytes; < 512 tokens even one token per byte
    EXPECT_LE(e.answer.size(), 160u) << e.answer;
    EXPECT_FALSE(e.answer.empty());
  }
}

TEST(Tasks, ExtractionAnswersAreJsonFoundInTheDescription) {
  const std::set<std::string> keys = {"name", "brand", "price", "colour", "size", "material"};
  int n = 0;
  for (const auto& e : all_examples()) {
    if (e.task != TaskKind::kExtract) continue;
    ++n;
    auto j = nlohmann::json::parse(e.answer, nullptr, false);
    ASSERT_TRUE(j.is_object()) << e.answer;
    EXPECT_TRUE(j.contains("name")) << e.answer;
    for (auto it = j.begin(); it != j.end(); ++it) {
      EXPECT_TRUE(keys.count(it.key())) << it.key();
      if (it.key() == "price") {
        ASSERT_TRUE(it->is_number()) << e.answer;
        // The price is written with two decimals in English shops ("$12.50") and shortest in Chinese ones.
        const double p = it->get<double>();
        char two[32];
        std::snprintf(two, sizeof two, "%.2f", p);
        EXPECT_TRUE(e.prompt.find(it->dump()) != std::string::npos || e.prompt.find(two) != std::string::npos)
            << e.prompt << " -> " << e.answer;
      } else {
        ASSERT_TRUE(it->is_string());
        EXPECT_NE(e.prompt.find(it->get<std::string>()), std::string::npos) << e.prompt << " -> " << e.answer;
      }
    }
  }
  EXPECT_EQ(n, 500);
}

// Open values: every value is still a span of its description, the brands and colours are far more varied
// than the lexicon's ~20 each, and open_values = 0 leaves the lexicon-only examples exactly as they were.
TEST(Tasks, OpenValuesAreVariedAndStillCopiedFromTheText) {
  const TaskSets open = make_task_sets(7, {.train = 2000, .dev = 0, .test = 0}, TaskGenOptions{.open_values = 1.0});
  std::map<std::string, std::set<std::string>> distinct;  // "brand/en" -> values
  int n = 0;
  for (const auto& e : open.train) {
    if (e.task != TaskKind::kExtract) continue;
    ++n;
    auto j = nlohmann::json::parse(e.answer, nullptr, false);
    ASSERT_TRUE(j.is_object()) << e.answer;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it->is_string()) continue;
      EXPECT_NE(e.prompt.find(it->get<std::string>()), std::string::npos) << e.prompt << " -> " << e.answer;
      std::string cell = it.key();
      cell.append("/").append(lang_name(e.lang));
      distinct[cell].insert(it->get<std::string>());
    }
  }
  EXPECT_EQ(n, 400);
  for (const char* cell : {"brand/en", "brand/zh", "colour/en", "colour/zh", "name/en", "name/zh"}) {
    EXPECT_GT(distinct[cell].size(), 100u) << cell << ": an open vocabulary, not a lexicon of ~20";
  }
  // Tool arguments naming a city, a person, a product query or a destination: open too, still in the request.
  const std::map<std::string, std::string> open_args = {{"get_weather", "city"}, {"send_message", "to"},
                                                        {"call_contact", "name"}, {"search_products", "query"},
                                                        {"book_taxi", "destination"}};
  std::set<std::string> tool_values;
  int n_tool = 0;
  for (const auto& e : open.train) {
    if (e.task != TaskKind::kTool) continue;
    auto j = nlohmann::json::parse(e.answer, nullptr, false);
    ASSERT_TRUE(j.is_object()) << e.answer;
    auto it = open_args.find(j["tool"].get<std::string>());
    if (it == open_args.end()) continue;
    ++n_tool;
    const std::string v = j["args"][it->second].get<std::string>();
    EXPECT_NE(e.prompt.find(v), std::string::npos) << e.prompt << " -> " << e.answer;
    tool_values.insert(v);
  }
  EXPECT_GT(n_tool, 100);
  EXPECT_GT(tool_values.size(), static_cast<size_t>(n_tool) * 8 / 10) << "nearly every open argument is new";
  // The default is the lexicon-only generator: the same examples as open_values = 0.
  const TaskSets zero = make_task_sets(7, {.train = 2000, .dev = 200, .test = 300}, TaskGenOptions{.open_values = 0.0});
  EXPECT_EQ(prompts(zero.train), prompts(sets().train));
  EXPECT_EQ(prompts(zero.test), prompts(sets().test));
  EXPECT_NE(prompts(open.train), prompts(sets().train));
}

TEST(Tasks, LabelsToolsAndRewritesAreWellFormed) {
  std::set<std::string> intents, routes;
  int rewrites = 0, changed = 0, none = 0, tools = 0;
  const std::set<std::string> label_set(intent_labels().begin(), intent_labels().end());
  for (const auto& e : all_examples()) {
    switch (e.task) {
      case TaskKind::kIntent:
        EXPECT_TRUE(label_set.count(e.answer)) << e.answer;
        intents.insert(e.answer);
        break;
      case TaskKind::kRoute:
        EXPECT_TRUE(e.answer == "local" || e.answer == "cloud") << e.answer;
        routes.insert(e.answer);
        break;
      case TaskKind::kRewrite: {
        ++rewrites;
        const std::string input = e.prompt.substr(e.prompt.find(e.lang == Lang::kZh ? "：" : ": ") +
                                                  (e.lang == Lang::kZh ? 3 : 2));
        changed += input != e.answer;
        break;
      }
      case TaskKind::kTool: {
        ++tools;
        auto j = nlohmann::json::parse(e.answer, nullptr, false);
        ASSERT_TRUE(j.is_object() && j.contains("tool") && j["tool"].is_string() && j.contains("args") &&
                    j["args"].is_object())
            << e.answer;
        const std::string tool = j["tool"];
        if (tool == "none") {
          ++none;
          EXPECT_TRUE(j["args"].empty());
          break;
        }
        EXPECT_NE(e.prompt.find("- " + tool + "("), std::string::npos) << e.prompt;
        const std::string request = e.prompt.substr(e.prompt.rfind('\n'));
        for (auto it = j["args"].begin(); it != j["args"].end(); ++it) {
          if (tool == "convert_currency" && it.key() != "amount") continue;  // codes for 美元 etc.
          const std::string v = it->is_string() ? it->get<std::string>() : it->dump();
          EXPECT_NE(request.find(v), std::string::npos) << e.prompt << " -> " << e.answer;
        }
        break;
      }
      default: break;
    }
  }
  EXPECT_EQ(intents.size(), intent_labels().size());
  EXPECT_EQ(routes.size(), 2u);
  EXPECT_GT(changed, rewrites * 8 / 10);   // one in ten inputs is left correct
  EXPECT_LT(changed, rewrites);
  EXPECT_GT(none, 0);
  EXPECT_LT(none, tools / 4);
}

TEST(Tasks, JsonlRoundTripsAndIsAChatLine) {
  std::string text;
  for (const auto& e : sets().dev) text += task_example_to_json(e) + "\n";
  auto back = parse_task_examples_jsonl(text, "dev.jsonl");
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  ASSERT_EQ(back->size(), sets().dev.size());
  for (size_t i = 0; i < back->size(); ++i) {
    EXPECT_EQ((*back)[i].prompt, sets().dev[i].prompt);
    EXPECT_EQ((*back)[i].answer, sets().dev[i].answer);
    EXPECT_EQ((*back)[i].task, sets().dev[i].task);
    EXPECT_EQ((*back)[i].lang, sets().dev[i].lang);
  }
  auto chats = parse_conversations_jsonl(text, "dev.jsonl");  // what tokenize --chat and sft --eval-data read
  ASSERT_TRUE(chats.has_value()) << chats.status().to_string();
  EXPECT_EQ(chats->size(), sets().dev.size());
  EXPECT_EQ((*chats)[0][1].role, "assistant");

  auto bad = parse_task_examples_jsonl("{\"messages\":[],\"task\":\"poem\",\"lang\":\"en\"}\n", "x.jsonl");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("x.jsonl:1"), std::string::npos);
}

TEST(TaskScorer, FieldF1OnHandWrittenAnswers) {
  const std::string gold = R"({"name":"jeans","brand":"Nordik","price":59.9,"colour":"black"})";
  EXPECT_DOUBLE_EQ(field_f1(gold, R"({"colour":"black","price":59.90,"brand":"Nordik","name":"jeans"})"), 1.0);
  EXPECT_DOUBLE_EQ(field_f1(gold, R"( {"name":"jeans","brand":"Nordik","price":"59.9","colour":"black"} )"), 1.0);
  // 3 of 4 right, one wrong: P = R = 3/4.
  EXPECT_DOUBLE_EQ(field_f1(gold, R"({"name":"jeans","brand":"Nordik","price":59.9,"colour":"blue"})"), 0.75);
  // 2 right, 2 missing (a null counts as missing): P = 1, R = 1/2, F1 = 2/3.
  EXPECT_NEAR(field_f1(gold, R"({"name":"jeans","brand":"Nordik","size":null})"), 2.0 / 3.0, 1e-12);
  // An extra field: P = 4/5, R = 1, F1 = 8/9.
  EXPECT_NEAR(field_f1(gold, R"({"name":"jeans","brand":"Nordik","price":59.9,"colour":"black","size":"M"})"),
              8.0 / 9.0, 1e-12);
  EXPECT_EQ(field_f1(gold, R"({"name":"jeans","brand":"Nordik")"), 0.0);  // truncated
  EXPECT_EQ(field_f1(gold, "jeans by Nordik"), 0.0);
  EXPECT_EQ(field_f1(gold, R"(["jeans"])"), 0.0);
  EXPECT_EQ(field_f1(gold, ""), 0.0);
  // Nested tool arguments are compared as args.key pairs.
  const std::string call = R"({"tool":"get_weather","args":{"city":"巴黎","day":"周五"}})";
  EXPECT_DOUBLE_EQ(field_f1(call, R"({"args":{"day":"周五","city":"巴黎"},"tool":"get_weather"})"), 1.0);
  EXPECT_NEAR(field_f1(call, R"({"tool":"get_weather","args":{"city":"巴黎"}})"), 0.8, 1e-12);  // P 1, R 2/3
  EXPECT_EQ(field_f1(call, R"({"tool":"call_contact","args":{"name":"王芳"}})"), 0.0);
}

TEST(TaskScorer, LabelsRewritesAndTheScoreboard) {
  EXPECT_TRUE(score_answer(TaskKind::kIntent, "refund", " Refund.\n").exact);
  EXPECT_FALSE(score_answer(TaskKind::kIntent, "refund", "return").exact);
  EXPECT_EQ(score_answer(TaskKind::kRoute, "local", "cloud").score, 0.0);
  const AnswerScore same = score_answer(TaskKind::kRewrite, "我已经收到了。", "我已经收到了。\n");
  EXPECT_TRUE(same.exact);
  EXPECT_DOUBLE_EQ(same.score, 1.0);
  const AnswerScore one_off = score_answer(TaskKind::kRewrite, "我已经收到了。", "我以经收到了。");  // 1 of 7
  EXPECT_FALSE(one_off.exact);
  EXPECT_NEAR(one_off.score, 6.0 / 7.0, 1e-12);
  EXPECT_DOUBLE_EQ(edit_similarity("", ""), 1.0);
  EXPECT_DOUBLE_EQ(edit_similarity("abc", ""), 0.0);

  TaskScoreboard board;
  board.add({TaskKind::kIntent, Lang::kEn, "p1", "refund"}, "refund");
  board.add({TaskKind::kIntent, Lang::kEn, "p2", "invoice"}, "refund");
  board.add({TaskKind::kExtract, Lang::kZh, "p3", R"({"name":"T恤","colour":"红色"})"}, R"({"name":"T恤"})");
  board.add({TaskKind::kExtract, Lang::kZh, "p4", R"({"name":"T恤"})"}, "not json");
  const auto cells = board.cells();
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].task, TaskKind::kExtract);
  EXPECT_NEAR(cells[0].score(), (2.0 / 3.0 + 0.0) / 2.0, 1e-12);
  EXPECT_EQ(cells[0].exact(), 0.0);
  EXPECT_EQ(cells[1].score(), 0.5);
  EXPECT_EQ(board.n(), 4);
  EXPECT_EQ(board.exact(), 0.25);
  EXPECT_NEAR(board.macro_score(), (1.0 / 3.0 + 0.5) / 2.0, 1e-12);
  EXPECT_NE(board.table().find("field_f1"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(board.json(), nullptr, false).is_object());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(TasksCli, MakeTasksThenScoreGivenPredictionsAndATinyModel) {
  TempDir tmp;
  const std::string bin = POCKET_TRAIN_BIN, dir = tmp.file("tasks");
  std::string out;
  ASSERT_EQ(testing::run_command(bin + " make-tasks -o " + dir + " --seed 3 --train 100 --dev 20 --test 30 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("extract  zh"), std::string::npos) << out;
  auto test = parse_task_examples_jsonl(read_file(dir + "/test.jsonl"), "test.jsonl");
  ASSERT_TRUE(test.has_value()) << test.status().to_string();
  EXPECT_EQ(test->size(), 30u);
  EXPECT_EQ(prompts(*test), prompts(make_task_sets(3, {.train = 100, .dev = 20, .test = 30}).test));
  // --open-values: the API's examples; a value outside [0, 1] or not a number is refused, writing nothing.
  ASSERT_EQ(testing::run_command(bin + " make-tasks -o " + tmp.file("open") + " --seed 3 --train 0 --dev 0 --test 30" +
                                     " --open-values 0.5 2>&1", &out), 0) << out;
  auto open = parse_task_examples_jsonl(read_file(tmp.file("open") + "/test.jsonl"), "test.jsonl");
  ASSERT_TRUE(open.has_value()) << open.status().to_string();
  EXPECT_EQ(prompts(*open), prompts(make_task_sets(3, {.train = 0, .dev = 0, .test = 30}, {.open_values = 0.5}).test));
  for (const char* bad : {"1.5", "-0.1", "lots"}) {
    EXPECT_EQ(testing::run_command(bin + " make-tasks -o " + tmp.file("bad") + " --open-values " + bad + " 2>&1", &out), 1)
        << bad << "\n" << out;
    EXPECT_NE(out.find("--open-values"), std::string::npos) << out;
    EXPECT_FALSE(std::filesystem::exists(tmp.file("bad"))) << bad;
  }

  // Gold answers as predictions score 1 everywhere; the first one replaced by garbage drops below 1.
  {
    std::ofstream pred(tmp.file("pred.jsonl"));
    for (size_t i = 0; i < test->size(); ++i) {
      pred << nlohmann::json{{"prediction", i == 0 ? std::string("???") : (*test)[i].answer}}.dump() << "\n";
    }
  }
  out.clear();
  ASSERT_EQ(testing::run_command(bin + " score-tasks --pred " + tmp.file("pred.jsonl") + " --data " + dir +
                                     "/test.jsonl --limit 29 --json " + tmp.file("r.json") + " 2>&1",
                                 &out),
            0)
      << out;
  auto r = nlohmann::json::parse(read_file(tmp.file("r.json")), nullptr, false);
  ASSERT_TRUE(r.is_object()) << out;
  EXPECT_EQ(r["n"], 29);
  EXPECT_LT(r["exact"].get<double>(), 1.0);
  EXPECT_NEAR(r["exact"].get<double>(), 28.0 / 29.0, 1e-9);
  // --beams: 1..16, and only with --task-layer (the predictions above have no search to configure).
  for (const char* bad : {"0 --task-layer", "17 --task-layer", "x --task-layer", "2"}) {
    EXPECT_EQ(testing::run_command(bin + " score-tasks --pred " + tmp.file("pred.jsonl") + " --data " + dir +
                                       "/test.jsonl --beams " + bad + " 2>&1", &out),
              1)
        << bad << "\n" << out;
    EXPECT_NE(out.find("beams"), std::string::npos) << out;
  }

  // A random-weight model answers nonsense, but the whole path (template, generation, scoring) runs.
  HParams h;
  h.name = "tasks-test";
  h.n_vocab = 357;
  h.n_embd = 32;
  h.n_layers = 1;
  h.n_heads = 2;
  h.n_kv_heads = 2;
  h.head_dim = 16;
  h.n_ff = 64;
  h.n_ctx_train = 512;
  auto w = init_model_weights(h, 5);
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  ASSERT_TRUE(export_package(h, *w, testing::char_tokenizer()->serialize(), {}, tmp.file("m.pocket")).is_ok());
  out.clear();
  ASSERT_EQ(testing::run_command(bin + " score-tasks -m " + tmp.file("m.pocket") + " --data " + dir +
                                     "/test.jsonl --limit 10 --max-tokens 4 --threads 1 --save-pred " +
                                     tmp.file("p.jsonl") + " 2>&1",
                                 &out),
            0)
      << out;
  EXPECT_NE(out.find("overall"), std::string::npos) << out;
  out.clear();
  ASSERT_EQ(testing::run_command(bin + " score-tasks --pred " + tmp.file("p.jsonl") + " --data " + dir +
                                     "/test.jsonl --limit 10 2>&1",
                                 &out),
            0)
      << out;
  EXPECT_NE(out.find("overall"), std::string::npos) << out;
}

}  // namespace
}  // namespace pocket::train
