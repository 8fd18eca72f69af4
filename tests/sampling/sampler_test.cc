// The sampling chain: edge values, determinism, and each processor's effect.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "sampling/sampler.h"

namespace pocket {
namespace {

std::vector<float> logits_of(std::initializer_list<float> v) { return std::vector<float>(v); }

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  auto s = Sampler::create(SamplingParams::greedy(), 5);
  ASSERT_TRUE(s);
  auto l = logits_of({1.0f, 3.0f, 3.0f, -1.0f, 2.0f});
  EXPECT_EQ(*s->sample(l.data()), 1);
  EXPECT_TRUE(s->chain().empty());
}

TEST(Sampler, RejectsNaNAndNegativeParameters) {
  SamplingParams p;
  p.temperature = NAN;
  EXPECT_EQ(Sampler::create(p, 10).status().code(), ErrorCode::kInvalidArgument);
  p.temperature = -0.5f;
  EXPECT_EQ(Sampler::create(p, 10).status().code(), ErrorCode::kInvalidArgument);
  p = SamplingParams();
  p.top_p = NAN;
  EXPECT_EQ(Sampler::create(p, 10).status().code(), ErrorCode::kInvalidArgument);
  p = SamplingParams();
  p.min_p = NAN;
  EXPECT_EQ(Sampler::create(p, 10).status().code(), ErrorCode::kInvalidArgument);
  p = SamplingParams();
  p.repeat_penalty = 0.0f;
  EXPECT_EQ(Sampler::create(p, 10).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Sampler::create(SamplingParams(), 0).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Sampler, EdgeValuesAreClampedToDocumentedMeanings) {
  SamplingParams p;
  p.temperature = 1e9f;
  p.top_k = 0;
  p.top_p = 7.0f;
  p.min_p = -3.0f;
  auto s = Sampler::create(p, 10);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->params().temperature, 1e4f);
  EXPECT_EQ(s->params().top_k, 10);
  EXPECT_EQ(s->params().top_p, 1.0f);
  EXPECT_EQ(s->params().min_p, 0.0f);
  // top_p = 0 keeps the single most likely token: the candidate set is never empty.
  p = SamplingParams();
  p.temperature = 1.0f;
  p.top_p = 0.0f;
  p.min_p = 0.0f;
  auto t = Sampler::create(p, 4);
  ASSERT_TRUE(t);
  auto l = logits_of({0.0f, 5.0f, 1.0f, 2.0f});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(*t->sample(l.data()), 1);
}

TEST(Sampler, NaNLogitIsAnErrorNotACrash) {
  auto s = Sampler::create(SamplingParams(), 3);
  ASSERT_TRUE(s);
  auto l = logits_of({0.0f, NAN, 1.0f});
  auto r = s->sample(l.data());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), ErrorCode::kNumericalError);
}

TEST(Sampler, SameSeedSameStream) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 99;
  auto a = Sampler::create(p, 8);
  auto b = Sampler::create(p, 8);
  auto l = logits_of({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f});
  std::vector<int32_t> x, y;
  for (int i = 0; i < 100; ++i) {
    x.push_back(*a->sample(l.data()));
    y.push_back(*b->sample(l.data()));
  }
  EXPECT_EQ(x, y);
  a->reset(99);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(*a->sample(l.data()), x[static_cast<size_t>(i)]);
}

TEST(Sampler, TemperatureOneMatchesSoftmaxFrequencies) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 5;
  auto s = Sampler::create(p, 3);
  auto l = logits_of({0.0f, std::log(2.0f), std::log(7.0f)});  // p = 0.1, 0.2, 0.7
  std::map<int32_t, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) counts[*s->sample(l.data())]++;
  // 5 sigma of a binomial with n = 20000: at most 0.011 off for p = 0.7.
  EXPECT_NEAR(counts[0] / double(n), 0.1, 0.011);
  EXPECT_NEAR(counts[1] / double(n), 0.2, 0.015);
  EXPECT_NEAR(counts[2] / double(n), 0.7, 0.017);
}

TEST(Sampler, TopKAndMinPRestrictTheCandidates) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 2;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  auto s = Sampler::create(p, 5);
  auto l = logits_of({3.0f, 2.9f, 2.8f, 0.0f, 2.95f});
  for (int i = 0; i < 200; ++i) {
    int32_t id = *s->sample(l.data());
    EXPECT_TRUE(id == 0 || id == 4) << id;
  }
  p.top_k = 0;
  p.min_p = 0.5f;  // keep p >= 0.5 * p_max: logit >= 3 + ln 0.5 = 2.31
  auto m = Sampler::create(p, 5);
  for (int i = 0; i < 200; ++i) EXPECT_NE(*m->sample(l.data()), 3);
}

TEST(Sampler, RepetitionPenaltyDemotesRecentTokens) {
  SamplingParams p = SamplingParams::greedy();
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = 4;
  auto s = Sampler::create(p, 3);
  auto l = logits_of({1.0f, 1.5f, -1.0f});
  EXPECT_EQ(*s->sample(l.data()), 1);
  s->accept(1);
  EXPECT_EQ(*s->sample(l.data()), 0);  // 1.5 / 2 = 0.75 < 1.0
  // Falls out of the window after 4 other tokens.
  for (int i = 0; i < 4; ++i) s->accept(2);
  EXPECT_EQ(*s->sample(l.data()), 1);
}

}  // namespace
}  // namespace pocket
