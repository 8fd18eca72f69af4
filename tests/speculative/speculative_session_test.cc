// SpeculativeSession is lossless: greedy output equals the plain Session's token for token with every
// drafter and k = 1..8 (random tiny models and stories260K), sampling follows the target's distribution,
// a rollback leaves no trace, and bad options are refused with clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model/stories_fixture.h"
#include "spec_fixture.h"
#include "speculative/block_drafter.h"
#include "speculative/draft_model_drafter.h"

namespace pocket {
namespace {

using testing::plain_generate;
using testing::spec_generate;
using testing::tiny_model;

SessionOptions one_thread(int64_t n_ctx = 0) {
  SessionOptions so;
  so.n_threads = 1;
  so.n_ctx = n_ctx;
  return so;
}

// The tests here count drafted and accepted tokens per drafter, so every round speculates: the timing-driven
// fallback to plain rounds is off (spec_fallback_test.cc covers it, and output equality with it on).
std::unique_ptr<SpeculativeSession> make_spec(std::shared_ptr<const Model> target, SpeculativeOptions spec,
                                              std::unique_ptr<Drafter> drafter = nullptr, int64_t n_ctx = 0) {
  spec.fallback.enabled = false;
  auto s = drafter ? SpeculativeSession::create(target, one_thread(n_ctx), spec, std::move(drafter))
                   : SpeculativeSession::create(target, one_thread(n_ctx), spec);
  EXPECT_TRUE(s) << s.status().to_string();
  return s ? std::move(*s) : nullptr;
}

GenerateOptions greedy(int n) {
  GenerateOptions go;
  go.n_predict = n;
  go.stop_at_eos = false;
  return go;
}

// Greedy equality for one target over many prompts, k = 1..8, every drafter kind.
void expect_greedy_lossless(const std::shared_ptr<const Model>& target, const std::shared_ptr<const Model>& other_draft,
                            const std::vector<std::vector<int32_t>>& prompts, int n_predict) {
  const int32_t n_vocab = static_cast<int32_t>(target->hparams().n_vocab);
  int64_t accepted_total = 0, drafted_total = 0;
  for (size_t p = 0; p < prompts.size(); ++p) {
    const auto& prompt = prompts[p];
    const std::vector<int32_t> want = plain_generate(target, prompt, greedy(n_predict));
    ASSERT_EQ(want.size(), static_cast<size_t>(n_predict));
    for (int32_t k = 1; k <= 8; ++k) {
      for (int kind = 0; kind < 5; ++kind) {
        SpeculativeOptions spec;
        spec.draft_max = k;
        spec.adaptive = (kind + k) % 2 == 0;  // both schedules
        std::unique_ptr<Drafter> custom;
        if (kind == 0) spec.method = SpecMethod::kNgram;
        if (kind == 1) {  // the target itself as draft model: every draft accepted, bonus path
          spec.method = SpecMethod::kDraftModel;
          spec.draft_model = target;
        }
        if (kind == 2) {  // another model: mostly rejected
          if (other_draft == nullptr) continue;
          spec.method = SpecMethod::kDraftModel;
          spec.draft_model = other_draft;
        }
        if (kind == 3) custom = std::make_unique<testing::ScriptedDrafter>(prompt, want, 3 + k % 4, n_vocab);
        if (kind == 4) custom = std::make_unique<testing::RandomDrafter>(n_vocab, p * 31 + k);
        auto s = make_spec(target, spec, std::move(custom));
        ASSERT_NE(s, nullptr);
        const std::vector<int32_t> got = spec_generate(*s, prompt, greedy(n_predict));
        ASSERT_EQ(got, want) << "prompt " << p << ", k " << k << ", drafter " << s->drafter()->name();
        // The cache holds exactly the evaluated history: the last emitted token is pending.
        EXPECT_EQ(s->n_past(), static_cast<int64_t>(prompt.size() + want.size() - 1));
        EXPECT_EQ(s->history().size(), static_cast<size_t>(s->n_past()));
        accepted_total += s->spec_stats().n_accepted;
        drafted_total += s->spec_stats().n_drafted;
      }
    }
  }
  // Both outcomes were exercised plenty.
  EXPECT_GT(accepted_total, 1000);
  EXPECT_GT(drafted_total - accepted_total, 1000);
}

TEST(SpeculativeSession, GreedyEqualsPlainOnRandomTinyModels) {
  for (uint64_t seed : {11u, 12u}) {
    auto target = tiny_model(seed);
    expect_greedy_lossless(target, tiny_model(seed + 100), testing::repetitive_prompts(6, 300, seed), 32);
  }
}

// The same on 4-bit models, which run the dispatched kernels (batched matmul tiles, the f16 KV cache's
// attention): a verify row equals the one-row step bit for bit, so greedy output is unchanged.
TEST(SpeculativeSession, GreedyEqualsPlainOnRandomQuantisedModels) {
  for (uint64_t seed : {21u, 22u}) {
    auto target = tiny_model(seed, DType::kQ4G32);
    expect_greedy_lossless(target, tiny_model(seed + 100, DType::kQ4G32), testing::repetitive_prompts(4, 300, seed),
                           32);
  }
}

TEST(SpeculativeSession, GreedyEqualsPlainOnStories260K) {
  POCKET_REQUIRE_SHARED_DATA(data);
  auto m = Model::load(testing::stories260k_package());
  ASSERT_TRUE(m) << m.status().to_string();
  const Tokenizer& tok = (*m)->tokenizer();
  std::vector<std::vector<int32_t>> prompts;
  for (const char* text : {"Once upon a time", "Lily went to the park. Lily went to the park and", "The dog",
                           "Tom had a red ball. He liked the red ball.", "The sun was hot. The sun was",
                           "Ben and Mia"}) {
    std::vector<int32_t> ids;
    EncodeOptions eo;
    eo.add_bos = true;
    ASSERT_TRUE(tok.encode(text, eo, &ids).is_ok());
    prompts.push_back(ids);
  }
  // The draft model for stories260K is stories260K itself (the only real model with its tokenizer at hand;
  // all drafts accepted); the scripted and random drafters cover partial acceptance and rejection.
  expect_greedy_lossless(*m, nullptr, prompts, 32);
}

// Stops inside an accepted draft (n_predict, stop tokens, the callback) and at a full context leave the
// session exactly where the plain Session would be.
TEST(SpeculativeSession, StopsInsideADraftMatchPlain) {
  auto target = tiny_model(11);
  const std::vector<int32_t> prompt = {5, 6, 7, 8, 5, 6, 7};
  for (int n = 1; n <= 12; ++n) {
    SpeculativeOptions spec;
    spec.method = SpecMethod::kDraftModel;
    spec.draft_model = target;
    spec.draft_max = 8;
    auto s = make_spec(target, spec);
    EXPECT_EQ(spec_generate(*s, prompt, greedy(n)), plain_generate(target, prompt, greedy(n))) << n;
    // A second call continues from the pending token, as Session does.
    const std::vector<int32_t> more = {9};
    auto plain = Session::create(target, one_thread());
    ASSERT_TRUE(plain);
    std::vector<int32_t> a, b;
    ASSERT_TRUE((*plain)->generate_tokens(prompt, greedy(n), nullptr).is_ok());
    ASSERT_TRUE((*plain)->generate_tokens(more, greedy(7), [&](int32_t id, std::string_view) {
      if (id >= 0) a.push_back(id);
      return true;
    }).is_ok());
    b = spec_generate(*s, more, greedy(7));
    EXPECT_EQ(a, b) << n;
    EXPECT_EQ((*plain)->history(), s->history()) << n;
  }
  // A full context: the same tokens and the same stop reason.
  for (int64_t n_ctx : {20, 24, 27}) {
    SpeculativeOptions spec;
    spec.method = SpecMethod::kDraftModel;
    spec.draft_model = target;
    auto s = make_spec(target, spec, nullptr, n_ctx);
    GenerateOptions go = greedy(-1);
    GenerateStats gs;
    std::vector<int32_t> got;
    ASSERT_TRUE(s->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
      if (id >= 0) got.push_back(id);  // id -1: the closing U+FFFD flush, text only
      return true;
    }, nullptr, &gs).is_ok());
    EXPECT_EQ(gs.stop, StopReason::kContextFull);
    EXPECT_EQ(got, plain_generate(target, prompt, go, n_ctx)) << n_ctx;
  }
  // The callback stops generation inside a draft.
  SpeculativeOptions spec;
  spec.method = SpecMethod::kDraftModel;
  spec.draft_model = target;
  auto s = make_spec(target, spec);
  int seen = 0;
  GenerateStats gs;
  ASSERT_TRUE(s->generate_tokens(prompt, greedy(30), [&](int32_t id, std::string_view) { return id < 0 || ++seen < 5; }, nullptr, &gs).is_ok());
  EXPECT_EQ(seen, 5);
  EXPECT_EQ(gs.stop, StopReason::kCallback);
  EXPECT_EQ(s->n_past(), static_cast<int64_t>(prompt.size() + 4));
}

