// The session's side of constrained decoding: the mask is applied before sampling, stop tokens come back only
// where the constraint may stop, generation ends when the constraint is done, and the token budget handed to
// the constraint counts down. A scripted constraint stands in for a grammar (constrain/ tests the grammars).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "convert/synth.h"
#include "generate/session.h"
#include "test_util.h"

namespace pocket {
namespace {

std::shared_ptr<const Model> tiny() {
  static testing::TempDir dir;
  static std::shared_ptr<const Model> m = [] {
    auto h = architecture_preset("tiny");
    EXPECT_TRUE(h);
    const std::string path = dir.file("tiny.pocket");
    SynthOptions o;
    o.seed = 7;
    EXPECT_TRUE(synthesize_model(*h, path, o).is_ok());
    auto r = Model::load(path);
    EXPECT_TRUE(r);
    return *r;
  }();
  return m;
}

// Allows only tokens of `allowed`, in any order; may stop after `stop_after` tokens; done after `done_after`.
class ScriptedConstraint : public TokenConstraint {
 public:
  ScriptedConstraint(std::set<int32_t> allowed, int stop_after, int done_after)
      : allowed_(std::move(allowed)), stop_after_(stop_after), done_after_(done_after) {}
  Status mask(float* logits, int32_t n_vocab, int64_t n_left) override {
    n_left_seen.push_back(n_left);
    for (int32_t i = 0; i < n_vocab; ++i) {
      if (!allowed_.count(i)) logits[i] = -INFINITY;
    }
    return Status::ok();
  }
  Status accept(int32_t id) override {
    if (!allowed_.count(id)) return invalid_argument("not allowed");
    accepted.push_back(id);
    return Status::ok();
  }
  bool can_stop() const override { return static_cast<int>(accepted.size()) >= stop_after_; }
  bool done() const override { return static_cast<int>(accepted.size()) >= done_after_; }

  std::vector<int32_t> accepted;
  std::vector<int64_t> n_left_seen;

 private:
  std::set<int32_t> allowed_;
  int stop_after_, done_after_;
};

TEST(ConstrainedSession, OnlyAllowedTokensAndDoneStops) {
  SessionOptions so;
  so.n_threads = 1;
  auto s = Session::create(tiny(), so);
  ASSERT_TRUE(s);
  const std::vector<int32_t> prompt = {5, 6, 7};
  ScriptedConstraint c({10, 11, 12}, 0, 6);
  GenerateOptions go;
  go.n_predict = 20;
  go.constraint = &c;
  go.stop_at_eos = false;
  std::vector<int32_t> out;
  GenerateStats st;
  ASSERT_TRUE((*s)->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
    out.push_back(id);
    return true;
  }, nullptr, &st).is_ok());
  EXPECT_EQ(out, c.accepted);
  EXPECT_EQ(out.size(), 6u);
  for (int32_t id : out) EXPECT_TRUE(id >= 10 && id <= 12);
  EXPECT_EQ(st.stop, StopReason::kConstraintDone);
  EXPECT_EQ(st.n_constrained, 6);
  // The budget counts down from n_predict.
  ASSERT_EQ(c.n_left_seen.size(), 6u);
  for (size_t i = 0; i < c.n_left_seen.size(); ++i) EXPECT_EQ(c.n_left_seen[i], 20 - static_cast<int64_t>(i));
}

TEST(ConstrainedSession, StopTokenOnlyWhereTheConstraintMayStop) {
  const Model& m = *tiny();
  const int32_t eos = m.tokenizer().eos_id();
  ASSERT_GE(eos, 0);
  SessionOptions so;
  so.n_threads = 1;
  auto s = Session::create(tiny(), so);
  ASSERT_TRUE(s);
  // The scripted constraint allows one ordinary token; without stopping rights EOS never comes, even when the
  // model would rank it first.
  ScriptedConstraint c({20}, 1000, 1000);
  GenerateOptions go;
  go.n_predict = 8;
  go.constraint = &c;
  GenerateStats st;
  ASSERT_TRUE((*s)->generate_tokens(std::vector<int32_t>{5, 6}, go, nullptr, nullptr, &st).is_ok());
  EXPECT_EQ(st.n_generated, 8);
  EXPECT_EQ(st.stop, StopReason::kLength);
  // Allowed to stop at once and with every ordinary token masked but one: EOS is back among the candidates,
  // and greedy picks whichever of {EOS, 20} the model ranks higher.
  (*s)->reset();
  GenerateOptions probe;
  probe.n_predict = 0;
  ASSERT_TRUE((*s)->generate_tokens(std::vector<int32_t>{5, 6}, probe, nullptr).is_ok());
  const bool eos_first = (*s)->transformer().logits(0)[eos] > (*s)->transformer().logits(0)[20];
  (*s)->reset();
  ScriptedConstraint c2({20}, 0, 1000);
  go.constraint = &c2;
  ASSERT_TRUE((*s)->generate_tokens(std::vector<int32_t>{5, 6}, go, nullptr, nullptr, &st).is_ok());
  if (eos_first) {
    EXPECT_EQ(st.stop, StopReason::kStopToken);
    EXPECT_EQ(st.n_generated, 0);
  } else {
    EXPECT_GE(st.n_generated, 1);
  }
  // Stop tokens are masked with the rest when the constraint may not stop, whatever their logit: the first
  // run above generated 8 tokens of id 20.
  EXPECT_EQ(c.accepted, std::vector<int32_t>(8, 20));
}

TEST(ConstrainedSession, AConstraintErrorIsReturned) {
  SessionOptions so;
  so.n_threads = 1;
  auto s = Session::create(tiny(), so);
  ASSERT_TRUE(s);
  class Refuses : public TokenConstraint {
    Status mask(float*, int32_t, int64_t) override { return invalid_argument("[test] nothing allowed"); }
    Status accept(int32_t) override { return Status::ok(); }
    bool can_stop() const override { return false; }
    bool done() const override { return false; }
  } r;
  GenerateOptions go;
  go.constraint = &r;
  Status st = (*s)->generate_tokens(std::vector<int32_t>{5}, go, nullptr);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("nothing allowed"), std::string::npos);
}

}  // namespace
}  // namespace pocket
