// The SFT loop engine: failure classes of constructed answers, the regression gate on constructed rounds,
// targeted data (quotas, traits, held-out prompts kept out), a round that regresses rolled back and logged
// while a good one is kept (scripted evaluator and trainer), and one real round on a tiny model.
#include <gtest/gtest.h>

#include <cmath>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "loop/sft_loop.h"
#include "nn/trainer.h"
#include "train_test_util.h"

namespace pocket::train {
namespace {

using pocket::testing::TempDir;

TaskExample ex(TaskKind t, std::string prompt, std::string answer) {
  TaskExample e;
  e.task = t;
  e.lang = Lang::kEn;
  e.prompt = std::move(prompt);
  e.answer = std::move(answer);
  return e;
}

std::vector<FailureClass> classes(const TaskExample& e, const std::string& pred) {
  return classify_failure(e, pred).classes;
}

TEST(SftLoop, FailureClassesOfConstructedAnswers) {
  using FC = FailureClass;
  const TaskExample x = ex(TaskKind::kExtract, "Extract JSON:\nSALE - linen duvet cover; Brand: Solace; colour - burgundy.",
                           R"({"name":"duvet cover","brand":"Solace","colour":"burgundy"})");
  EXPECT_TRUE(classify_failure(x, R"({"colour":"burgundy","name":"duvet cover","brand":"Solace"})").exact);
  EXPECT_EQ(classes(x, "{\"name\":"), std::vector<FC>{FC::kInvalidJson});
  EXPECT_EQ(classes(x, "  "), std::vector<FC>{FC::kEmpty});
  EXPECT_EQ(classes(x, R"({"name":"duvet cover","colour":"burgundy"})"), std::vector<FC>{FC::kMissingField});
  EXPECT_EQ(classes(x, R"({"name":"duvet cover","brand":"Solace","colour":"burgundy","price":5})"),
            std::vector<FC>{FC::kExtraField});
  EXPECT_EQ(classes(x, R"({"name":"duvet cover","brand":"Calma","colour":"burgundy"})"),  // nowhere in the prompt
            std::vector<FC>{FC::kHallucinatedValue});
  EXPECT_EQ(classes(x, R"({"name":"duvet cover","brand":"linen","colour":"burgundy"})"),  // a span of the prompt
            std::vector<FC>{FC::kWrongValue});
  EXPECT_EQ(classes(x, R"({"name":"cover","colour":"red","material":"linen"})"),
            (std::vector<FC>{FC::kMissingField, FC::kExtraField, FC::kWrongValue, FC::kHallucinatedValue}));

  const TaskExample tool = ex(TaskKind::kTool, "Call a tool (JSON):\n- get_weather(city, day?)\n- call_contact(name)\nRequest: weather in Oslo",
                              R"({"tool":"get_weather","args":{"city":"Oslo"}})");
  auto wrong_tool = classify_failure(tool, R"({"tool":"call_contact","args":{"name":"Oslo"}})");
  EXPECT_EQ(wrong_tool.classes, std::vector<FC>{FC::kWrongTool});
  EXPECT_EQ(wrong_tool.hint, "get_weather");
  EXPECT_EQ(classes(tool, R"({"tool":"get_weather","args":{"city":"Oslo","day":"Monday"}})"), std::vector<FC>{FC::kExtraField});

  const TaskExample intent = ex(TaskKind::kIntent, "Classify intent: where is my refund", "refund");
  EXPECT_TRUE(classify_failure(intent, " Refund.").exact);
  auto wl = classify_failure(intent, "complaint");
  EXPECT_EQ(wl.classes, std::vector<FC>{FC::kWrongLabel});
  EXPECT_EQ(wl.hint, "refund");
  EXPECT_EQ(classes(intent, "refunds please"), std::vector<FC>{FC::kInvalidLabel});
  EXPECT_EQ(classes(ex(TaskKind::kRoute, "Route (local or cloud):\nQ", "cloud"), "local"), std::vector<FC>{FC::kWrongLabel});

  const TaskExample noisy = ex(TaskKind::kRewrite, "Correct the sentence: i recieved it", "I received it.");
  EXPECT_EQ(classes(noisy, "i recieved it"), std::vector<FC>{FC::kRewriteUnchanged});
  EXPECT_EQ(classes(noisy, "I recieved it."), std::vector<FC>{FC::kRewriteWrong});
  const TaskExample clean = ex(TaskKind::kRewrite, "Correct the sentence: See you at 5 pm.", "See you at 5 pm.");
  EXPECT_EQ(classes(clean, "See you at 5 p.m."), std::vector<FC>{FC::kRewriteOvercorrected});
  for (int i = 0; i < kNumFailureClasses; ++i) {
    auto c = parse_failure_class(failure_class_name(static_cast<FC>(i)));
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(static_cast<int>(*c), i);
  }
}

CellScore cell(TaskKind t, Lang l, int64_t n, double score) {
  CellScore c{t, l};
  c.n = n;
  c.score_sum = score * static_cast<double>(n);
  return c;
}

TEST(SftLoop, GateRejectsARegressingRoundAndAcceptsOthers) {
  const std::vector<CellScore> before = {cell(TaskKind::kExtract, Lang::kEn, 20, 0.50),
                                         cell(TaskKind::kIntent, Lang::kZh, 20, 0.80),
                                         cell(TaskKind::kRoute, Lang::kEn, 20, 0.60)};
  // Better on average (+0.10 on two cells) but extract/en drops 0.05 > 0.02: rejected, naming the cell.
  auto bad = regression_gate(before, {cell(TaskKind::kExtract, Lang::kEn, 20, 0.45), cell(TaskKind::kIntent, Lang::kZh, 20, 0.90),
                                      cell(TaskKind::kRoute, Lang::kEn, 20, 0.70)}, 0.02);
  EXPECT_FALSE(bad.accepted);
  EXPECT_NEAR(bad.worst_drop, 0.05, 1e-12);
  EXPECT_NE(bad.reason.find("extract/en"), std::string::npos) << bad.reason;
  EXPECT_EQ(bad.reason.find("intent/zh"), std::string::npos) << bad.reason;
  ASSERT_EQ(bad.cells.size(), 3u);
  EXPECT_NEAR(bad.cells[0].after, 0.45, 1e-12);
  // Drops within the margin (0.01, and exactly 0.02) are accepted.
  auto ok = regression_gate(before, {cell(TaskKind::kExtract, Lang::kEn, 20, 0.49), cell(TaskKind::kIntent, Lang::kZh, 20, 0.78),
                                     cell(TaskKind::kRoute, Lang::kEn, 20, 0.75)}, 0.02);
  EXPECT_TRUE(ok.accepted) << ok.reason;
  EXPECT_NEAR(ok.worst_drop, 0.02, 1e-12);
  // A cell that disappears counts as 0; a zero margin rejects any drop.
  EXPECT_FALSE(regression_gate(before, {cell(TaskKind::kExtract, Lang::kEn, 20, 0.5), cell(TaskKind::kIntent, Lang::kZh, 20, 0.8)}, 0.02).accepted);
  EXPECT_FALSE(regression_gate(before, {cell(TaskKind::kExtract, Lang::kEn, 20, 0.5), cell(TaskKind::kIntent, Lang::kZh, 20, 0.8),
                                        cell(TaskKind::kRoute, Lang::kEn, 20, 0.55)}, 0.0).accepted);
  EXPECT_TRUE(regression_gate(before, before, 0.0).accepted);
}

// The noise-aware gate: one flipped answer in 20 (a 0.05 drop, se 0.05) passes at z = 1.64 and margin 0.02,
// and is rejected at z = 0 (where the paired gate is exactly the point-estimate gate); six answers
// flipped (0.30 drop, se sqrt(0.3 * 0.7 / 19) = 0.105) is rejected at z = 1.64; a uniform 0.05 drop of a
// continuous metric has se 0 and is rejected whatever z. The se is the independent formula's.
TEST(SftLoop, PairedGateAllowsNoiseButNotARealDrop) {
  auto cell_of = [](TaskKind t, Lang l, const std::vector<double>& before, const std::vector<double>& after) {
    std::vector<PairedScore> v;
    for (size_t i = 0; i < before.size(); ++i) v.push_back({t, l, before[i], after[i]});
    return v;
  };
  std::vector<double> ones(20, 1.0), one_flip(20, 1.0), six_flips(20, 1.0);
  one_flip[3] = 0.0;
  for (int i = 0; i < 6; ++i) six_flips[static_cast<size_t>(i) * 3] = 0.0;
  const auto noise = cell_of(TaskKind::kIntent, Lang::kEn, ones, one_flip);
  auto g = paired_gate(noise, 0.02, 1.64);
  EXPECT_TRUE(g.accepted) << g.reason;
  ASSERT_EQ(g.cells.size(), 1u);
  EXPECT_NEAR(g.cells[0].before - g.cells[0].after, 0.05, 1e-12);
  EXPECT_NEAR(g.cells[0].se, std::sqrt((0.95 * 0.05 * 20.0 / 19.0) / 20.0), 1e-12);  // sample sd of 19 zeros and one -1
  EXPECT_NEAR(g.cells[0].allowed, 0.02 + 1.64 * g.cells[0].se, 1e-12);
  EXPECT_FALSE(paired_gate(noise, 0.02, 0.0).accepted);
  const std::vector<CellScore> b = {cell(TaskKind::kIntent, Lang::kEn, 20, 1.0)}, a = {cell(TaskKind::kIntent, Lang::kEn, 20, 0.95)};
  EXPECT_EQ(paired_gate(noise, 0.02, 0.0).accepted, regression_gate(b, a, 0.02).accepted);

  auto real = paired_gate(cell_of(TaskKind::kIntent, Lang::kEn, ones, six_flips), 0.02, 1.64);
  EXPECT_FALSE(real.accepted);
  EXPECT_NE(real.reason.find("intent/en"), std::string::npos) << real.reason;

  std::vector<double> f_before(20), f_after(20);
  for (size_t i = 0; i < 20; ++i) {
    f_before[i] = 0.5 + 0.02 * static_cast<double>(i);
    f_after[i] = f_before[i] - 0.05;
  }
  auto uniform = paired_gate(cell_of(TaskKind::kExtract, Lang::kZh, f_before, f_after), 0.02, 5.0);
  EXPECT_FALSE(uniform.accepted) << "a drop every example shares has no noise to hide in";
  EXPECT_NEAR(uniform.cells[0].se, 0.0, 1e-12);

  // Cells are kept apart, and an improvement never breaks the gate.
  auto mixed = noise;
  for (const auto& x : cell_of(TaskKind::kRoute, Lang::kZh, one_flip, ones)) mixed.push_back(x);
  auto m = paired_gate(mixed, 0.0, 1.64);
  EXPECT_TRUE(m.accepted) << m.reason;
  EXPECT_EQ(m.cells.size(), 2u);
}

TEST(SftLoop, PlanWeightsTheTopFailureClassesAndTheirCells) {
  using FC = FailureClass;
  const std::vector<FailureCount> counts = {
      {TaskKind::kExtract, Lang::kEn, FC::kMissingField, 6, {}}, {TaskKind::kExtract, Lang::kZh, FC::kMissingField, 2, {}},
      {TaskKind::kIntent, Lang::kEn, FC::kWrongLabel, 5, {"refund"}}, {TaskKind::kRewrite, Lang::kZh, FC::kRewriteWrong, 1, {}},
      {TaskKind::kTool, Lang::kEn, FC::kWrongTool, 3, {"none"}}};
  auto plan = plan_targets(counts, 2, 100);  // top 2: extract/missing_field (8), intent/wrong_label (5)
  ASSERT_EQ(plan.size(), 3u);
  std::map<std::string, int64_t> n;
  int64_t total = 0;
  for (const auto& q : plan) {
    n[std::string(task_name(q.task)) + "/" + std::string(lang_name(q.lang)) + "/" + std::string(failure_class_name(q.cls))] = q.n;
    total += q.n;
  }
  EXPECT_EQ(total, 100);
  EXPECT_EQ(n["extract/en/missing_field"], 46);  // 100 * 6/13 = 46.2
  EXPECT_EQ(n["extract/zh/missing_field"], 15);  // 15.4
  EXPECT_EQ(n["intent/en/wrong_label"], 39);     // 38.5, largest remainder
  EXPECT_TRUE(plan_targets({}, 3, 100).empty());
}

TEST(SftLoop, TargetedExamplesShowTheTraitAndAvoidHeldOutPrompts) {
  using FC = FailureClass;
  std::unordered_set<std::string> exclude;
  for (uint64_t s = 0; s < 400; ++s) exclude.insert(generate_task_example(TaskKind::kIntent, Lang::kEn, s).prompt);
  const std::vector<TargetQuota> plan = {{TaskKind::kRewrite, Lang::kEn, FC::kRewriteOvercorrected, 12, {}},
                                         {TaskKind::kIntent, Lang::kEn, FC::kWrongLabel, 15, {"refund", "invoice"}},
                                         {TaskKind::kExtract, Lang::kZh, FC::kMissingField, 10, {}}};
  auto got = targeted_examples(plan, 5, exclude);
  ASSERT_EQ(got.size(), 37u);
  std::set<std::string> prompts;
  for (const auto& e : got) {
    EXPECT_EQ(exclude.count(e.prompt), 0u);
    EXPECT_TRUE(prompts.insert(e.prompt).second) << "duplicate " << e.prompt;
  }
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(rewrite_input(got[i]), got[i].answer);  // already-correct inputs
  for (size_t i = 12; i < 27; ++i) EXPECT_TRUE(got[i].answer == "refund" || got[i].answer == "invoice") << got[i].answer;
  for (size_t i = 27; i < 37; ++i) {
    EXPECT_EQ(got[i].lang, Lang::kZh);
    auto j = nlohmann::json::parse(got[i].answer);
    EXPECT_GE(j.size(), 4u) << got[i].answer;
  }
  EXPECT_EQ(targeted_examples(plan, 5, exclude)[20].prompt, got[20].prompt);  // deterministic for a seed
}

// Writes DIR/{train,dev,test}.jsonl from make_task_sets.
std::string write_tasks(const std::string& dir, int64_t train, int64_t dev) {
  std::filesystem::create_directories(dir);
  const TaskSets sets = make_task_sets(3, {train, dev, 20});
  for (const auto& [name, v] : {std::pair{"train", &sets.train}, std::pair{"dev", &sets.dev}, std::pair{"test", &sets.test}}) {
    std::ofstream out(dir + "/" + name + ".jsonl");
    for (const auto& e : *v) out << task_example_to_json(e) << "\n";
  }
  return dir;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A scripted evaluator and trainer: "init" gets every intent answer wrong; round 1's candidate fixes intent
// but breaks extract (a regression past the margin) and must be rolled back; round 2's candidate, trained
// again from "init", is right everywhere and is kept.
TEST(SftLoop, RegressingRoundIsRolledBackAndEveryRoundIsLogged) {
  TempDir tmp;
  LoopConfig c;
  c.init = "init";
  c.tasks_dir = write_tasks(tmp.file("tasks"), 200, 100);
  c.out_dir = tmp.file("loop");
  c.rounds = 2;
  c.margin = 0.02;
  c.eval_per_cell = 5;
  c.examples_per_round = 40;
  c.replay_fraction = 0.25;
  std::vector<std::string> trained_from;
  std::vector<std::vector<TaskExample>> trained_on;
  LoopHooks h;
  h.answer = [](const std::string& ckpt, const std::vector<TaskExample>& exs) -> Expected<std::vector<std::string>> {
    std::vector<std::string> out;
    for (const auto& e : exs) {
      const bool wrong = (ckpt == "init" && e.task == TaskKind::kIntent) || (ckpt == "cand-1" && e.task == TaskKind::kExtract);
      out.push_back(wrong ? (e.task == TaskKind::kIntent ? (e.answer == "refund" ? "invoice" : "refund") : "{}") : e.answer);
    }
    return out;
  };
  h.fine_tune = [&](const std::string& init, const std::vector<TaskExample>& data, const std::string& dir) -> Expected<std::string> {
    EXPECT_TRUE(std::filesystem::exists(dir + "/data.jsonl"));
    trained_from.push_back(init);
    trained_on.push_back(data);
    return std::string("cand-") + std::to_string(trained_from.size());
  };
  auto r = run_sft_loop(c, h);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  ASSERT_EQ(r->rounds.size(), 2u);
  EXPECT_FALSE(r->rounds[0].gate.accepted);
  EXPECT_TRUE(r->rounds[1].gate.accepted) << r->rounds[1].gate.reason;
  EXPECT_EQ(trained_from, (std::vector<std::string>{"init", "init"}));  // round 2 starts again from init
  EXPECT_EQ(r->checkpoint, "cand-2");
  // Every targeted example aims at the intent failures (the only ones); a quarter is replay.
  ASSERT_EQ(trained_on[0].size(), 40u);
  int64_t intent = 0;
  for (const auto& e : trained_on[0]) intent += e.task == TaskKind::kIntent;
  EXPECT_GE(intent, 30);
  EXPECT_EQ(r->rounds[0].n_targeted, 30);
  EXPECT_EQ(r->rounds[0].n_replay, 10);

  const auto log = read_json(c.out_dir + "/loop.json");
  ASSERT_EQ(log["rounds"].size(), 2u);
  EXPECT_EQ(log["rounds"][0]["accepted"], false);
  EXPECT_EQ(log["rounds"][0]["checkpoint"], "init");
  EXPECT_EQ(log["rounds"][0]["candidate"], "cand-1");
  EXPECT_NE(log["rounds"][0]["reason"].get<std::string>().find("extract/"), std::string::npos);
  EXPECT_EQ(log["rounds"][1]["accepted"], true);
  EXPECT_EQ(log["checkpoint"], "cand-2");
  EXPECT_EQ(log["baseline"]["cells"].size(), 10u);
  bool saw_intent_failures = false;
  for (const auto& f : log["rounds"][0]["failures"]) {
    EXPECT_EQ(f["task"], "intent");
    EXPECT_EQ(f["class"], "wrong_label");
    saw_intent_failures = true;
  }
  EXPECT_TRUE(saw_intent_failures);
  for (const auto& cl : log["rounds"][1]["cells"]) EXPECT_GE(cl["after"].get<double>(), cl["before"].get<double>());

  // Run again with one more round: it resumes from cand-2, finds no failures and stops, logging nothing new.
  c.rounds = 3;
  auto again = run_sft_loop(c, h);
  ASSERT_TRUE(again.has_value()) << again.status().to_string();
  EXPECT_TRUE(again->rounds.empty());
  EXPECT_EQ(again->checkpoint, "cand-2");
  EXPECT_EQ(trained_from.size(), 2u);
  EXPECT_EQ(read_json(c.out_dir + "/loop.json")["rounds"].size(), 2u);
}

// One real round: greedy libtorch answers, targeted data tokenised with the checkpoint's tokenizer, an SFT
// run, re-evaluation and the gate. A tiny untrained model scores ~0 everywhere; what is checked is that the
// round runs end to end and leaves its checkpoint, data and table.
TEST(SftLoop, DefaultHooksRunARealRound) {
  TempDir tmp;
  const std::string dir = tmp.file("");
  const std::string shard = testing::write_story_data(dir, 40);
  TrainConfig pre;
  pre.model.name = "loop-test";
  pre.model.n_vocab = 357;
  pre.model.n_embd = 32;
  pre.model.n_layers = 1;
  pre.model.n_heads = 4;
  pre.model.n_kv_heads = 2;
  pre.model.head_dim = 8;
  pre.model.n_ff = 64;
  pre.model.n_ctx_train = 1024;
  pre.model.rope_style = RopeStyle::kNeox;
  pre.data = {shard};
  pre.tokenizer = dir + "/tokenizer.bin";
  pre.out_dir = dir + "/pre";
  pre.seq_len = 32;
  pre.micro_batch = 2;
  pre.max_steps = 1;
  pre.eval_interval = 0;
  pre.threads = 1;
  pre.plot = false;
  pre.quiet = true;
  ASSERT_TRUE(run_training(pre).has_value());

  LoopConfig c;
  c.init = pre.out_dir;
  c.tasks_dir = write_tasks(tmp.file("tasks"), 100, 20);
  c.out_dir = tmp.file("loop");
  c.rounds = 1;
  c.eval_per_cell = 1;
  c.examples_per_round = 12;
  c.answers.max_new_tokens = 4;
  c.answers.threads = 1;
  c.sft.seq_len = 1024;
  c.sft.micro_batch = 2;
  c.sft.max_steps = 2;
  c.sft.lr = 1e-3;
  c.sft.warmup_steps = 1;
  c.sft.eval_interval = 0;
  c.sft.threads = 1;
  c.sft.plot = false;
  c.sft.quiet = true;
  auto r = run_sft_loop(c, default_loop_hooks(c));
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  ASSERT_EQ(r->rounds.size(), 1u);
  EXPECT_EQ(r->rounds[0].candidate, c.out_dir + "/round-01/run");
  EXPECT_TRUE(has_checkpoint(r->rounds[0].candidate));
  auto ck = load_checkpoint(r->rounds[0].candidate);
  ASSERT_TRUE(ck.has_value());
  EXPECT_EQ(ck->meta.step, 2);
  EXPECT_EQ(r->checkpoint, r->rounds[0].gate.accepted ? r->rounds[0].candidate : pre.out_dir);
  const auto log = read_json(c.out_dir + "/loop.json");
  ASSERT_EQ(log["rounds"].size(), 1u);
  EXPECT_EQ(log["rounds"][0]["cells"].size(), 10u);
  EXPECT_EQ(log["rounds"][0]["examples"]["targeted"].get<int64_t>() + log["rounds"][0]["examples"]["replay"].get<int64_t>(), 12);
}

// The command line refuses bad settings and a missing checkpoint with exit code 1 and a message naming them.
TEST(SftLoop, CommandLineErrorsAreClear) {
  TempDir tmp;
  const std::string tasks = write_tasks(tmp.file("tasks"), 10, 10);
  const std::string base = std::string(POCKET_TRAIN_BIN) + " loop --init " + tmp.file("nowhere") + " --tasks " + tasks +
                           " --out " + tmp.file("loop");
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {{" --margin -0.1", "margin"},
                                   {" --gate-z -1", "--gate-z"},
                                   {" --rounds x", "--rounds"},
                                   {" --margine 0.1", "--margine"},
                                   {"", "nowhere"}};
  for (const auto& c : cases) {
    std::string out;
    EXPECT_EQ(testing::run_command(base + c.args + " 2>&1", &out), 1) << c.args << "\n" << out;
    EXPECT_NE(out.find(c.message), std::string::npos) << c.args << "\n" << out;
  }
  std::string out;
  EXPECT_EQ(testing::run_command(std::string(POCKET_TRAIN_BIN) + " loop --init x 2>&1", &out), 1);  // usage
  EXPECT_NE(out.find("usage"), std::string::npos) << out;
}

}  // namespace
}  // namespace pocket::train