// Stop tokens: hot sampling makes EOS appear; with the same seed both sessions stop at the same place,
// with the same history (the stop token is neither emitted nor evaluated), often inside an accepted draft.
TEST(SpeculativeSession, StopTokenMatchesPlain) {
  auto target = tiny_model(12);
  const std::vector<int32_t> prompt = {40, 41, 42, 40, 41};
  int stopped = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    GenerateOptions go = greedy(60);
    go.stop_at_eos = true;
    go.sampling.temperature = 3.0f;
    go.sampling.top_k = 0;
    go.sampling.top_p = 1.0f;
    go.sampling.min_p = 0.0f;
    go.sampling.seed = seed;
    auto plain = Session::create(target, one_thread());
    ASSERT_TRUE(plain);
    GenerateStats ps, ss;
    std::vector<int32_t> a;
    ASSERT_TRUE((*plain)->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
      a.push_back(id);
      return true;
    }, nullptr, &ps).is_ok());
    SpeculativeOptions spec;
    spec.method = SpecMethod::kDraftModel;
    spec.draft_model = target;
    auto s = make_spec(target, spec);
    std::vector<int32_t> b;
    ASSERT_TRUE(s->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
      b.push_back(id);
      return true;
    }, nullptr, &ss).is_ok());
    EXPECT_EQ(a, b) << seed;
    EXPECT_EQ(ps.stop, ss.stop) << seed;
    EXPECT_EQ((*plain)->history(), s->history()) << seed;
    stopped += ps.stop == StopReason::kStopToken;
  }
  EXPECT_GT(stopped, 0) << "no run met a stop token; the test exercised nothing";
}

