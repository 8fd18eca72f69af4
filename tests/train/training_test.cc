// The training loop's guarantees: an interrupted and resumed run follows the uninterrupted run's loss
// trajectory and ends at the same weights; two data-parallel processes (c10d gloo, loopback) with the same
// global batch reach the same parameters as one process.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/trainer.h"
#include "train_test_util.h"

namespace pocket::train {
namespace {

using pocket::testing::TempDir;

TrainConfig small_config(const std::string& dir, const std::string& shard, const std::string& out) {
  TrainConfig c;
  c.model.name = "resume-test";
  c.model.n_vocab = 357;
  c.model.n_embd = 32;
  c.model.n_layers = 2;
  c.model.n_heads = 4;
  c.model.n_kv_heads = 2;
  c.model.head_dim = 8;
  c.model.n_ff = 64;
  c.model.n_ctx_train = 64;
  c.model.rope_style = RopeStyle::kNeox;
  c.data = {shard};
  c.tokenizer = dir + "/tokenizer.bin";
  c.out_dir = out;
  c.seq_len = 32;
  c.micro_batch = 4;
  c.grad_accum = 2;
  c.max_steps = 24;
  c.lr = 3e-3;
  c.min_lr = 3e-4;
  c.warmup_steps = 5;
  c.eval_interval = 0;
  c.log_interval = 4;
  c.ckpt_interval = 100;
  c.threads = 1;
  c.plot = false;
  c.quiet = true;
  c.seed = 5;
  return c;
}

double max_weight_diff(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    for (size_t j = 0; j < a[i].data.size(); ++j) m = std::max(m, static_cast<double>(std::fabs(a[i].data[j] - b[i].data[j])));
  }
  return m;
}

TEST(Training, ResumedRunFollowsTheSameLossTrajectory) {
  TempDir tmp;
  const std::string dir = tmp.file("");
  const std::string shard = testing::write_story_data(dir, 150);
  auto whole = run_training(small_config(dir, shard, tmp.file("whole")));
  ASSERT_TRUE(whole.has_value()) << whole.status().to_string();
  ASSERT_EQ(whole->steps.size(), 24u);

  TrainConfig first = small_config(dir, shard, tmp.file("parts"));
  first.stop_after = 10;  // "interrupted" after step 10 (a checkpoint is written when a run stops)
  auto part1 = run_training(first);
  ASSERT_TRUE(part1.has_value()) << part1.status().to_string();
  ASSERT_EQ(part1->steps.size(), 10u);
  auto part2 = run_training(small_config(dir, shard, tmp.file("parts")));  // resumes from the checkpoint
  ASSERT_TRUE(part2.has_value()) << part2.status().to_string();
  EXPECT_EQ(part2->first_step, 10);
  ASSERT_EQ(part2->steps.size(), 14u);

  std::vector<StepRecord> joined = part1->steps;
  joined.insert(joined.end(), part2->steps.begin(), part2->steps.end());
  for (size_t i = 0; i < joined.size(); ++i) {
    EXPECT_EQ(joined[i].step, whole->steps[i].step);
    EXPECT_NEAR(joined[i].loss, whole->steps[i].loss, 1e-6 * std::fabs(whole->steps[i].loss)) << "step " << i + 1;
    EXPECT_DOUBLE_EQ(joined[i].lr, whole->steps[i].lr);
  }
  EXPECT_LT(whole->steps.back().loss, whole->steps.front().loss);
  auto a = load_checkpoint(tmp.file("whole"));
  auto b = load_checkpoint(tmp.file("parts"));
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(b->meta.step, 24);
  EXPECT_LE(max_weight_diff(a->weights, b->weights), 1e-6);
}

TEST(Training, TwoProcessesMatchOneProcessWithTheSameGlobalBatch) {
  TempDir tmp;
  const std::string dir = tmp.file("");
  const std::string shard = testing::write_story_data(dir, 150);
  // One process: 4 rows x 2 accumulation steps = 8 rows per optimiser step.
  TrainConfig one = small_config(dir, shard, tmp.file("one"));
  one.max_steps = 12;
  auto r1 = run_training(one);
  ASSERT_TRUE(r1.has_value()) << r1.status().to_string();
  // Two processes: 4 rows each, no accumulation = the same 8 rows per step, gradients all-reduced by gloo.
  const std::string cmd = std::string(POCKET_TRAIN_BIN) + " pretrain --nproc 2 --quiet --no-plot --threads 1" +
                          " --data " + shard + " --tokenizer " + dir + "/tokenizer.bin --out " + tmp.file("two") +
                          " --vocab 357 --n-embd 32 --n-layers 2 --n-heads 4 --n-kv-heads 2 --head-dim 8 --n-ff 64" +
                          " --ctx 64 --rope neox --seq-len 32 --batch 4 --accum 1 --steps 12 --lr 3e-3 --min-lr 3e-4" +
                          " --warmup 5 --eval-interval 0 --log-interval 4 --ckpt-interval 100 --seed 5 2>&1";
  std::string out;
  ASSERT_EQ(testing::run_command(cmd, &out), 0) << out;
  auto a = load_checkpoint(tmp.file("one"));
  auto b = load_checkpoint(tmp.file("two"));
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  EXPECT_EQ(b->meta.step, 12);
  EXPECT_EQ(b->meta.loader.next_row, a->meta.loader.next_row);
  const double diff = max_weight_diff(a->weights, b->weights);
  std::printf("[data-parallel] max |param diff| after 12 steps, 1 vs 2 processes: %.3g\n", diff);
  // Only the summation order of the gradient differs (two halves all-reduced vs accumulated in one process).
  EXPECT_LE(diff, 1e-5);
}

}  // namespace
}  // namespace pocket::train
