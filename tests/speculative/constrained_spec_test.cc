// Speculative decoding under a constraint (a JSON schema): every verified row is masked in the grammar state
// after the tokens accepted before it, so the output is the plain constrained Session's, token for token and
// stop reason for stop reason, with the trained block drafter and with prompt lookup; a draft the grammar
// forbids is just rejected. On the shipped model and its drafter (committed under models/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "generate/chat_prompt.h"
#include "spec_fixture.h"
#include "speculative/speculative_session.h"
#include "task/task.h"

namespace pocket {
namespace {

struct Prompt {
  std::string task, user;
  std::vector<int32_t> ids;
};

class ConstrainedSpec : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::absolute(__FILE__).parent_path().parent_path().parent_path().string();
    const std::string nano = root_ + "/models/pocket-nano-q4.pocket";
    drafter_ = root_ + "/models/pocket-nano-drafter.pocket";
    if (!std::filesystem::exists(nano) || !std::filesystem::exists(drafter_)) {
      GTEST_SKIP() << "models/pocket-nano-q4.pocket or models/pocket-nano-drafter.pocket is absent";
    }
    auto m = Model::load(nano);
    ASSERT_TRUE(m) << m.status().to_string();
    model_ = *m;
    std::ifstream in(root_ + "/tests/speculative/data/task_prompts.jsonl");
    ASSERT_TRUE(in);
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line);
      std::vector<ChatMessage> chat;
      for (const auto& msg : j.at("messages")) {
        chat.push_back({msg.at("role").get<std::string>(), msg.at("content").get<std::string>()});
      }
      auto ids = render_chat_ids(*model_, chat, true);
      ASSERT_TRUE(ids) << ids.status().to_string();
      prompts_.push_back({j.at("task").get<std::string>(), chat.back().content, *ids});
    }
    ASSERT_EQ(prompts_.size(), 40u);
  }

  std::unique_ptr<SpeculativeSession> spec(SpecMethod method) const {
    SessionOptions so;
    so.n_threads = 1;
    so.n_ctx = 512;
    SpeculativeOptions o;
    o.method = method;
    if (method == SpecMethod::kBlock) o.draft_model_path = drafter_;
    o.draft_max = 8;
    o.fallback.enabled = false;
    auto s = SpeculativeSession::create(model_, so, o);
    EXPECT_TRUE(s) << s.status().to_string();
    return s ? std::move(*s) : nullptr;
  }

  std::unique_ptr<Session> plain() const {
    SessionOptions so;
    so.n_threads = 1;
    so.n_ctx = 512;
    auto s = Session::create(model_, so);
    EXPECT_TRUE(s) << s.status().to_string();
    return s ? std::move(*s) : nullptr;
  }

  std::string root_, drafter_;
  std::shared_ptr<const Model> model_;
  std::vector<Prompt> prompts_;
};

// Generates `ids` under a fresh constraint for `schema` (empty: any JSON object), then 6 more tokens without
// one (the pending-token hand-over after a constraint ends the call).
struct Run {
  std::vector<int32_t> tokens;  // both calls, separated by -100
  StopReason stop;              // the constrained call's
  SpecStats spec;               // the constrained call's (speculative sessions)
};

template <class S>
Run run(S& s, const Model& model, const Prompt& p, const std::string& schema, GenerateOptions go) {
  auto con = make_json_constraint(model, schema, p.user);
  EXPECT_TRUE(con) << con.status().to_string();
  go.constraint = con->get();
  std::vector<int32_t> out;
  auto cb = [&](int32_t id, std::string_view) {
    if (id >= 0) out.push_back(id);
    return true;
  };
  GenerateStats st;
  Status rs = s.generate_tokens(p.ids, go, cb, nullptr, &st);
  EXPECT_TRUE(rs.is_ok()) << rs.to_string();
  const StopReason stop = st.stop;
  SpecStats first;
  if constexpr (std::is_same_v<S, SpeculativeSession>) first = s.spec_stats();
  out.push_back(-100);  // separates the two calls
  GenerateOptions more = go;
  more.constraint = nullptr;
  more.n_predict = 6;
  rs = s.generate_tokens(std::vector<int32_t>{}, more, cb, nullptr, &st);
  EXPECT_TRUE(rs.is_ok()) << rs.to_string();
  return {out, stop, first};
}