// Sampling. With a deterministic drafter each emitted token costs one uniform draw from the target's
// distribution, in the same order as plain sampling; on the f32 reference path (batched rows bitwise equal
// to single rows) the same seed therefore gives the very same tokens.
TEST(SpeculativeSession, SamplingSameSeedSameTokensOnF32) {
  auto target = tiny_model(11);
  const auto prompts = testing::repetitive_prompts(6, 300, 5);
  for (uint64_t seed = 0; seed < 12; ++seed) {
    GenerateOptions go = greedy(32);
    go.sampling.temperature = 0.7f;
    go.sampling.top_k = 20;
    go.sampling.top_p = 0.9f;
    go.sampling.min_p = 0.02f;
    go.sampling.repeat_penalty = 1.1f;
    go.sampling.seed = seed;
    const auto& prompt = prompts[seed % prompts.size()];
    SpeculativeOptions spec;
    spec.method = seed % 2 ? SpecMethod::kNgram : SpecMethod::kDraftModel;
    spec.draft_model = target;
    spec.draft_max = 1 + static_cast<int32_t>(seed % 8);
    auto s = make_spec(target, spec);
    EXPECT_EQ(spec_generate(*s, prompt, go), plain_generate(target, prompt, go)) << "seed " << seed;
  }
}

// The distribution test: independent seeds for the two arms, so it does not lean on the bitwise argument
// above. The drafter is the target itself drafting greedily, so at temperature 1 each position is a real
// accept/reject decision (accepted with probability p(argmax)).
//
// Test: two-sample chi-square on the 3rd generated token (cells with fewer than 20 counts pooled), N = 2000
// runs per arm at temperature 0.5, fixed seeds, threshold at alpha = 0.001. Power: moving 10 % of the
// probability mass onto the drafted token (e.g. a verifier that accepts drafts too often), with that token
// near p = 0.5, gives a noncentrality N/2 * sum(delta^2 / p) ~ 1000 * (0.01/0.5 + 0.01/0.5) = 40; the
// noncentral chi-square(df, 40) exceeds the alpha = 0.001 critical value with probability 0.91 at df = 15,
// 0.97 at df = 8, 0.98 at df = 5 (Monte Carlo, 20 000 draws). Grosser bugs (always accepting) are certain.
TEST(SpeculativeSession, SamplingDistributionMatchesPlainChiSquare) {
  auto target = tiny_model(13);
  const std::vector<int32_t> prompt = {17, 18, 19, 20};
  const int n_runs = 2000;
  const size_t pos = 2;
  std::map<int32_t, int64_t> plain_counts, spec_counts;
  SpeculativeOptions spec;
  spec.method = SpecMethod::kDraftModel;
  spec.draft_model = target;
  spec.draft_max = 4;
  spec.adaptive = false;
  auto s = make_spec(target, spec);
  auto plain = Session::create(target, one_thread());
  ASSERT_TRUE(plain);
  int64_t drafted = 0, accepted = 0;
  for (int r = 0; r < n_runs; ++r) {
    GenerateOptions go = greedy(3);
    go.sampling.temperature = 0.5f;
    go.sampling.top_k = 0;
    go.sampling.top_p = 1.0f;
    go.sampling.min_p = 0.0f;
    go.sampling.seed = 1000003u * r + 1;
    (*plain)->reset();
    std::vector<int32_t> a;
    ASSERT_TRUE((*plain)->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
      a.push_back(id);
      return true;
    }).is_ok());
    go.sampling.seed = 7777777u * r + 5;  // an independent stream for the speculative arm
    s->reset();
    const std::vector<int32_t> b = spec_generate(*s, prompt, go);
    ASSERT_GT(a.size(), pos);
    ASSERT_GT(b.size(), pos);
    ++plain_counts[a[pos]];
    ++spec_counts[b[pos]];
    drafted += s->spec_stats().n_drafted;
    accepted += s->spec_stats().n_accepted;
  }
  // Both paths of the rejection rule ran often.
  EXPECT_GT(accepted, n_runs / 4);
  EXPECT_GT(drafted - accepted, n_runs / 4);
  testing::expect_same_distribution(plain_counts, spec_counts);
}

