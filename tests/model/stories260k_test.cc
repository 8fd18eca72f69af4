// stories260K end to end against the reference implementation's outputs (../shared/data/reference).
#include <gtest/gtest.h>

#include <cmath>

#include "generate/session.h"
#include "model/stories_fixture.h"
#include "model/transformer.h"

namespace pocket {
namespace {

using testing::read_ids_line;
using testing::read_text;
using testing::stories260k_package;

TEST(Stories260K, TeacherForcedLogitsMatchReference) {
  POCKET_REQUIRE_SHARED_DATA(data);
  auto model = Model::load(stories260k_package());
  ASSERT_TRUE(model) << model.status().to_string();
  const auto ids = read_ids_line(data + "/reference/stories260K/p1.ids", "ALL_IDS");
  ASSERT_EQ(ids.size(), 65u);
  const auto ref = testing::read_file(data + "/reference/stories260K/p1.logits.f32");
  ASSERT_EQ(ref.size(), 64u * 512u * 4u);
  const float* want = reinterpret_cast<const float*>(ref.data());

  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    SessionShape shape;
    shape.n_ctx = 64;
    shape.n_logit_rows = 64;
    auto tf = Transformer::create(*model, shape, &pool);
    ASSERT_TRUE(tf) << tf.status().to_string();
    // All 64 positions in one batch (prefill path).
    ASSERT_TRUE((*tf)->forward(std::span<const int32_t>(ids.data(), 64), /*all_logits=*/true).is_ok());
    float max_err = 0.0f;
    for (int p = 0; p < 64; ++p) {
      for (int v = 0; v < 512; ++v) max_err = std::max(max_err, std::fabs((*tf)->logits(p)[v] - want[p * 512 + v]));
    }
    EXPECT_LE(max_err, 1e-4f) << "batched, threads=" << threads;

    // The same one token at a time (decode path).
    (*tf)->truncate(0);
    max_err = 0.0f;
    for (int p = 0; p < 64; ++p) {
      ASSERT_TRUE((*tf)->forward(std::span<const int32_t>(ids.data() + p, 1), false).is_ok());
      for (int v = 0; v < 512; ++v) max_err = std::max(max_err, std::fabs((*tf)->logits(0)[v] - want[p * 512 + v]));
    }
    EXPECT_LE(max_err, 1e-4f) << "token by token, threads=" << threads;
  }
}

class Stories260KPrompt : public ::testing::TestWithParam<int> {};

TEST_P(Stories260KPrompt, GreedyTextAndIdsMatchReference) {
  POCKET_REQUIRE_SHARED_DATA(data);
  const std::string base = data + "/reference/stories260K/p" + std::to_string(GetParam());
  auto model = Model::load(stories260k_package());
  ASSERT_TRUE(model) << model.status().to_string();
  const std::string prompt = read_text(base + ".prompt");
  const auto prompt_ids = read_ids_line(base + ".ids", "PROMPT_TOKENS");
  const auto all_ids = read_ids_line(base + ".ids", "ALL_IDS");
  ASSERT_FALSE(prompt_ids.empty());
  ASSERT_EQ(all_ids.size(), 65u);

  std::vector<int32_t> enc;
  EncodeOptions eo;
  eo.add_bos = true;
  ASSERT_TRUE((*model)->tokenizer().encode(prompt, eo, &enc).is_ok());
  EXPECT_EQ(enc, prompt_ids);

  SessionOptions so;
  so.n_threads = 2;
  auto session = Session::create(*model, so);
  ASSERT_TRUE(session) << session.status().to_string();
  GenerateOptions go;
  go.n_predict = static_cast<int32_t>(all_ids.size() - prompt_ids.size());
  std::string text = prompt;
  std::vector<int32_t> got = prompt_ids;
  GenerateStats stats;
  Status st = (*session)->generate(prompt, go, [&](int32_t id, std::string_view piece) {
    if (id >= 0) got.push_back(id);
    text.append(piece);
    return true;
  }, nullptr, &stats);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(got, all_ids);
  EXPECT_EQ(text + "\n", read_text(base + ".txt"));
  EXPECT_EQ(stats.n_prompt, static_cast<int64_t>(prompt_ids.size()));
  EXPECT_EQ(stats.n_generated, go.n_predict);
}

INSTANTIATE_TEST_SUITE_P(Reference, Stories260KPrompt, ::testing::Values(1, 2, 3));

// Greedy decoding over the whole 512-token context: the trace files give run.c's argmax per position for
// the first 64; beyond that the batched and token-by-token paths must agree with each other.
TEST(Stories260K, LongGenerationBatchedEqualsStepwise) {
  POCKET_REQUIRE_SHARED_DATA(data);
  auto model = Model::load(stories260k_package());
  ASSERT_TRUE(model);
  SessionOptions so;
  so.n_threads = 2;
  auto s = Session::create(*model, so);
  ASSERT_TRUE(s);
  GenerateOptions go;
  go.n_predict = 400;
  go.stop_at_eos = false;
  std::vector<int32_t> ids;
  ASSERT_TRUE((*s)->generate("Once upon a time", go, [&](int32_t id, std::string_view) {
    if (id >= 0) ids.push_back(id);
    return true;
  }).is_ok());
  ASSERT_EQ(ids.size(), 400u);
  // Re-evaluate the whole sequence as one batch: each argmax must reproduce the next generated token.
  std::vector<int32_t> seq = (*s)->history();
  ThreadPool pool(1);
  SessionShape shape;
  shape.n_ctx = 512;
  shape.n_batch = 512;
  shape.n_logit_rows = 512;
  auto tf = Transformer::create(*model, shape, &pool);
  ASSERT_TRUE(tf);
  ASSERT_TRUE((*tf)->forward(seq, true).is_ok());
  const size_t n_prompt = seq.size() - (ids.size() - 1);
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    const float* l = (*tf)->logits(static_cast<int64_t>(n_prompt - 1 + i));
    int32_t best = 0;
    for (int v = 1; v < 512; ++v) if (l[v] > l[best]) best = v;
    ASSERT_EQ(best, ids[i]) << "position " << i;
  }
}

}  // namespace
}  // namespace pocket
