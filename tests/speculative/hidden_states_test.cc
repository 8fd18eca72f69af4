// The block drafter's session side: a drafter that names target layers receives, after every target pass,
// the residual stream after those layers for exactly the rows that entered the context (the prompt's rows
// chunk by chunk, then per verify pass the last accepted token and its accepted drafts), in position order,
// and every row equals an independent run of the same tokens one row at a time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/ref/ops_ref.h"
#include "model/transformer.h"
#include "spec_fixture.h"
#include "speculative/block_drafter.h"

namespace pocket {
namespace {

using testing::plain_generate;
using testing::tiny_model;

GenerateOptions greedy(int n) {
  GenerateOptions go;
  go.n_predict = n;
  go.stop_at_eos = false;
  return go;
}

// Records every reported row by context position (a report at pos0 supersedes positions >= pos0) and
// proposes through an inner drafter, so that verify passes accept every length from 0 to k.
class RecordingBlockDrafter final : public BlockDrafter {
 public:
  RecordingBlockDrafter(std::vector<int32_t> layers, std::unique_ptr<Drafter> inner, int fail_at_report = -1)
      : layers_(std::move(layers)), inner_(std::move(inner)), fail_at_(fail_at_report) {}
  const char* name() const override { return "recording-block"; }
  Expected<int32_t> propose(std::span<const int32_t> ctx, std::span<int32_t> out) override {
    return inner_ ? inner_->propose(ctx, out) : Expected<int32_t>(0);
  }
  void observe(int32_t n_drafted, int32_t n_accepted) override {
    if (inner_) inner_->observe(n_drafted, n_accepted);
  }
  std::span<const int32_t> hidden_layers() const override { return layers_; }
  Status observe_hidden(const TargetHiddenStates& hs) override {
    ++reports;
    if (reports == fail_at_) return Status(ErrorCode::kInternal, "[test] drafter failure on purpose");
    if (!std::equal(hs.layers.begin(), hs.layers.end(), layers_.begin(), layers_.end())) layers_match = false;
    if (hs.pos0 != static_cast<int64_t>(rows.size())) in_order = false;  // no gaps, no rewinds in these runs
    if (hs.n_rows < 1 || hs.data == nullptr || hs.layer_stride < hs.n_rows * hs.n_embd) well_formed = false;
    max_rows = std::max(max_rows, hs.n_rows);
    n_embd = hs.n_embd;
    rows.resize(static_cast<size_t>(std::min<int64_t>(hs.pos0, static_cast<int64_t>(rows.size()))));
    for (int64_t r = 0; r < hs.n_rows; ++r) {
      std::vector<float> row;
      for (size_t l = 0; l < layers_.size(); ++l) {
        const float* p = hs.data + static_cast<int64_t>(l) * hs.layer_stride + r * hs.n_embd;
        row.insert(row.end(), p, p + hs.n_embd);
      }
      rows.push_back(std::move(row));
    }
    return Status::ok();
  }
  void reset() override {
    rows.clear();
    if (inner_) inner_->reset();
  }

  std::vector<std::vector<float>> rows;  // by position: the layers' rows, concatenated
  int64_t reports = 0, max_rows = 0, n_embd = 0;
  bool layers_match = true, in_order = true, well_formed = true;