// A rollback leaves no trace: after verifying rejected tokens and truncating, the next logits are bitwise
// those of a cache that never saw them (f32 reference path; each row of a batch is computed independently).
TEST(SpeculativeSession, RollbackIsBitwiseInvisibleOnF32) {
  auto model = tiny_model(11);
  ThreadPool pool(1);
  SessionShape shape;
  shape.n_ctx = 64;
  shape.n_logit_rows = 9;
  auto a = Transformer::create(model, shape, &pool);
  auto b = Transformer::create(model, shape, &pool);
  ASSERT_TRUE(a && b);
  const std::vector<int32_t> prompt = {3, 50, 60, 70, 80};
  ASSERT_TRUE((*a)->forward(prompt, false).is_ok());
  ASSERT_TRUE((*b)->forward(prompt, false).is_ok());
  const int64_t n_vocab = model->hparams().n_vocab;
  for (int round = 0; round < 6; ++round) {
    const int32_t t = 100 + round;
    // a: verify t and 7 rejected tokens, keep t only. b: never sees them.
    const std::vector<int32_t> batch = {t, 9, 8, 7, 6, 5, 4, 3};
    ASSERT_TRUE((*a)->forward(batch, true).is_ok());
    (*a)->truncate((*a)->n_past() - 7);
    const int32_t one[1] = {t};
    ASSERT_TRUE((*b)->forward(one, false).is_ok());
    ASSERT_EQ((*a)->n_past(), (*b)->n_past());
    const int32_t x[1] = {200 + round};
    ASSERT_TRUE((*a)->forward(x, false).is_ok());
    ASSERT_TRUE((*b)->forward(x, false).is_ok());
    EXPECT_EQ(std::memcmp((*a)->logits(0), (*b)->logits(0), sizeof(float) * static_cast<size_t>(n_vocab)), 0)
        << "round " << round;
  }
}

// The same through the session: a drafter whose every token is rejected; afterwards the session's next
// logits equal a plain session's bitwise.
TEST(SpeculativeSession, SessionAfterRejectionsEqualsPlainBitwise) {
  auto model = tiny_model(12);
  const std::vector<int32_t> prompt = {3, 4, 5, 6};
  SpeculativeOptions spec;
  spec.draft_max = 8;
  spec.adaptive = false;
  auto s = make_spec(model, spec, std::make_unique<testing::RandomDrafter>(300, 99));
  auto plain = Session::create(model, one_thread());
  ASSERT_TRUE(plain);
  ASSERT_TRUE((*plain)->generate_tokens(prompt, greedy(25), nullptr).is_ok());
  ASSERT_TRUE(s->generate_tokens(prompt, greedy(25), nullptr).is_ok());
  EXPECT_GT(s->spec_stats().n_drafted - s->spec_stats().n_accepted, 100);
  ASSERT_EQ(s->history(), (*plain)->history());
  const int32_t x[1] = {77};
  ASSERT_TRUE(s->transformer().forward(x, false).is_ok());
  ASSERT_TRUE((*plain)->transformer().forward(x, false).is_ok());
  EXPECT_EQ(std::memcmp(s->transformer().logits(0), (*plain)->transformer().logits(0), sizeof(float) * 300), 0);
}