TEST_F(ConstrainedSpec, GreedyEqualsPlainWithTheBlockDrafterAndPromptLookup) {
  const std::string grounded =
      R"({"type":"object","properties":{"name":{"type":"string","x-pocket-copy":true},)"
      R"("colour":{"type":"string","x-pocket-copy":true}},"required":["name"]})";
  for (SpecMethod method : {SpecMethod::kBlock, SpecMethod::kNgram}) {
    auto sp = spec(method);
    ASSERT_TRUE(sp);
    int64_t passes = 0, accepted = 0, done_by_constraint = 0;
    for (const Prompt& p : prompts_) {
      for (const std::string& schema : {std::string(), grounded}) {
        if (!schema.empty() && p.task != "extract") continue;
        SCOPED_TRACE(p.task + (schema.empty() ? " json_object: " : " grounded schema: ") + p.user);
        GenerateOptions go;
        go.n_predict = 96;
        auto pl = plain();
        ASSERT_TRUE(pl);
        const auto want = run(*pl, *model_, p, schema, go);
        sp->reset();
        const auto got = run(*sp, *model_, p, schema, go);
        EXPECT_EQ(got.tokens, want.tokens);
        EXPECT_EQ(static_cast<int>(got.stop), static_cast<int>(want.stop));
        done_by_constraint += want.stop == StopReason::kConstraintDone;
        passes += got.spec.n_passes;
        accepted += got.spec.n_accepted;
      }
    }
    // The grammar ended most outputs, and drafts still pay under it.
    EXPECT_GT(done_by_constraint, 30);
    const double tokens_per_pass = static_cast<double>(passes + accepted) / static_cast<double>(passes);
    std::printf("%s under the JSON constraint: %.2f tokens per target pass\n",
                method == SpecMethod::kBlock ? "block drafter" : "prompt lookup", tokens_per_pass);
    EXPECT_GT(tokens_per_pass, method == SpecMethod::kBlock ? 2.0 : 1.0);
  }
}

// Sampling under the constraint: the same seed gives the same tokens (each emitted token costs one draw in
// the same order, and a verify row equals the one-row step on this model's kernels).
TEST_F(ConstrainedSpec, SampledSameSeedSameTokens) {
  auto sp = spec(SpecMethod::kBlock);
  ASSERT_TRUE(sp);
  for (size_t i = 0; i < prompts_.size(); i += 4) {
    const Prompt& p = prompts_[i];
    SCOPED_TRACE(p.task + ": " + p.user);
    GenerateOptions go;
    go.n_predict = 64;
    go.sampling.temperature = 0.8f;
    go.sampling.seed = 17 + i;
    auto pl = plain();
    ASSERT_TRUE(pl);
    const auto want = run(*pl, *model_, p, "", go);
    sp->reset();
    const auto got = run(*sp, *model_, p, "", go);
    EXPECT_EQ(got.tokens, want.tokens);
  }
}

// The task layer with TaskOptions::generate on a speculative session (pocket task --spec, the server with
// --spec): rewriting and token-by-token extraction give the plain task layer's results, and the drafter is
// used (target passes counted); classification still scores labels on the plain session.
TEST_F(ConstrainedSpec, TaskLayerThroughTheSpeculativeSession) {
  auto sp = spec(SpecMethod::kBlock);
  ASSERT_TRUE(sp);
  int64_t passes = 0, accepted = 0, calls = 0;
  const TaskGenerateFn gen = [&](std::span<const int32_t> prompt, const GenerateOptions& go,
                                 const TokenCallback& cb, const std::atomic<bool>* cancel,
                                 GenerateStats* st) {
    sp->reset();
    Status s = sp->generate_tokens(prompt, go, cb, cancel, st);
    passes += sp->spec_stats().n_passes;
    accepted += sp->spec_stats().n_accepted;
    ++calls;
    return s;
  };
  auto pl = plain();
  ASSERT_TRUE(pl);
  int checked = 0;
  for (const Prompt& p : prompts_) {
    if (p.task != "extract" && p.task != "rewrite") continue;
    SCOPED_TRACE(p.task + ": " + p.user);
    // The task layer writes its own instruction: the text is what follows the prompt's first line.
    const size_t nl = p.user.find('\n');
    nlohmann::ordered_json req = {{"task", p.task},
                                  {"text", nl == std::string::npos ? p.user : p.user.substr(nl + 1)}};
    if (p.task == "extract") {
      req["schema"] = nlohmann::ordered_json::parse(
          R"({"type":"object","properties":{"name":{"type":"string"},"brand":{"type":"string"},)"
          R"("colour":{"type":"string"},"price":{"type":"number"}}})");
      req["beams"] = 1;
    }
    auto want = run_task(*pl, req);
    ASSERT_TRUE(want) << want.status().to_string();
    auto got = run_task(*pl, req, nullptr, gen);
    ASSERT_TRUE(got) << got.status().to_string();
    want->erase("usage");
    got->erase("usage");
    EXPECT_EQ(got->dump(), want->dump());
    ++checked;
  }
  EXPECT_EQ(checked, 16);
  EXPECT_EQ(calls, checked);
  EXPECT_GT(accepted, passes) << "the drafter drafts inside the task layer too";
  // Label scoring does not generate: the hook is not called.
  auto c = run_task(
      *pl, {{"task", "classify"}, {"text", "where is my parcel"}, {"labels", {"order_status", "refund"}}},
      nullptr, gen);
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_EQ(calls, checked);
}

}  // namespace
}  // namespace pocket
