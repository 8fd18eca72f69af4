// One completion on pocket-nano: the chat is rendered in ChatML exactly as written out here by hand; the
// output equals Session::generate on the rendered text (its own encoding path); stop strings, limits,
// context overflow and a vanishing client behave as documented; the response shapes carry usage.
#include <gtest/gtest.h>

#include "server/completion.h"
#include "server_fixture.h"

namespace pocket::server {
namespace {

using nlohmann::json;

CompletionRequest chat_request(const std::string& user, int64_t max_tokens) {
  CompletionRequest r;
  r.chat = true;
  r.messages = {{"system", "You are brief."}, {"user", user}};
  r.temperature = 0.0f;
  r.max_tokens = max_tokens;
  return r;
}

std::unique_ptr<Session> make_session(const std::shared_ptr<const Model>& m, int64_t n_ctx) {
  SessionOptions so;
  so.n_ctx = n_ctx;
  so.n_threads = 1;
  auto s = Session::create(m, so);
  EXPECT_TRUE(s) << s.status().to_string();
  return std::move(*s);
}

TEST(Completion, ChatRendersChatMLAndMatchesSessionGenerate) {
  POCKET_REQUIRE_NANO(model);
  ASSERT_EQ(model->config().chat_template, "chatml");
  const CompletionRequest req = chat_request("提取JSON：红色T恤，￥59。", 40);
  auto p = prepare_completion(*model, 512, req, 2048);
  ASSERT_TRUE(p) << p.status().to_string();
  // The same ids as the ChatML text written out by hand, encoded with special tokens and the package's BOS.
  const std::string chatml =
      "<|im_start|>system\nYou are brief.<|im_end|>\n<|im_start|>user\n提取JSON：红色T恤，￥59。<|im_end|>\n"
      "<|im_start|>assistant\n";
  std::vector<int32_t> want_ids;
  ASSERT_TRUE(model->tokenizer().encode(chatml, EncodeOptions{model->config().add_bos, true}, &want_ids).is_ok());
  EXPECT_EQ(p->prompt_ids, want_ids);
  std::vector<int32_t> plain_ids;  // the markup as plain text is longer: the specials were parsed
  ASSERT_TRUE(model->tokenizer().encode(chatml, EncodeOptions{false, false}, &plain_ids).is_ok());
  EXPECT_GT(plain_ids.size(), want_ids.size());
  EXPECT_EQ(p->options.n_predict, 40);
  EXPECT_EQ(p->options.sampling.temperature, 0.0f);

  auto s = make_session(model, 512);
  CompletionResult r;
  std::atomic<bool> cancel{false};
  std::string streamed;
  ASSERT_TRUE(run_completion(*s, *p, cancel, [&](std::string_view d) { streamed += d; return true; }, nullptr, &r).is_ok());
  EXPECT_EQ(streamed, r.text);
  EXPECT_FALSE(r.text.empty());
  EXPECT_EQ(r.stats.n_prompt, static_cast<int64_t>(p->prompt_ids.size()));
  EXPECT_GT(r.stats.n_generated, 0);
  EXPECT_TRUE(r.finish_reason == "stop" || r.finish_reason == "length");

  // The same prompt through Session::generate's own encoding, with the package's sampling at temperature 0.
  auto ref = make_session(model, 512);
  auto rendered = apply_chat_template("chatml", req.messages, true);
  ASSERT_TRUE(rendered);
  GenerateOptions go;
  go.n_predict = 40;
  go.parse_special = true;
  go.sampling.temperature = 0.0f;
  go.sampling.repeat_penalty = model->config().sampling.repeat_penalty;
  go.sampling.repeat_last_n = model->config().sampling.repeat_last_n;
  std::string want;
  ASSERT_TRUE(ref->generate(*rendered, go, [&](int32_t, std::string_view t) { want += t; return true; }).is_ok());
  EXPECT_EQ(r.text, want);
}

TEST(Completion, StopStringCutsTheOutput) {
  POCKET_REQUIRE_NANO(model);
  CompletionRequest req = chat_request("提取JSON：蓝色帆布鞋，品牌远行，￥199。", 60);
  auto s = make_session(model, 512);
  std::atomic<bool> cancel{false};
  CompletionResult full;
  {
    auto p = prepare_completion(*model, 512, req, 2048);
    ASSERT_TRUE(p);
    ASSERT_TRUE(run_completion(*s, *p, cancel, nullptr, nullptr, &full).is_ok());
  }
  ASSERT_GE(full.text.size(), 6u) << full.text;
  // A stop string taken from the middle of the unstopped output.
  const std::string stop = full.text.substr(full.text.size() / 2, 2);
  req.stop = {stop};
  s->reset();
  auto p = prepare_completion(*model, 512, req, 2048);
  ASSERT_TRUE(p);
  CompletionResult cut;
  ASSERT_TRUE(run_completion(*s, *p, cancel, nullptr, nullptr, &cut).is_ok());
  EXPECT_EQ(cut.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_EQ(cut.finish_reason, "stop");
}

TEST(Completion, LimitsAndContextOverflow) {
  POCKET_REQUIRE_NANO(model);
  const CompletionRequest ok = chat_request("hi", 8);
  auto p = prepare_completion(*model, 512, ok, 4);  // max_tokens above the server's limit
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(api_error_from(p.status()).http_status, 400);
  p = prepare_completion(*model, 512, chat_request("hi", 500), 2048);  // prompt + max_tokens past the context
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().code(), ErrorCode::kContextExceeded);
  EXPECT_EQ(api_error_from(p.status()).code, "context_length_exceeded");
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "word ";
  p = prepare_completion(*model, 128, chat_request(long_text, 1), 2048);  // the prompt alone
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().code(), ErrorCode::kContextExceeded);
  // Without max_tokens the generation is sized to what the context leaves.
  CompletionRequest open = chat_request("hi", 1);
  open.max_tokens.reset();
  p = prepare_completion(*model, 128, open, 2048);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->options.n_predict, 128 - static_cast<int32_t>(p->prompt_ids.size()));
  // A model without a chat template refuses chat (400), but serves raw completions.
  CompletionRequest raw;
  raw.chat = false;
  raw.prompt = "Once upon";
  EXPECT_TRUE(prepare_completion(*testing::tiny_model(), 64, raw, 16));
  auto no_tmpl = prepare_completion(*testing::tiny_model(), 64, chat_request("hi", 4), 16);
  ASSERT_FALSE(no_tmpl);
  EXPECT_EQ(api_error_from(no_tmpl.status()).http_status, 400);
}

