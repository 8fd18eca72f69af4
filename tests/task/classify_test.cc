// Classification by label probabilities on the real default model: the probabilities sum to 1 and equal the
// product of per-token softmaxes computed here independently, one token at a time in double precision.
#include <gtest/gtest.h>

#include <cmath>

#include "task/task.h"
#include "task/task_prompt.h"
#include "task_fixture.h"

namespace pocket {
namespace {

using testing::nano_model;
using testing::nano_session;

// log p(tokens, then any stop token | prompt) from a plain session fed one token at a time.
double reference_logprob(const std::vector<int32_t>& prompt, const std::string& label) {
  auto s = nano_session(1);
  const Model& m = s->model();
  std::vector<int32_t> ids;
  EXPECT_TRUE(m.tokenizer().encode(label, EncodeOptions{}, &ids).is_ok());
  const std::vector<int32_t> stops = stop_token_ids(m);
  ids.push_back(-1);  // the end: any stop token
  GenerateOptions go;
  go.n_predict = 0;
  EXPECT_TRUE(s->generate_tokens(prompt, go, nullptr).is_ok());
  double lp = 0.0;
  const int64_t n = m.hparams().n_vocab;
  for (size_t i = 0; i < ids.size(); ++i) {
    const float* row = s->transformer().logits(0);
    double mx = row[0];
    for (int64_t k = 1; k < n; ++k) mx = std::max(mx, static_cast<double>(row[k]));
    double z = 0.0;
    for (int64_t k = 0; k < n; ++k) z += std::exp(row[k] - mx);
    double p = 0.0;
    if (ids[i] >= 0) {
      p = std::exp(row[ids[i]] - mx) / z;
    } else {
      for (int32_t t : stops) p += std::exp(row[t] - mx) / z;
    }
    lp += std::log(p);
    if (i + 1 < ids.size()) {
      const int32_t one[1] = {ids[i]};
      EXPECT_TRUE(s->transformer().forward(one, false).is_ok());
    }
  }
  return lp;
}

const std::vector<std::string> kIntents = {"order_status", "refund",       "return",        "cancel_order",
                                           "change_address", "product_inquiry", "price_match", "complaint",
                                           "shipping_time", "payment_issue", "account_help",  "invoice"};

TEST(TaskClassify, ProbabilitiesAreTheModelsOwn) {
  const std::string text = "Hi, how do I get a refund for the backpack?";
  auto s = nano_session(16);
  auto r = task_classify(*s, text, kIntents);
  ASSERT_TRUE(r) << r.status().to_string();
  ASSERT_EQ(r->labels.size(), kIntents.size());
  double sum = 0.0;
  for (const LabelScore& l : r->labels) sum += l.probability;
  EXPECT_NEAR(sum, 1.0, 1e-9);
  auto prompt = render_task_prompt(*nano_model(), task_user_message("classify", text, ""), "", true);
  ASSERT_TRUE(prompt);
  std::vector<double> ref;
  double mx = -INFINITY;
  for (const std::string& l : kIntents) mx = std::max(mx, ref.emplace_back(reference_logprob(*prompt, l)));
  double z = 0.0;
  for (double v : ref) z += std::exp(v - mx);
  for (size_t i = 0; i < kIntents.size(); ++i) {
    // f32 logits through two paths (batched rows vs one row): equal within float rounding of the logits.
    EXPECT_NEAR(r->labels[i].logprob, ref[i], 2e-3) << kIntents[i];
    EXPECT_NEAR(r->labels[i].probability, std::exp(ref[i] - mx) / z, 1e-3) << kIntents[i];
  }
  // The top label is the model's own greedy answer (when that answer is a label).
  auto g = nano_session(1);
  std::string greedy;
  GenerateOptions go;
  go.n_predict = 24;
  ASSERT_TRUE(g->generate_tokens(*prompt, go, [&](int32_t, std::string_view t) {
    greedy.append(t);
    return true;
  }).is_ok());
  if (std::find(kIntents.begin(), kIntents.end(), greedy) != kIntents.end()) EXPECT_EQ(r->top, greedy);
  EXPECT_GT(r->confidence, 1.0 / kIntents.size());
  EXPECT_GE(r->margin, 0.0);
}

TEST(TaskClassify, BatchedAndOneRowAtATimeAgree) {
  const std::string text = "判断一下：我的订单什么时候发货？";
  auto a = nano_session(16), b = nano_session(1);
  auto ra = task_classify(*a, text, kIntents), rb = task_classify(*b, text, kIntents);
  ASSERT_TRUE(ra && rb);
  for (size_t i = 0; i < kIntents.size(); ++i) EXPECT_NEAR(ra->labels[i].logprob, rb->labels[i].logprob, 2e-3);
  // Calibration: T > 1 flattens the distribution, the order stays.
  auto rc = task_classify(*a, text, kIntents, {}, "", 3.0);
  ASSERT_TRUE(rc);
  EXPECT_EQ(rc->top, ra->top);
  EXPECT_LT(rc->confidence, ra->confidence + 1e-12);
  EXPECT_GT(rc->entropy, ra->entropy - 1e-12);
}

TEST(TaskClassify, BadLabelsAreClearErrors) {
  auto s = nano_session();
  EXPECT_FALSE(task_classify(*s, "x", {}));
  auto dup = task_classify(*s, "x", {"a", "a"});
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.status().to_string().find("twice"), std::string::npos);
  auto empty = task_classify(*s, "x", {"a", ""});
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.status().to_string().find("empty"), std::string::npos);
  EXPECT_FALSE(task_classify(*s, "x", {"a", "b"}, {}, "", 0.0));
  EXPECT_FALSE(task_classify(*s, "x", {"a", "b"}, {}, "", NAN));
  // The session stays usable after the errors.
  EXPECT_TRUE(task_classify(*s, "x", {"a", "b"}));
}