 private:
  std::vector<int32_t> layers_;
  std::unique_ptr<Drafter> inner_;
  int fail_at_;
};

// The chosen layers' outputs for every token of `tokens`, each row computed alone (n_batch = 1).
std::vector<std::vector<float>> one_row_at_a_time(const std::shared_ptr<const Model>& model,
                                                  const std::vector<int32_t>& layers,
                                                  const std::vector<int32_t>& tokens) {
  ThreadPool pool(1);
  SessionShape shape;
  shape.n_batch = 1;
  shape.n_ctx = static_cast<int64_t>(tokens.size());
  shape.hidden_layers = layers;
  auto t = Transformer::create(model, shape, &pool);
  EXPECT_TRUE(t) << t.status().to_string();
  std::vector<std::vector<float>> out;
  if (!t) return out;
  const int64_t d = model->hparams().n_embd;
  for (int32_t id : tokens) {
    Status st = (*t)->forward(std::span<const int32_t>(&id, 1), false);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ((*t)->hidden_rows(), 1);
    std::vector<float> row;
    for (size_t l = 0; l < layers.size(); ++l) {
      const float* p = (*t)->hidden_states() + static_cast<int64_t>(l) * d;
      row.insert(row.end(), p, p + d);
    }
    out.push_back(std::move(row));
  }
  return out;
}

void expect_rows_equal(const std::vector<std::vector<float>>& got,
                       const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t p = 0; p < got.size(); ++p) {
    ASSERT_EQ(got[p].size(), want[p].size()) << "position " << p;
    float worst = 0.0f;
    for (size_t i = 0; i < got[p].size(); ++i) worst = std::max(worst, std::fabs(got[p][i] - want[p][i]));
    // Bit for bit: a row's arithmetic does not depend on the rows computed with it (the property greedy
    // losslessness rests on), so the verify and prefill rows equal the one-row runs exactly.
    EXPECT_EQ(std::memcmp(got[p].data(), want[p].data(), sizeof(float) * got[p].size()), 0)
        << "position " << p << ": largest difference " << worst;
  }
}

// Prompt in three prefill chunks, then speculative decoding with every acceptance length, in two generate
// calls (the second starts by evaluating the token the first emitted last).
void expect_hidden_rows_follow_the_context(DType dtype) {
  auto model = tiny_model(31, dtype);
  const int32_t n_vocab = static_cast<int32_t>(model->hparams().n_vocab);
  const std::vector<int32_t> layers = {0, static_cast<int32_t>(model->hparams().n_layers - 1)};
  std::vector<int32_t> prompt;
  for (int i = 0; i < 37; ++i) prompt.push_back(3 + (i * 17) % (n_vocab - 3));
  const std::vector<int32_t> cont = plain_generate(model, prompt, greedy(40));
  ASSERT_EQ(cont.size(), 40u);

  SessionOptions so;
  so.n_threads = 2;
  so.n_batch = 16;  // 37 prompt tokens: chunks of 16, 16 and 5
  SpeculativeOptions spec;
  spec.draft_max = 5;
  spec.fallback.enabled = false;
  auto inner = std::make_unique<testing::ScriptedDrafter>(prompt, cont, 4, n_vocab);
  auto owned = std::make_unique<RecordingBlockDrafter>(layers, std::move(inner));
  RecordingBlockDrafter* rec = owned.get();
  auto s = SpeculativeSession::create(model, so, spec, std::move(owned));
  ASSERT_TRUE(s) << s.status().to_string();

  std::vector<int32_t> out = testing::spec_generate(**s, prompt, greedy(30));
  std::vector<int32_t> more = testing::spec_generate(**s, {}, greedy(10));
  out.insert(out.end(), more.begin(), more.end());
  EXPECT_EQ(out, cont);  // still lossless
  EXPECT_GT((*s)->spec_stats().n_accepted, 0);

  EXPECT_TRUE(rec->layers_match);
  EXPECT_TRUE(rec->in_order);
  EXPECT_TRUE(rec->well_formed);
  EXPECT_EQ(rec->n_embd, model->hparams().n_embd);
  EXPECT_LE(rec->max_rows, 16);  // a prefill chunk at most
  // Every context position reported exactly once: the prompt and everything emitted but the last token
  // (pending: evaluated by the next call).
  const std::vector<int32_t>& history = (*s)->history();
  ASSERT_EQ(static_cast<int64_t>(history.size()), (*s)->n_past());
  ASSERT_EQ(rec->rows.size(), history.size());
  expect_rows_equal(rec->rows, one_row_at_a_time(model, layers, history));
}

TEST(HiddenStates, DrafterSeesEveryContextRowOnF32) {
  expect_hidden_rows_follow_the_context(DType::kF32);
}

TEST(HiddenStates, DrafterSeesEveryContextRowOnQ4) {
  expect_hidden_rows_follow_the_context(DType::kQ4G32);
}

// Drafting nothing (the stub's behaviour): one row per pass, still every position.
TEST(HiddenStates, PlainPassesReportOneRowEach) {
  auto model = tiny_model(32);
  const std::vector<int32_t> layers = {1};
  const std::vector<int32_t> prompt = {5, 6, 7, 8};
  SpeculativeOptions spec;
  spec.fallback.enabled = false;
  auto owned = std::make_unique<RecordingBlockDrafter>(layers, nullptr);
  RecordingBlockDrafter* rec = owned.get();
  SessionOptions so;
  so.n_threads = 1;
  auto s = SpeculativeSession::create(model, so, spec, std::move(owned));
  ASSERT_TRUE(s) << s.status().to_string();
  EXPECT_EQ(testing::spec_generate(**s, prompt, greedy(12)), plain_generate(model, prompt, greedy(12)));
  EXPECT_EQ(rec->reports, 1 + 11);  // the prompt in one chunk, then one row per pass
  EXPECT_EQ(rec->max_rows, 4);
  EXPECT_TRUE(rec->in_order);
  expect_rows_equal(rec->rows, one_row_at_a_time(model, layers, (*s)->history()));

  // reset() forgets the context: the drafter is reset and reports start again at position 0.
  (*s)->reset();
  EXPECT_TRUE(rec->rows.empty());
  EXPECT_EQ(testing::spec_generate(**s, prompt, greedy(3)).size(), 3u);
  EXPECT_TRUE(rec->in_order);
  EXPECT_EQ(rec->rows.size(), (*s)->history().size());
}

TEST(HiddenStates, BadLayersAreRefused) {
  auto model = tiny_model(33);  // 2 layers
  for (const std::vector<int32_t>& bad : {std::vector<int32_t>{2}, std::vector<int32_t>{-1},
                                          std::vector<int32_t>{1, 0}, std::vector<int32_t>{0, 0}}) {
    SessionOptions so;
    so.n_threads = 1;
    auto s = SpeculativeSession::create(model, so, SpeculativeOptions{},
                                        std::make_unique<RecordingBlockDrafter>(bad, nullptr));
    ASSERT_FALSE(s);
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("hidden-state layers"), std::string::npos) << s.status().message();
  }
}