TEST(Completion, VanishingClientCancels) {
  POCKET_REQUIRE_NANO(model);
  CompletionRequest req;
  req.chat = false;
  req.prompt = "Once upon a time";
  req.temperature = 0.0f;
  req.max_tokens = 200;
  req.ignore_eos = true;
  auto p = prepare_completion(*model, 512, req, 2048);
  ASSERT_TRUE(p);
  auto s = make_session(model, 512);
  std::atomic<bool> cancel{false};
  int polls = 0;
  CompletionResult r;
  Status st = run_completion(*s, *p, cancel, nullptr, [&] { return ++polls < 5; }, &r);
  EXPECT_EQ(st.code(), ErrorCode::kCancelled);
  EXPECT_TRUE(cancel.load());
  EXPECT_LE(r.stats.n_generated, 5);
  // A cancellation raised from outside (shutdown) ends the call too.
  s->reset();
  auto p2 = prepare_completion(*model, 512, req, 2048);
  ASSERT_TRUE(p2);
  std::atomic<bool> raised{true};
  EXPECT_EQ(run_completion(*s, *p2, raised, nullptr, nullptr, &r).code(), ErrorCode::kCancelled);
}

TEST(Completion, ResponseShapes) {
  CompletionRequest req;
  req.chat = true;
  CompletionResult r;
  r.text = "hello";
  r.finish_reason = "stop";
  r.stats.n_prompt = 7;
  r.stats.n_generated = 3;
  r.stats.decode_seconds = 0.5;
  const json j = completion_response(req, "chatcmpl-1", 100, "nano", r, 2.0);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "hello");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["usage"]["total_tokens"], 10);
  EXPECT_DOUBLE_EQ(j["timings"]["predicted_per_second"].get<double>(), 6.0);
  const json first = completion_chunk(req, "chatcmpl-1", 100, "nano", "", true, "");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const json last = completion_chunk(req, "chatcmpl-1", 100, "nano", "", false, "length");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(last["choices"][0]["delta"].contains("content"));
  req.chat = false;
  EXPECT_EQ(completion_response(req, "cmpl-1", 100, "nano", r, 0)["choices"][0]["text"], "hello");
}

}  // namespace
}  // namespace pocket::server