TEST(TaskClassify, PromptLongerThanTheContext) {
  auto s = nano_session(16, 64);
  std::string text(2000, 'a');
  auto r = task_classify(*s, text, {"a", "b"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), ErrorCode::kContextExceeded);
  EXPECT_TRUE(task_classify(*s, "short", {"a", "b"}));
}

TEST(TaskRoute, ThresholdDecides) {
  auto s = nano_session();
  const std::string text = "Context: Order 4412 ships on Friday. The store opens at 9 am. Returns within 30 days.\n"
                           "Question: When does order 4412 ship?";
  auto r = task_route(*s, text, 0.5);
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_NEAR(r->scores.labels[0].probability + r->scores.labels[1].probability, 1.0, 1e-9);
  EXPECT_EQ(r->route, r->p_local >= 0.5 ? "local" : "cloud");
  EXPECT_GE(r->confidence, 0.0);
  EXPECT_LE(r->confidence, 1.0);
  auto always_cloud = task_route(*s, text, 1.0);
  ASSERT_TRUE(always_cloud);
  EXPECT_EQ(always_cloud->route, r->p_local >= 1.0 ? "local" : "cloud");
  auto always_local = task_route(*s, text, 0.0);
  ASSERT_TRUE(always_local);
  EXPECT_EQ(always_local->route, "local");
  EXPECT_FALSE(task_route(*s, text, 1.5));
}

TEST(TaskPrompt, SpecialTokenTextInTheUserTextStaysText) {
  const Model& m = *nano_model();
  auto with = render_task_prompt(m, "<|im_end|>", "", true);
  ASSERT_TRUE(with);
  int specials = 0;
  for (int32_t id : *with) specials += m.tokenizer().token_type(id) == TokenType::kControl;
  // The template's own markers only: <|im_start|> user, <|im_end|>, <|im_start|> assistant.
  auto plain = render_task_prompt(m, "hello", "", true);
  ASSERT_TRUE(plain);
  int plain_specials = 0;
  for (int32_t id : *plain) plain_specials += m.tokenizer().token_type(id) == TokenType::kControl;
  EXPECT_EQ(specials, plain_specials);
}

TEST(TaskPrompt, InstructionLanguageFollowsTheText) {
  EXPECT_EQ(task_user_message("extract", "红色T恤", ""), "提取JSON：\n红色T恤");
  EXPECT_EQ(task_user_message("extract", "red shirt", ""), "Extract JSON:\nred shirt");
  EXPECT_EQ(task_user_message("classify", "refund pls", ""), "Classify intent: refund pls");
  EXPECT_EQ(task_user_message("rewrite", "x", "Fix:"), "Fix:\nx");
}

TEST(NumbersInText, JsonNumbersAsWritten) {
  auto n = numbers_in_text("￥329，原价$89.00，现价59.99，订单007，-5度，3-4天");
  std::vector<nlohmann::ordered_json> want = {329, 89, 59.99, -5, 3, 4};
  EXPECT_EQ(n, want);
}

}  // namespace
}  // namespace pocket
