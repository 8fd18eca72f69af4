// SpecFallback (spec_fallback.h) on scripted round costs: it stops speculating when speculation is slower,
// keeps it when faster, notices a change within a window, and retries with doubling backoff; through a
// SpeculativeSession, rounds decoded plainly leave greedy and sampled output exactly the plain Session's.
#include "speculative/spec_fallback.h"

#include <gtest/gtest.h>

#include "spec_fixture.h"

namespace pocket {
namespace {

// Runs `rounds` rounds; a speculative round yields spec_tokens in spec_s seconds, a plain one 1 token in 1 s.
// Returns how many rounds speculated.
int64_t drive(SpecFallback& f, int64_t rounds, double spec_tokens, double spec_s) {
  int64_t n_spec = 0;
  for (int64_t r = 0; r < rounds; ++r) {
    if (f.speculate()) {
      ++n_spec;
      f.record(static_cast<int64_t>(spec_tokens), spec_s);
    } else {
      f.record(1, 1.0);
    }
  }
  return n_spec;
}

TEST(SpecFallback, DisabledAlwaysSpeculates) {
  SpecFallbackOptions o;
  o.enabled = false;
  SpecFallback f(o);
  EXPECT_EQ(drive(f, 1000, 1, 5.0), 1000);  // five times slower, still speculating: the caller asked for it
  EXPECT_EQ(f.losses(), 0);
}

TEST(SpecFallback, SlowerSpeculationBacksOffExponentially) {
  SpecFallback f;  // plain 4, trial 16 (early exit after 4 below 0.75 of plain), backoff 32 doubling to 1024
  // Speculation yields 1 token per 2 s against plain 1 per s. The plain rate is measured first (4 rounds),
  // then a trial that is clearly losing after 4 rounds, then 32 plain rounds.
  EXPECT_FALSE(f.speculate());
  EXPECT_EQ(drive(f, 4, 1, 2.0), 0);
  EXPECT_NEAR(f.plain_rate(), 1.0, 1e-12);
  EXPECT_EQ(drive(f, 4, 1, 2.0), 4);
  EXPECT_NEAR(f.spec_rate(), 0.5, 1e-12);
  EXPECT_EQ(f.losses(), 1);
  EXPECT_EQ(drive(f, 32, 1, 2.0), 0);
  EXPECT_TRUE(f.speculate());               // a new trial ...
  EXPECT_EQ(drive(f, 4, 1, 2.0), 4);        // ... lost again (plain rate fresh from the off period)
  EXPECT_EQ(f.losses(), 2);
  EXPECT_EQ(drive(f, 64, 1, 2.0), 0);       // doubled
  // Over a long run the speculative share is the trials only: 4 rounds before 128, 256, 512, then 1024
  // plain rounds: about 0.4 % of the rounds, each costing twice a plain one.
  const int64_t n = drive(f, 20000, 1, 2.0);
  EXPECT_LE(n, 4 * (20000 / 1024 + 4));
  EXPECT_GE(n, 4 * 10);  // it keeps retrying
  EXPECT_GT(f.losses(), 10);  // and every retry lost
}

TEST(SpecFallback, MildlySlowerSpeculationRunsTheWholeTrial) {
  SpecFallback f;
  drive(f, 4, 1, 1.0);  // plain measured
  // 0.9 of the plain rate: not clearly losing, so the trial runs its 16 rounds, then loses.
  EXPECT_EQ(drive(f, 15, 9, 10.0), 15);
  EXPECT_EQ(f.losses(), 0);
  EXPECT_EQ(drive(f, 1, 9, 10.0), 1);
  EXPECT_EQ(f.losses(), 1);
  EXPECT_FALSE(f.speculate());
}

TEST(SpecFallback, FasterSpeculationKeepsSpeculating) {
  SpecFallback f;
  // 3 tokens per 1.5 s against 1 per s.
  const int64_t n = drive(f, 10000, 3, 1.5);
  EXPECT_EQ(f.losses(), 0);
  EXPECT_NEAR(f.spec_rate(), 2.0, 1e-12);
  // Plain rounds only to measure: 4 first, then 4 every 256 speculative rounds.
  EXPECT_GE(n, 10000 - 4 * (10000 / 256 + 2));
  EXPECT_LT(n, 10000 - 4);  // re-measured at all
}

TEST(SpecFallback, NoticesWhenTheDrafterStopsMatching) {
  SpecFallback f;
  drive(f, 300, 3, 1.5);  // copying: fast
  ASSERT_EQ(f.losses(), 0);
  // The copy ends: each speculative round now yields 1 token in 1.4 s. Within two windows it stops.
  int64_t r = 0;
  while (f.speculate() && r < 1000) {
    f.record(1, 1.4);
    ++r;
  }
  EXPECT_LE(r, 2 * 16 + 4);
  EXPECT_FALSE(f.speculate());
  EXPECT_EQ(f.losses(), 1);
  // And speculation that pays again wins the next trial and stays.
  drive(f, 32, 1, 1.4);  // the off period (plain rounds)
  ASSERT_TRUE(f.speculate());
  EXPECT_EQ(drive(f, 200, 3, 1.5), 200);
  EXPECT_EQ(f.losses(), 1);
}

TEST(SpecFallback, RestartGivesANewTrialAndKeepsThePlainRate) {
  SpecFallback f;
  drive(f, 8, 1, 2.0);
  ASSERT_EQ(f.losses(), 1);
  ASSERT_FALSE(f.speculate());
  const double plain = f.plain_rate();
  f.restart();
  EXPECT_TRUE(f.speculate());
  EXPECT_EQ(f.plain_rate(), plain);
  // The known plain rate is used: no measuring rounds before or after the trial, straight to a decision.
  EXPECT_EQ(drive(f, 16, 3, 1.0), 16);
  EXPECT_TRUE(f.speculate());
  EXPECT_EQ(f.losses(), 1);
}

// Through the session: options that force frequent plain rounds (every speculative round is followed by a
// plain measurement, and a loss by one plain round), so both kinds of pass interleave whatever the timing.
SpeculativeOptions interleaving(SpecMethod method, int32_t k) {
  SpeculativeOptions spec;
  spec.method = method;
  spec.draft_max = k;
  spec.fallback.trial_rounds = 1;
  spec.fallback.plain_rounds = 1;
  spec.fallback.recheck_rounds = 1;
  spec.fallback.backoff_min = 1;
  spec.fallback.backoff_max = 2;
  return spec;
}

TEST(SpecFallback, PlainRoundsInASessionLeaveOutputUnchanged) {
  auto target = testing::tiny_model(11);
  SessionOptions so;
  so.n_threads = 1;
  int64_t plain_passes = 0, drafted = 0;
  for (const auto& prompt : testing::repetitive_prompts(6, 300, 5)) {
    for (int32_t k : {1, 4, 8}) {
      GenerateOptions go;
      go.n_predict = 40;
      go.stop_at_eos = false;
      for (int sampled = 0; sampled < 2; ++sampled) {
        if (sampled) {
          go.sampling.temperature = 0.8f;
          go.sampling.seed = 17u + static_cast<uint64_t>(k);
        }
        const std::vector<int32_t> want = testing::plain_generate(target, prompt, go);
        auto s = SpeculativeSession::create(target, so, interleaving(SpecMethod::kNgram, k));
        ASSERT_TRUE(s) << s.status().to_string();
        // Twice through the same session: the second call starts a new trial with the plain rate known.
        for (int call = 0; call < 2; ++call) {
          (*s)->reset();
          EXPECT_EQ(testing::spec_generate(**s, prompt, go), want) << "k " << k << " sampled " << sampled;
          plain_passes += (*s)->spec_stats().n_plain;
          drafted += (*s)->spec_stats().n_drafted;
        }
      }
    }
  }
  EXPECT_GT(plain_passes, 100);
  EXPECT_GT(drafted, 100);
}

TEST(SpecFallback, BadOptionsRefusedClearly) {
  auto target = testing::tiny_model(11);
  SessionOptions so;
  so.n_threads = 1;
  for (int field = 0; field < 7; ++field) {
    SpeculativeOptions spec;
    if (field == 0) spec.fallback.trial_rounds = 0;
    if (field == 1) spec.fallback.plain_rounds = -1;
    if (field == 2) spec.fallback.recheck_rounds = 0;
    if (field == 3) spec.fallback.backoff_min = 0;
    if (field == 4) spec.fallback.backoff_max = 8;  // below backoff_min = 32
    if (field == 5) spec.fallback.early_ratio = 1.5;
    if (field == 6) spec.fallback.early_rounds = 0;
    auto s = SpeculativeSession::create(target, so, spec);
    ASSERT_FALSE(s) << field;
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("fallback rounds"), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace pocket
