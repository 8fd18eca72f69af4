// Parity: the libtorch model and the runtime give the same logits for the same weights (F32, max |diff|
// <= 1e-4) for Llama (both RoPE styles, tied/untied, GQA), Qwen2-style q/k/v bias and Qwen3-style q/k norm.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/thread_pool.h"
#include "model/model.h"
#include "model/transformer.h"
#include "nn/model_facade.h"
#include "run/exporter.h"
#include "train_test_util.h"

namespace pocket::train {
namespace {

using pocket::testing::TempDir;

struct Variant {
  const char* name;
  HParams h;
};

// Names the variant in ctest's test list instead of dumping its bytes.
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

HParams base() {
  HParams h;
  h.name = "parity";
  h.n_vocab = 400;
  h.n_embd = 64;
  h.n_layers = 2;
  h.n_heads = 4;
  h.n_kv_heads = 4;
  h.head_dim = 16;
  h.n_ff = 96;
  h.n_ctx_train = 64;
  h.rope_theta = 10000.0f;
  h.norm_eps = 1e-5f;
  return h;
}

std::vector<Variant> variants() {
  std::vector<Variant> v;
  HParams h = base();
  v.push_back({"llama_interleaved_tied", h});
  h.rope_style = RopeStyle::kNeox;
  h.n_kv_heads = 2;
  h.tied_embeddings = false;
  v.push_back({"llama_neox_gqa_untied", h});
  HParams q2 = h;
  q2.qkv_bias = true;
  q2.rope_theta = 1e6f;
  v.push_back({"qwen2_bias_neox", q2});
  q2.rope_style = RopeStyle::kInterleaved;
  v.push_back({"qwen2_bias_interleaved", q2});
  HParams q3 = base();
  q3.rope_style = RopeStyle::kNeox;
  q3.qk_norm = true;
  q3.n_kv_heads = 2;
  q3.head_dim = 24;  // decoupled from n_embd / n_heads, as Qwen3 does
  q3.norm_eps = 1e-6f;
  v.push_back({"qwen3_qknorm_neox", q3});
  q3.rope_style = RopeStyle::kInterleaved;
  q3.qkv_bias = true;
  v.push_back({"qwen3_qknorm_bias_interleaved", q3});
  return v;
}

// Trainer initialisation, then made harder to match by chance: matrices scaled to std 0.2 so logits are
// O(1), norm weights and biases randomised so every one of them matters.
std::vector<NamedTensor> parity_weights(const HParams& h, uint64_t seed) {
  auto w = init_model_weights(h, seed);
  EXPECT_TRUE(w.has_value()) << w.status().to_string();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> n01(0.0f, 1.0f);
  for (auto& t : *w) {
    const bool vec = t.shape.size() == 1;
    const bool bias = t.name.find(".bias") != std::string::npos;
    for (float& x : t.data) {
      if (!vec) x *= 10.0f;
      else if (bias) x = 0.3f * n01(rng);
      else x = 1.0f + 0.2f * n01(rng);
    }
  }
  return std::move(*w);
}

class Parity : public ::testing::TestWithParam<Variant> {};

TEST_P(Parity, SameWeightsSameLogits) {
  const HParams h = GetParam().h;
  TempDir tmp;
  const auto weights = parity_weights(h, 7);
  auto tok = testing::char_tokenizer();
  ExportOptions eo;
  eo.matrix_type = DType::kF32;
  const std::string path = tmp.file("m.pocket");
  Status st = export_package(h, weights, tok->serialize(), eo, path);
  ASSERT_TRUE(st.is_ok()) << st.to_string();

  std::mt19937 rng(3);
  std::vector<int32_t> tokens(48);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % h.n_vocab);
  auto expect = libtorch_logits(h, weights, tokens);
  ASSERT_TRUE(expect.has_value()) << expect.status().to_string();

  auto model = Model::load(path);
  ASSERT_TRUE(model.has_value()) << model.status().to_string();
  ThreadPool pool(1);
  const auto n = static_cast<int64_t>(tokens.size());
  auto tr = Transformer::create(*model, SessionShape{.n_ctx = 64, .n_batch = 64, .n_threads = 1, .n_logit_rows = n}, &pool);
  ASSERT_TRUE(tr.has_value()) << tr.status().to_string();
  ASSERT_TRUE((*tr)->forward(tokens, /*all_logits=*/true).is_ok());
  double max_diff = 0, max_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* got = (*tr)->logits(i);
    for (int64_t v = 0; v < h.n_vocab; ++v) {
      const float want = (*expect)[static_cast<size_t>(i * h.n_vocab + v)];
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[v] - want)));
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(want)));
    }
  }
  EXPECT_LE(max_diff, 1e-4) << GetParam().name;
  EXPECT_GT(max_abs, 1.0) << "logits should be large enough for the comparison to mean something";
  std::printf("[parity] %s: max |logit diff| %.3g over %lld x %lld logits (max |logit| %.2f)\n", GetParam().name,
              max_diff, (long long)n, (long long)h.n_vocab, max_abs);
}

INSTANTIATE_TEST_SUITE_P(Variants, Parity, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

TEST(Export, RejectsMissingOrMisshapenTensors) {
  HParams h = base();
  auto w = init_model_weights(h, 1);
  ASSERT_TRUE(w.has_value());
  auto tok = testing::char_tokenizer();
  TempDir tmp;
  auto missing = *w;
  missing.pop_back();
  EXPECT_FALSE(export_package(h, missing, tok->serialize(), {}, tmp.file("a.pocket")).is_ok());
  auto bad = *w;
  bad[1].shape = {1, 1};
  EXPECT_FALSE(export_package(h, bad, tok->serialize(), {}, tmp.file("b.pocket")).is_ok());
  // Quantised matrices load in the runtime (the quantiser of src/quant).
  ExportOptions q;
  q.matrix_type = DType::kQ8G32;
  ASSERT_TRUE(export_package(h, *w, tok->serialize(), q, tmp.file("q.pocket")).is_ok());
  auto m = Model::load(tmp.file("q.pocket"));
  EXPECT_TRUE(m.has_value()) << m.status().to_string();
}

}  // namespace
}  // namespace pocket::train