TEST(SpeculativeSession, BadOptionsRefusedClearly) {
  auto model = tiny_model(11);
  for (int32_t k : {0, -1, 17, 1000}) {
    SpeculativeOptions spec;
    spec.draft_max = k;
    auto s = SpeculativeSession::create(model, one_thread(), spec);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("k = " + std::to_string(k)), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find("1..16"), std::string::npos);
  }
  for (int32_t k : {1, 16}) {
    SpeculativeOptions spec;
    spec.draft_max = k;
    EXPECT_TRUE(SpeculativeSession::create(model, one_thread(), spec)) << k;
  }
  SpeculativeOptions spec;
  spec.method = SpecMethod::kDraftModel;
  auto no_draft = SpeculativeSession::create(model, one_thread(), spec);
  ASSERT_FALSE(no_draft);
  EXPECT_NE(no_draft.status().message().find("needs a draft model"), std::string::npos);
  spec.draft_model = tiny_model(11, DType::kF32, 320);  // another vocabulary size
  auto other = SpeculativeSession::create(model, one_thread(), spec);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("320 tokens"), std::string::npos) << other.status().message();
  spec.draft_model = nullptr;
  spec.draft_model_path = "/nonexistent/draft.pocket";
  auto missing = SpeculativeSession::create(model, one_thread(), spec);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), ErrorCode::kIoError);
  spec.method = SpecMethod::kBlock;  // the missing drafter package (more in block_drafter_test.cc)
  auto block = SpeculativeSession::create(model, one_thread(), spec);
  ASSERT_FALSE(block);
  EXPECT_EQ(block.status().code(), ErrorCode::kIoError);
  EXPECT_FALSE(parse_spec_method("medusa"));
  EXPECT_EQ(*parse_spec_method("ngram"), SpecMethod::kNgram);
  spec.method = SpecMethod::kNgram;
  spec.ngram.ngram_min = 0;
  EXPECT_FALSE(SpeculativeSession::create(model, one_thread(), spec));
  // A context too small for the verify batch.
  SpeculativeOptions big;
  big.draft_max = 16;
  auto tiny_ctx = SpeculativeSession::create(model, one_thread(8), big);
  ASSERT_FALSE(tiny_ctx);
  EXPECT_NE(tiny_ctx.status().message().find("k + 1 = 17"), std::string::npos) << tiny_ctx.status().message();
}

// The stub block drafter proposes nothing, so output is plain decoding (the plumbing without a package).
TEST(SpeculativeSession, BlockDrafterStubDecodesPlainly) {
  auto model = tiny_model(11);
  const std::vector<int32_t> prompt = {10, 11, 12};
  SpeculativeOptions spec;
  auto s = make_spec(model, spec, std::make_unique<BlockDrafterStub>(std::vector<int32_t>{0, 1}));
  EXPECT_EQ(spec_generate(*s, prompt, greedy(20)), plain_generate(model, prompt, greedy(20)));
  EXPECT_EQ(s->spec_stats().n_drafted, 0);
  EXPECT_EQ(s->spec_stats().n_passes, 19);  // one pass per token after the first
  EXPECT_FALSE(load_block_drafter("x.pocket", model, 0, nullptr));
}

}  // namespace
}  // namespace pocket

namespace pocket {
namespace {

// A draft model named by path is opened the way draft_open says (mapped or read into memory, as `pocket run
// --no-mmap` and `pocket bench --no-mmap` ask for both packages); either way the output is the plain greedy
// output and drafts are accepted.
TEST(SpeculativeSession, DraftModelFromPathMappedOrRead) {
  testing::TempDir dir;
  auto h = architecture_preset("tiny");
  ASSERT_TRUE(h);
  const std::string path = dir.file("draft.pocket");
  SynthOptions o;
  o.seed = 31;  // the target's own weights: the draft agrees with it, so drafts are accepted
  ASSERT_TRUE(synthesize_model(*h, path, o).is_ok());
  auto target = Model::load(path);
  ASSERT_TRUE(target) << target.status().to_string();
  const std::vector<int32_t> prompt = {5, 17, 42, 99, 7, 5, 17, 42};
  const std::vector<int32_t> want = testing::plain_generate(*target, prompt, greedy(24));
  for (FileLoad load : {FileLoad::kMap, FileLoad::kRead}) {
    SpeculativeOptions spec;
    spec.method = SpecMethod::kDraftModel;
    spec.draft_max = 4;
    spec.draft_model_path = path;
    spec.draft_open.load = load;
    auto s = make_spec(*target, spec);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(testing::spec_generate(*s, prompt, greedy(24)), want) << static_cast<int>(load);
    EXPECT_GT(s->spec_stats().n_accepted, 0) << static_cast<int>(load);
  }
}

}  // namespace
}  // namespace pocket
