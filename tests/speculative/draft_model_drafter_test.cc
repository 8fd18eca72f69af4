// The draft-model drafter: vocabulary compatibility is checked token by token, its cache follows the
// context through rollbacks, and it drafts the draft model's greedy continuation.
#include "speculative/draft_model_drafter.h"

#include <gtest/gtest.h>

#include "model/stories_fixture.h"
#include "spec_fixture.h"

namespace pocket {
namespace {

using testing::tiny_model;

TEST(DraftModel, VocabularyMismatchRefusedNamingTheDifference) {
  auto target = tiny_model(11);
  EXPECT_TRUE(check_vocab_compatible(*target, *tiny_model(12), "b.pocket").is_ok());
  Status st = check_vocab_compatible(*target, *tiny_model(12, DType::kF32, 320), "b.pocket");
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("b.pocket"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("320 tokens, the target's 300"), std::string::npos) << st.message();
}

TEST(DraftModel, SameSizeDifferentTokensRefused) {
  POCKET_REQUIRE_SHARED_DATA(data);
  auto stories = Model::load(testing::stories260k_package());
  ASSERT_TRUE(stories);
  auto random512 = tiny_model(11, DType::kF32, 512);  // stories260K's vocabulary size, other tokens
  ThreadPool pool(1);
  auto d = DraftModelDrafter::create(random512, **stories, 64, &pool, "random512.pocket");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("token "), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("share the target's tokenizer"), std::string::npos);
}

// The drafter's proposal is the draft model's own greedy continuation, however the context moved since
// (appended, rolled back, replaced).
TEST(DraftModel, ProposesGreedyContinuationAcrossContextChanges) {
  auto model = tiny_model(11);
  ThreadPool pool(1);
  auto d = DraftModelDrafter::create(model, *model, 128, &pool);
  ASSERT_TRUE(d) << d.status().to_string();
  auto expect_greedy = [&](std::vector<int32_t> ctx, size_t k) {
    GenerateOptions go;
    go.n_predict = static_cast<int32_t>(k);
    go.stop_at_eos = false;
    const auto want = testing::plain_generate(model, ctx, go);
    std::vector<int32_t> out(k);
    auto n = (*d)->propose(ctx, out);
    ASSERT_TRUE(n);
    ASSERT_EQ(*n, static_cast<int32_t>(k));
    EXPECT_EQ(out, want);
  };
  expect_greedy({5, 6, 7}, 4);
  expect_greedy({5, 6, 7, 8, 9}, 6);   // appended
  expect_greedy({5, 6}, 3);            // rolled back
  expect_greedy({90, 91, 92, 93}, 8);  // replaced
  (*d)->reset();
  expect_greedy({5, 6, 7}, 1);
  // Near the end of its context the drafter proposes less, and nothing past it.
  auto small = DraftModelDrafter::create(model, *model, 10, &pool);
  ASSERT_TRUE(small);
  std::vector<int32_t> out(8);
  std::vector<int32_t> ctx(8, 7);
  EXPECT_EQ(*(*small)->propose(ctx, out), 3);
  ctx.assign(11, 7);
  EXPECT_EQ(*(*small)->propose(ctx, out), 0);
}

// The draft model's own session (package, KV cache, scratch, logits) is in the session's plan; a memory
// budget that holds the target but not both decodes plainly and says why, like a block drafter.
TEST(DraftModel, SessionPlanCountsTheDraftModelAndBudgetFallsBackToPlain) {
  auto target = tiny_model(11);
  auto draft = tiny_model(12);
  SpeculativeOptions spec;
  spec.method = SpecMethod::kDraftModel;
  spec.draft_model = draft;
  spec.fallback.enabled = false;
  SessionOptions so;
  so.n_threads = 1;
  so.n_ctx = 128;
  auto full = SpeculativeSession::create(target, so, spec);
  ASSERT_TRUE(full) << full.status().to_string();
  const auto* dm = dynamic_cast<const DraftModelDrafter*>((*full)->drafter());
  ASSERT_NE(dm, nullptr);
  EXPECT_GT(dm->plan().weights, 0u);
  EXPECT_GT(dm->plan().kv_cache, 0u);
  EXPECT_EQ((*full)->drafter_plan().total(), dm->plan().total());
  EXPECT_EQ(DraftModelDrafter::plan_for(*draft, 128, 1).total(), dm->plan().total());  // what pocket plan prints
  EXPECT_EQ((*full)->plan().total(), (*full)->transformer().plan().total() + dm->plan().total());
  EXPECT_TRUE((*full)->spec_disabled_reason().empty());

  const std::vector<int32_t> prompt = {10, 11, 12, 10, 11};
  GenerateOptions go;
  go.n_predict = 20;
  go.stop_at_eos = false;
  const std::vector<int32_t> want = testing::plain_generate(target, prompt, go, 128);
  {  // exactly enough for both
    SessionOptions b = so;
    b.mem_budget_bytes = (*full)->plan().total();
    auto s = SpeculativeSession::create(target, b, spec);
    ASSERT_TRUE(s) << s.status().to_string();
    EXPECT_NE((*s)->drafter(), nullptr);
    EXPECT_TRUE((*s)->spec_disabled_reason().empty());
  }
  {  // one byte less: plain decoding, the reason given, the same output
    SessionOptions b = so;
    b.mem_budget_bytes = (*full)->plan().total() - 1;
    auto s = SpeculativeSession::create(target, b, spec);
    ASSERT_TRUE(s) << s.status().to_string();
    EXPECT_EQ((*s)->drafter(), nullptr);
    EXPECT_NE((*s)->spec_disabled_reason().find("draft model needs"), std::string::npos)
        << (*s)->spec_disabled_reason();
    EXPECT_EQ((*s)->drafter_plan().total(), 0u);
    EXPECT_LE((*s)->plan().total(), b.mem_budget_bytes);
    EXPECT_EQ(testing::spec_generate(**s, prompt, go), want);
    EXPECT_EQ((*s)->spec_stats().n_drafted, 0);
  }
}

}  // namespace
}  // namespace pocket
