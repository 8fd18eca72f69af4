// Parity: the libtorch model and the runtime give the same logits for the same weights (F32, max |diff|
// <= 1e-4) for Llama (both RoPE styles, tied/untied, GQA), Qwen2-style q/k/v bias and Qwen3-style q/k norm.
// And, for the same variants, the libtorch model's packed SFT rows (segments, restarted positions) give
// every example the logits it has alone (max |diff| <= 2e-5).
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

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

// A row laid out as the SFT loader lays it out, [A, pad, B, pad x 5], with one segment per example and per
// stretch of padding and positions restarting at each: A's and B's logits in the row equal their logits
// alone, B's computed from position 0. Tolerance 2e-5 on logits of magnitude up to ~8: the packed and the
// lone pass do the same arithmetic on matrices of different shapes (48 rows vs 19 or 23), so only BLAS's
// summation order differs, which moved logits by up to 1.2e-5 (~1.6e-6 of the largest) across the variants;
// a leak across examples moves them by ~8.
TEST_P(Parity, PackedExamplesMatchEachExampleAlone) {
  const HParams h = GetParam().h;
  const auto weights = parity_weights(h, 11);
  std::mt19937 rng(5);
  auto random_tokens = [&](size_t n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % h.n_vocab);
    return t;
  };
  const std::vector<int32_t> a = random_tokens(19), b = random_tokens(23);
  std::vector<int32_t> row, pos, seg;
  auto append = [&](const std::vector<int32_t>& toks, int32_t segment) {
    for (size_t i = 0; i < toks.size(); ++i) {
      row.push_back(toks[i]);
      pos.push_back(static_cast<int32_t>(i));
      seg.push_back(segment);
    }
  };
  append(a, 0);
  append({0}, 1);
  append(b, 2);
  append({0, 0, 0, 0, 0}, 3);
  const size_t V = static_cast<size_t>(h.n_vocab), b_at = a.size() + 1;

  auto packed = libtorch_logits_packed(h, weights, row, pos, seg);
  ASSERT_TRUE(packed.has_value()) << packed.status().to_string();
  auto alone_a = libtorch_logits(h, weights, a);
  auto alone_b = libtorch_logits(h, weights, b);
  ASSERT_TRUE(alone_a.has_value() && alone_b.has_value());
  const double diff_a = max_abs_diff(packed->data(), alone_a->data(), a.size() * V);
  const double diff_b = max_abs_diff(packed->data() + b_at * V, alone_b->data(), b.size() * V);
  EXPECT_LE(diff_a, 2e-5) << GetParam().name;
  EXPECT_LE(diff_b, 2e-5) << GetParam().name;
  for (float x : *packed) ASSERT_TRUE(std::isfinite(x)) << "padding rows must not produce NaN or Inf";

  // The check can fail: with the plain causal mask over the row (what SFT did before), B reads A and the
  // padding, and its logits move by far more than the tolerance.
  auto causal = libtorch_logits(h, weights, row);
  ASSERT_TRUE(causal.has_value());
  const double diff_causal = max_abs_diff(causal->data() + b_at * V, alone_b->data(), b.size() * V);
  EXPECT_GT(diff_causal, 1.0);
  double max_abs = 0;
  for (float x : *packed) max_abs = std::max(max_abs, static_cast<double>(std::fabs(x)));
  std::printf("[packed] %s: max |logit diff| packed vs alone: A %.3g, B %.3g (plain causal row: B %.3g), max |logit| %.2f\n",
              GetParam().name, diff_a, diff_b, diff_causal, max_abs);

  // Spans that do not match the tokens, and negative positions, are errors, not crashes.
  EXPECT_FALSE(libtorch_logits_packed(h, weights, row, std::span<const int32_t>(pos).first(3), seg).has_value());
  EXPECT_FALSE(libtorch_logits_packed(h, weights, row, pos, std::span<const int32_t>(seg).first(3)).has_value());
  std::vector<int32_t> negative = pos;
  negative[2] = -1;
  EXPECT_FALSE(libtorch_logits_packed(h, weights, row, negative, seg).has_value());
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