// Which rows are kept, checked against another path: the residual stream after layer l, RMS-normalised
// with layer l + 1's attention norm, is the input of layer l + 1's q projection; after the last layer,
// normalised with the output norm, the LM head's input (both reported by the activation observer).
class InputRecorder final : public ActivationObserver {
 public:
  explicit InputRecorder(const WeightRef* watch) : watch_(watch) {}
  void observe(const WeightRef& w, const float* x, int64_t rows) override {
    if (w.data == watch_->data) seen.assign(x, x + rows * w.cols);
  }
  std::vector<float> seen;

 private:
  const WeightRef* watch_;
};

TEST(HiddenStates, KeptRowsAreTheLayerOutputs) {
  auto model = tiny_model(36);  // f32: the reference path, RMSNorm by ref::rmsnorm
  const HParams& h = model->hparams();
  ASSERT_EQ(h.n_layers, 2);
  const int64_t d = h.n_embd, rows = 5;
  ThreadPool pool(1);
  SessionShape shape;
  shape.n_ctx = 16;
  shape.n_logit_rows = rows;
  shape.hidden_layers = {0, 1};
  auto t = Transformer::create(model, shape, &pool);
  ASSERT_TRUE(t) << t.status().to_string();
  const ModelWeights& w = model->weights();
  InputRecorder q1(&w.layers[1].wq), head(&w.output);
  const std::vector<int32_t> tokens = {7, 8, 9, 10, 11};
  for (InputRecorder* rec : {&q1, &head}) {
    (*t)->truncate(0);
    (*t)->set_observer(rec);
    ASSERT_TRUE((*t)->forward(tokens, /*all_logits=*/true).is_ok());
    (*t)->set_observer(nullptr);
    ASSERT_EQ(rec->seen.size(), static_cast<size_t>(rows * d));
  }
  ASSERT_EQ((*t)->hidden_rows(), rows);
  std::vector<float> normed(static_cast<size_t>(d));
  for (int64_t r = 0; r < rows; ++r) {
    const float* after0 = (*t)->hidden_states() + r * d;
    const float* after1 = (*t)->hidden_states() + rows * d + r * d;
    ref::rmsnorm(normed.data(), after0, w.layers[1].attn_norm.f32(), d, h.norm_eps);
    EXPECT_EQ(std::memcmp(normed.data(), q1.seen.data() + r * d, sizeof(float) * d), 0) << "row " << r;
    ref::rmsnorm(normed.data(), after1, w.output_norm.f32(), d, h.norm_eps);
    EXPECT_EQ(std::memcmp(normed.data(), head.seen.data() + r * d, sizeof(float) * d), 0) << "row " << r;
  }
}

