// ConfidenceTracker against a direct computation: the chosen token's probability among the allowed tokens
// and the entropy of that distribution, step by step; and on the real model, greedy answers' tokens are the
// most probable allowed ones.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "task/answer_confidence.h"
#include "task/task.h"
#include "task_fixture.h"

namespace pocket {
namespace {

class AllowSet : public TokenConstraint {
 public:
  explicit AllowSet(std::set<int32_t> a) : allowed_(std::move(a)) {}
  Status mask(float* logits, int32_t n_vocab, int64_t) override {
    for (int32_t i = 0; i < n_vocab; ++i) {
      if (!allowed_.count(i)) logits[i] = -INFINITY;
    }
    return Status::ok();
  }
  Status accept(int32_t) override { return Status::ok(); }
  bool can_stop() const override { return true; }
  bool done() const override { return false; }

 private:
  std::set<int32_t> allowed_;
};

TEST(AnswerConfidence, MatchesADirectComputation) {
  AllowSet inner({1, 2, 4});
  ConfidenceTracker t(&inner);
  const std::vector<std::vector<float>> steps = {{5.0f, 1.0f, 2.0f, 9.0f, 0.5f}, {0.0f, -3.0f, 3.0f, 0.0f, 3.0f}};
  const std::vector<int32_t> chosen = {2, 4};
  double sum_lp = 0.0, sum_h = 0.0, min_p = 1.0;
  for (size_t k = 0; k < steps.size(); ++k) {
    std::vector<float> logits = steps[k];
    ASSERT_TRUE(t.mask(logits.data(), 5, -1).is_ok());
    EXPECT_EQ(logits[0], -INFINITY);
    EXPECT_EQ(logits[3], -INFINITY);
    // Directly: softmax over the allowed {1, 2, 4}.
    double z = 0.0;
    for (int i : {1, 2, 4}) z += std::exp(static_cast<double>(steps[k][i]));
    double h = 0.0;
    for (int i : {1, 2, 4}) {
      const double p = std::exp(static_cast<double>(steps[k][i])) / z;
      h -= p * std::log(p);
    }
    const double p = std::exp(static_cast<double>(steps[k][chosen[k]])) / z;
    sum_lp += std::log(p);
    sum_h += h;
    min_p = std::min(min_p, p);
    ASSERT_TRUE(t.accept(chosen[k]).is_ok());
  }
  const AnswerConfidence c = t.result();
  EXPECT_EQ(c.n_tokens, 2);
  EXPECT_NEAR(c.min_token_probability, min_p, 1e-9);
  EXPECT_NEAR(c.mean_token_logprob, sum_lp / 2, 1e-9);
  EXPECT_NEAR(c.mean_entropy, sum_h / 2, 1e-9);
}

TEST(AnswerConfidence, GreedyExtractionOnTheModel) {
  auto s = testing::nano_session();
  const std::string schema = R"({"type":"object","properties":{"name":{"type":"string","x-pocket-copy":true},)"
                             R"("price":{"type":"number","x-pocket-copy":true}},"required":["name"]})";
  auto r = task_extract(*s, "藏青色开衫，品牌暖阳，￥199", schema);
  ASSERT_TRUE(r) << r.status().to_string();
  const AnswerConfidence& c = r->confidence;
  EXPECT_EQ(c.n_tokens, r->stats.n_generated);
  EXPECT_GT(c.min_token_probability, 0.0);
  EXPECT_LE(c.min_token_probability, 1.0);
  EXPECT_LE(c.mean_token_logprob, 0.0);
  EXPECT_GE(c.mean_entropy, 0.0);
  // Greedy picks the most probable allowed token, so every chosen probability is at least 1 / (allowed) and
  // the mean log-probability is at least minus the mean entropy's bound log(n_vocab).
  EXPECT_GE(c.mean_token_logprob, -std::log(static_cast<double>(s->model().hparams().n_vocab)));
}

}  // namespace
}  // namespace pocket
