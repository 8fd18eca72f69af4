// The whole pipeline through the command-line tools, as a user runs it: generated data -> pretrain a
// ~100k-parameter model -> SFT on a chat task -> export -> `pocket run`. Asserts the held-out loss bound.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "nn/model_facade.h"
#include "nn/trainer.h"
#include "train_test_util.h"

namespace pocket::train {
namespace {

using pocket::testing::TempDir;

// Held-out loss (nats per character token) the pretrained model must reach. A uniform guess over the
// 357-token vocabulary is 5.87; the generated stories' per-character entropy is far lower: a 300-step run reaches about 0.35.
constexpr double kPretrainHeldoutBound = 0.8;

std::string sh(const std::string& cmd) {
  std::string out;
  const int rc = testing::run_command(cmd + " 2>&1", &out);
  EXPECT_EQ(rc, 0) << cmd << "\n" << out;
  return out;
}

TEST(EndToEnd, PretrainSftExportRun) {
  TempDir tmp;
  const std::string d = tmp.file("");
  const std::string bin = POCKET_TRAIN_BIN;
  sh(bin + " make-data -o " + d + "data --docs 3000 --chats 1500 --seed 1");
  const std::string model_flags =
      " --vocab 357 --n-embd 64 --n-layers 2 --n-heads 4 --n-kv-heads 2 --n-ff 160 --ctx 128 --rope neox";
  sh(bin + " pretrain --quiet --threads 1 --data " + d + "data/stories.shard --tokenizer " + d +
     "data/tokenizer.bin --out " + d + "pre" + model_flags +
     " --seq-len 64 --batch 16 --steps 300 --lr 4e-3 --min-lr 4e-4 --warmup 30 --eval-interval 100 --eval-rows 32"
     " --log-interval 25 --ckpt-interval 1000");
  auto pre = load_checkpoint(d + "pre");
  ASSERT_TRUE(pre.has_value()) << pre.status().to_string();
  EXPECT_EQ(pre->meta.step, 300);
  const uint64_t n_params = pre->meta.hparams.n_params();
  EXPECT_GT(n_params, 80000u);
  EXPECT_LT(n_params, 130000u);
  EXPECT_TRUE(std::filesystem::exists(d + "pre/log.jsonl"));

  const std::string ev = sh(bin + " eval --ckpt " + d + "pre --rows 64 2>/dev/null");
  auto j = nlohmann::json::parse(ev.substr(ev.find('{')), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << ev;
  const double heldout = j["loss"].get<double>();
  std::printf("[e2e] %llu parameters, held-out loss after 300 steps: %.4f (bound %.2f)\n",
              (unsigned long long)n_params, heldout, kPretrainHeldoutBound);
  EXPECT_LT(heldout, kPretrainHeldoutBound);

  sh(bin + " sft --quiet --threads 1 --init " + d + "pre --data " + d + "data/chats.shard --out " + d + "sft" +
     " --eval-data " + d + "data/chats_eval.jsonl --eval-examples 20 --seq-len 64 --batch 16 --steps 150 --lr 2e-3"
     " --min-lr 2e-4 --warmup 10 --eval-interval 150 --log-interval 25 --ckpt-interval 1000");
  const std::string sev = sh(bin + " eval --ckpt " + d + "sft --answers " + d + "data/chats_eval.jsonl --max-answers 40 2>/dev/null");
  auto sj = nlohmann::json::parse(sev.substr(sev.find('{')), nullptr, false);
  ASSERT_FALSE(sj.is_discarded()) << sev;
  const double acc = sj["answer_accuracy"].get<double>();
  std::printf("[e2e] SFT: held-out masked loss %.4f, greedy answer exact-match %.0f%% on 40 held-out chats\n",
              sj["loss"].get<double>(), 100 * acc);
  EXPECT_GE(acc, 0.8);

  sh(bin + " export --ckpt " + d + "sft -o " + d + "model.pocket --type f32");
  sh(bin + " export --ckpt " + d + "sft -o " + d + "model-q8.pocket --type q8_g32");
  auto model = Model::load(d + "model.pocket");
  ASSERT_TRUE(model.has_value()) << model.status().to_string();
  EXPECT_EQ((*model)->config().chat_template, "chatml");

  const std::string cli = POCKET_CLI_BIN;
  if (cli.empty()) GTEST_SKIP() << "the pocket command is not built";
  const std::string prompt = "<|im_start|>user\nopposite of hot?<|im_end|>\n<|im_start|>assistant\n";
  for (const char* m : {"model.pocket", "model-q8.pocket"}) {
    std::string out;
    const int rc = testing::run_command(cli + " run -m " + d + m + " -p '" + prompt +
                                            "' --special -n 12 --temp 0 -t 1 2>/dev/null", &out);
    ASSERT_EQ(rc, 0) << out;
    const std::string answer = out.substr(std::min(out.size(), prompt.size()));
    std::printf("[e2e] pocket run %s: '%s'\n", m, answer.substr(0, answer.find('\n')).c_str());
    EXPECT_EQ(answer.rfind("cold", 0), 0u) << out;
  }
}

}  // namespace
}  // namespace pocket::train