// The kept rows are in the session's memory plan, allocated once.
TEST(HiddenStates, KeptRowsAreInTheMemoryPlan) {
  auto model = tiny_model(34);
  ThreadPool pool(1);
  SessionShape shape;
  shape.n_batch = 32;
  shape.n_ctx = 64;
  auto plain = Transformer::create(model, shape, &pool);
  shape.hidden_layers = {0, 1};
  auto kept = Transformer::create(model, shape, &pool);
  ASSERT_TRUE(plain && kept);
  EXPECT_EQ((*kept)->plan().activations - (*plain)->plan().activations,
            sizeof(float) * 2u * 32u * static_cast<uint64_t>(model->hparams().n_embd));
  EXPECT_EQ((*plain)->hidden_rows(), 0);
  const std::vector<int32_t> tokens(40, 9);  // 32 + 8: the last chunk's rows are kept
  ASSERT_TRUE((*kept)->forward(tokens, false).is_ok());
  EXPECT_EQ((*kept)->hidden_rows(), 8);
  ASSERT_TRUE((*plain)->forward(tokens, false).is_ok());
  EXPECT_EQ((*plain)->hidden_rows(), 0);
  // A failed forward keeps nothing (and the cache its length).
  const std::vector<int32_t> bad = {9, 1 << 30};
  EXPECT_FALSE((*kept)->forward(bad, false).is_ok());
  EXPECT_EQ((*kept)->hidden_rows(), 0);
  EXPECT_EQ((*kept)->n_past(), 40);
}

// A drafter that fails to take the rows ends the call with its error; the session stays usable.
TEST(HiddenStates, DrafterErrorEndsTheCall) {
  auto model = tiny_model(35);
  const std::vector<int32_t> prompt = {4, 5, 6};
  SpeculativeOptions spec;
  spec.fallback.enabled = false;
  SessionOptions so;
  so.n_threads = 1;
  auto s = SpeculativeSession::create(
      model, so, spec, std::make_unique<RecordingBlockDrafter>(std::vector<int32_t>{0}, nullptr, 3));
  ASSERT_TRUE(s) << s.status().to_string();
  std::vector<int32_t> ids;
  Status st = (*s)->generate_tokens(prompt, greedy(10), [&](int32_t id, std::string_view) {
    ids.push_back(id);
    return true;
  });
  EXPECT_EQ(st.code(), ErrorCode::kInternal);
  EXPECT_NE(st.message().find("on purpose"), std::string::npos);
  EXPECT_EQ(static_cast<int64_t>((*s)->history().size()), (*s)->n_past());
  (*s)->reset();
  EXPECT_EQ(testing::spec_generate(**s, prompt, greedy(5)), plain_generate(model, prompt, greedy(5)));
}

}  // namespace
}  // namespace pocket
