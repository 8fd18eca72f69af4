// The shipped default model keeps its recorded task scores: models/pocket-nano-q4.pocket is scored with
// `pocket-train score-tasks` on a fixed subset (the first 200 examples of the test split that
// `make-tasks --seed 1 --train 20000 --dev 500 --test 1000` regenerates byte for byte) and compared with
// models/pocket-nano-q4.subset-scores.json, recorded when the package was made.
//
// Margins: greedy decoding is deterministic for a given kernel table, but the AVX2, NEON and scalar tables
// sum floats in different orders, which can flip a near-tie token and so change a few answers. Each
// (task, language) cell has 20 examples (one answer = 0.05 of accuracy), so a cell may move by at most
// 0.15 and the macro average by at most 0.03; a real regression (a broken kernel, tokenizer or template)
// moves them far more.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "train_test_util.h"

namespace pocket::train {
namespace {

std::string repo_root() { return std::filesystem::path(POCKET_SOURCE_DIR).string(); }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

TEST(PocketNano, ShippedPackageKeepsItsRecordedScores) {
  const std::string model = repo_root() + "/models/pocket-nano-q4.pocket";
  const std::string recorded = repo_root() + "/models/pocket-nano-q4.subset-scores.json";
  if (!std::filesystem::exists(model) || !std::filesystem::exists(recorded)) {
    GTEST_SKIP() << "models/pocket-nano-q4.pocket or its recorded scores are absent";
  }
  pocket::testing::TempDir dir;
  std::string out;
  const std::string bin = POCKET_TRAIN_BIN;
  ASSERT_EQ(0, testing::run_command(bin + " make-tasks -o " + dir.file("tasks") +
                                        " --seed 1 --train 20000 --dev 500 --test 1000 2>&1", &out)) << out;
  ASSERT_EQ(0, testing::run_command(bin + " score-tasks -m " + model + " --data " + dir.file("tasks/test.jsonl") +
                                        " --limit 200 --json " + dir.file("scores.json") + " 2>&1", &out)) << out;
  const auto got = read_json(dir.file("scores.json"));
  const auto want = read_json(recorded);
  ASSERT_EQ(got["n"], want["n"]);
  EXPECT_NEAR(got["macro_score"].get<double>(), want["macro_score"].get<double>(), 0.03) << out;
  std::map<std::string, double> w;
  for (const auto& c : want["cells"]) w[c["task"].get<std::string>() + "/" + c["lang"].get<std::string>()] = c["score"];
  ASSERT_EQ(got["cells"].size(), w.size());
  for (const auto& c : got["cells"]) {
    const std::string key = c["task"].get<std::string>() + "/" + c["lang"].get<std::string>();
    ASSERT_TRUE(w.count(key)) << key;
    EXPECT_NEAR(c["score"].get<double>(), w[key], 0.15) << key << "\n" << out;
  }
}

}  // namespace
}  // namespace pocket::train
