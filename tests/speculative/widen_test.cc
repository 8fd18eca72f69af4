// Function-preserving widening (convert/widen.h, speculative/block_drafter_widen.h): a widened model gives
// the small model's logits over its vocabulary (and exactly 0 for the added tokens), a widened block drafter
// the small drafter's logits, through the runtime's own kernels; shapes that cannot hold the small model and
// mismatched packages are refused.
#include "convert/widen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "convert/quantize_model.h"
#include "generate/chat_prompt.h"
#include "model/transformer.h"
#include "spec_fixture.h"
#include "speculative/block_drafter.h"
#include "speculative/block_drafter_synth.h"
#include "speculative/block_drafter_widen.h"

namespace pocket {
namespace {

using testing::plain_generate;
using testing::spec_generate;
using testing::TempDir;

std::shared_ptr<const Model> load(const std::string& path) {
  auto m = Model::load(path);
  EXPECT_TRUE(m) << m.status().to_string();
  return m ? *m : nullptr;
}

std::shared_ptr<const Model> synth(const HParams& h, const std::string& path, uint64_t seed) {
  SynthOptions o;
  o.dtype = DType::kF32;
  o.seed = seed;
  Status st = synthesize_model(h, path, o);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return load(path);
}

HParams shape(int64_t d, int64_t layers, int64_t heads, int64_t kv, int64_t hd, int64_t ff, int64_t vocab) {
  HParams h;
  h.name = "wide";
  h.n_embd = d;
  h.n_layers = layers;
  h.n_heads = heads;
  h.n_kv_heads = kv;
  h.head_dim = hd;
  h.n_ff = ff;
  h.n_vocab = vocab;
  h.n_ctx_train = 256;
  return h;
}

// All rows' logits of `tokens` in one forward pass, [n][n_vocab].
std::vector<std::vector<float>> logits_of(const std::shared_ptr<const Model>& m,
                                          const std::vector<int32_t>& tokens) {
  ThreadPool pool(1);
  SessionShape s;
  s.n_ctx = static_cast<int64_t>(tokens.size()) + 1;
  s.n_batch = s.n_ctx;
  s.n_logit_rows = s.n_ctx;
  s.kv_f16 = m->package().find("token_embd.weight")->dtype != DType::kF32;
  auto tf = Transformer::create(m, s, &pool);
  EXPECT_TRUE(tf) << tf.status().to_string();
  std::vector<std::vector<float>> out;
  if (!tf) return out;
  Status st = (*tf)->forward(tokens, /*all_logits=*/true);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  const int64_t V = m->hparams().n_vocab;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float* l = (*tf)->logits(static_cast<int64_t>(i));
    out.emplace_back(l, l + V);
  }
  return out;
}

// The small model's logits over its vocabulary against the wide model's: largest difference relative to the
// largest |logit|, and the added tokens' logits all exactly 0.
void expect_same_logits(const std::shared_ptr<const Model>& small, const std::shared_ptr<const Model>& wide,
                        const std::vector<int32_t>& tokens, double rel_tol) {
  const auto a = logits_of(small, tokens), b = logits_of(wide, tokens);
  ASSERT_EQ(a.size(), tokens.size());
  ASSERT_EQ(b.size(), tokens.size());
  const size_t V = a[0].size();
  double scale = 0.0, diff = 0.0;
  size_t nonzero_added = 0;
  for (size_t r = 0; r < a.size(); ++r) {
    for (size_t v = 0; v < V; ++v) {
      scale = std::max(scale, std::fabs(static_cast<double>(a[r][v])));
      diff = std::max(diff, std::fabs(static_cast<double>(a[r][v]) - b[r][v]));
    }
    for (size_t v = V; v < b[r].size(); ++v) nonzero_added += b[r][v] != 0.0f;
  }
  EXPECT_GT(scale, 0.1);
  EXPECT_LE(diff, rel_tol * scale) << "max |diff| " << diff << " of max |logit| " << scale;
  EXPECT_EQ(nonzero_added, 0u) << "added tokens must have logit exactly 0";
}

std::vector<int32_t> random_tokens(int n, int32_t vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab)));
  return t;
}

TEST(Widen, LayerMapSpreadsTheSmallLayers) {
  auto s = architecture_preset("tiny");
  ASSERT_TRUE(s);
  s->n_layers = 4;
  auto w = Widening::create(*s, shape(64, 20, 4, 2, 16, 96, 300));
  ASSERT_TRUE(w) << w.status().to_string();
  EXPECT_EQ(w->layer_map(), (std::vector<int32_t>{4, 9, 14, 19}));
  EXPECT_FLOAT_EQ(w->wide().norm_eps, s->norm_eps);  // same width: the same eps
  auto w2 = Widening::create(*s, shape(128, 4, 4, 2, 16, 96, 300));
  ASSERT_TRUE(w2);
  EXPECT_EQ(w2->layer_map(), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_FLOAT_EQ(w2->wide().norm_eps, s->norm_eps * 0.5f);
  EXPECT_EQ(w2->wide().name, s->name + "@wide");
}

// Random f32 models: the untied interleaved-RoPE preset and a tied NeoX variant, into shapes that widen every
// dimension (a width that is not a multiple of 32, head_dim x2 and x1, more heads per KV head).
TEST(Widen, SameLogitsOnRandomModels) {
  TempDir dir;
  struct Case {
    bool tied;
    RopeStyle rope;
    HParams to;
  };
  const Case cases[] = {
      {false, RopeStyle::kInterleaved, shape(100, 5, 6, 3, 32, 150, 350)},
      {true, RopeStyle::kNeox, shape(128, 3, 8, 2, 16, 96, 300)},
      {true, RopeStyle::kInterleaved, shape(96, 2, 4, 2, 48, 97, 301)},
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(i));
    auto h = architecture_preset("tiny");
    ASSERT_TRUE(h);
    h->tied_embeddings = c.tied;
    h->rope_style = c.rope;
    auto small = synth(*h, dir.file("s" + std::to_string(i) + ".pocket"), 40 + static_cast<uint64_t>(i));
    ASSERT_TRUE(small);
    WidenOptions o;
    o.seed = 3;
    const std::string wp = dir.file("w" + std::to_string(i) + ".pocket");
    ASSERT_TRUE(write_widened_model(*small, c.to, o, wp).is_ok());
    auto wide = load(wp);
    ASSERT_TRUE(wide);
    EXPECT_EQ(wide->hparams().n_embd, c.to.n_embd);
    EXPECT_EQ(wide->hparams().n_vocab, std::max<int64_t>(h->n_vocab, c.to.n_vocab));
    expect_same_logits(small, wide, random_tokens(40, static_cast<int32_t>(h->n_vocab), 9 + i), 1e-4);
    // Greedy decoding through the session: the same tokens.
    GenerateOptions go;
    go.n_predict = 24;
    go.stop_at_eos = false;
    const auto prompt = random_tokens(6, static_cast<int32_t>(h->n_vocab), 77 + i);
    EXPECT_EQ(plain_generate(small, prompt, go), plain_generate(wide, prompt, go));
    ++i;
  }
}

// The shipped model (a trained 4-bit package) widened to f32 against itself converted to f32: its function
// survives the construction on real weights, whose residual stream and attention are far from random.
TEST(Widen, ShippedModelKeepsItsLogits) {
  const std::string root =
      std::filesystem::absolute(__FILE__).parent_path().parent_path().parent_path().string();
  const std::string nano = root + "/models/pocket-nano-q4.pocket";
  if (!std::filesystem::exists(nano)) GTEST_SKIP() << "models/pocket-nano-q4.pocket is absent";
  TempDir dir;
  QuantizePolicy p;
  p.matrices = DType::kF32;
  ASSERT_TRUE(quantize_model(nano, dir.file("nano-f32.pocket"), p).is_ok());
  auto small = load(dir.file("nano-f32.pocket"));
  ASSERT_TRUE(small);
  WidenOptions o;
  ASSERT_TRUE(
      write_widened_model(*small, shape(256, 6, 8, 2, 64, 640, 8256), o, dir.file("wide.pocket")).is_ok());
  auto wide = load(dir.file("wide.pocket"));
  ASSERT_TRUE(wide);
  auto ids = render_chat_ids(
      *small, std::vector<ChatMessage>{{"user", "Extract the city: I flew to Lisbon on Monday."}},
      /*add_generation_prompt=*/true);
  ASSERT_TRUE(ids) << ids.status().to_string();
  expect_same_logits(small, wide, *ids, 1e-4);
}

// A random f32 drafter for a random f32 target, both widened: the same block logits from the same context
// (the wide hidden states are the small ones followed by zeros), the added tokens at exactly 0.
TEST(Widen, DrafterKeepsItsBlockLogits) {
  TempDir dir;
  auto h = architecture_preset("tiny");
  ASSERT_TRUE(h);
  h->tied_embeddings = true;
  h->rope_style = RopeStyle::kNeox;
  h->n_layers = 3;
  auto small = synth(*h, dir.file("s.pocket"), 5);
  ASSERT_TRUE(small);
  BlockDrafterSynthOptions so;
  so.n_layers = 2;
  so.target_layers = {0, 2};
  so.dtype = DType::kF32;
  ASSERT_TRUE(write_random_block_drafter(*small, so, dir.file("d.pocket")).is_ok());
  WidenOptions o;
  const HParams to = shape(100, 7, 8, 2, 32, 130, 320);
  ASSERT_TRUE(write_widened_model(*small, to, o, dir.file("w.pocket")).is_ok());
  auto wide = load(dir.file("w.pocket"));
  ASSERT_TRUE(wide);
  auto dm = BlockDrafterModel::load(dir.file("d.pocket"));
  ASSERT_TRUE(dm) << dm.status().to_string();
  ASSERT_TRUE(write_widened_block_drafter(*small, **dm, *wide, o, dir.file("wd.pocket")).is_ok());
  auto wdm = BlockDrafterModel::load(dir.file("wd.pocket"));
  ASSERT_TRUE(wdm) << wdm.status().to_string();
  const auto wmap = Widening::create(*h, to)->layer_map();
  EXPECT_EQ((*wdm)->config().target_layers, (std::vector<int32_t>{wmap[0], wmap[2]}));
  EXPECT_EQ((*wdm)->config().blocks.n_embd, 100);
  EXPECT_EQ((*wdm)->config().blocks.n_ff, 130);

  auto ds = PackagedBlockDrafter::create(small, *dm, 128, nullptr);
  ASSERT_TRUE(ds) << ds.status().to_string();
  auto dw = PackagedBlockDrafter::create(wide, *wdm, 128, nullptr);
  ASSERT_TRUE(dw) << dw.status().to_string();
  // 30 context positions of random hidden states, reported layer-major; the wide copy padded with zeros.
  const int64_t n = 30, d = h->n_embd, D = to.n_embd;
  Rng rng(11);
  std::vector<float> hs(static_cast<size_t>(2 * n * d)), hw(static_cast<size_t>(2 * n * D), 0.0f);
  for (int64_t t = 0; t < 2; ++t) {
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t i = 0; i < d; ++i) {
        const float v = static_cast<float>((rng.uniform() - 0.5) * 6.0);
        hs[static_cast<size_t>((t * n + r) * d + i)] = v;
        hw[static_cast<size_t>((t * n + r) * D + i)] = v;
      }
    }
  }
  auto report = [&](PackagedBlockDrafter& dr, const std::vector<float>& buf, int64_t width) {
    TargetHiddenStates s;
    s.layers = dr.hidden_layers();
    s.data = buf.data();
    s.layer_stride = n * width;
    s.pos0 = 0;
    s.n_rows = n;
    s.n_embd = width;
    return dr.observe_hidden(s);
  };
  ASSERT_TRUE(report(**ds, hs, d).is_ok());
  ASSERT_TRUE(report(**dw, hw, D).is_ok());
  std::vector<int32_t> context(static_cast<size_t>(n + 1), 7);
  context.back() = 42;
  std::vector<int32_t> out_s(8, -1), out_w(8, -1);
  ASSERT_EQ(*(*ds)->propose(context, out_s), 8);
  ASSERT_EQ(*(*dw)->propose(context, out_w), 8);
  const auto ls = (*ds)->last_logits(), lw = (*dw)->last_logits();
  const size_t V = static_cast<size_t>(h->n_vocab), Vw = static_cast<size_t>(wide->hparams().n_vocab);
  double scale = 0.0, diff = 0.0;
  size_t nonzero_added = 0;
  for (size_t r = 0; r < 8; ++r) {
    for (size_t v = 0; v < V; ++v) {
      scale = std::max(scale, std::fabs(static_cast<double>(ls[r * V + v])));
      diff = std::max(diff, std::fabs(static_cast<double>(ls[r * V + v]) - lw[r * Vw + v]));
    }
    for (size_t v = V; v < Vw; ++v) nonzero_added += lw[r * Vw + v] != 0.0f;
  }
  // Both drafters keep K/V in f16 (block_drafter_test.cc: 2e-3 of the largest |logit| against a double
  // reference); the two f16 caches round the same values, so they agree far closer.
  EXPECT_LE(diff, 2e-4 * scale) << "max |diff| " << diff << " of max |logit| " << scale;
  EXPECT_EQ(nonzero_added, 0u);
  EXPECT_EQ(out_s, out_w);
}

// The shipped pair widened (4-bit, as pocket synth --widen writes it): lossless through the session, and the
// widened drafter still drafts as well on the held-out task prompts.
TEST(Widen, ShippedDrafterAcceptsAsWellWidened) {
  const std::string root =
      std::filesystem::absolute(__FILE__).parent_path().parent_path().parent_path().string();
  const std::string nano = root + "/models/pocket-nano-q4.pocket",
                    drafter = root + "/models/pocket-nano-drafter.pocket";
  if (!std::filesystem::exists(nano) || !std::filesystem::exists(drafter)) {
    GTEST_SKIP() << "models/pocket-nano-q4.pocket or models/pocket-nano-drafter.pocket is absent";
  }
  TempDir dir;
  auto small = load(nano);
  ASSERT_TRUE(small);
  auto dm = BlockDrafterModel::load(drafter);
  ASSERT_TRUE(dm) << dm.status().to_string();
  WidenOptions o;
  o.dtype = DType::kQ4G32;
  ASSERT_TRUE(
      write_widened_model(*small, shape(256, 6, 8, 2, 64, 640, 8256), o, dir.file("w.pocket")).is_ok());
  auto wide = load(dir.file("w.pocket"));
  ASSERT_TRUE(wide);
  ASSERT_TRUE(write_widened_block_drafter(*small, **dm, *wide, o, dir.file("wd.pocket")).is_ok());

  std::ifstream in(root + "/tests/speculative/data/task_prompts.jsonl");
  ASSERT_TRUE(in);
  auto session = [&](std::shared_ptr<const Model> m, const std::string& d) {
    SessionOptions so;
    so.n_threads = 1;
    so.n_ctx = 512;
    SpeculativeOptions spec;
    spec.method = SpecMethod::kBlock;
    spec.draft_model_path = d;
    spec.draft_max = 8;
    spec.fallback.enabled = false;
    auto s = SpeculativeSession::create(std::move(m), so, spec);
    EXPECT_TRUE(s) << s.status().to_string();
    return s ? std::move(*s) : nullptr;
  };
  auto ss = session(small, drafter), sw = session(wide, dir.file("wd.pocket"));
  ASSERT_TRUE(ss && sw);
  int64_t passes_s = 0, acc_s = 0, passes_w = 0, acc_w = 0, same_as_small = 0, n = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    std::vector<ChatMessage> chat;
    for (const auto& m : j.at("messages"))
      chat.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
    auto ids = render_chat_ids(*small, chat, true);
    ASSERT_TRUE(ids);
    GenerateOptions go;
    go.n_predict = 128;
    const auto plain_w = plain_generate(wide, *ids, go, 512);
    ss->reset();
    sw->reset();
    const auto out_s = spec_generate(*ss, *ids, go);
    EXPECT_EQ(spec_generate(*sw, *ids, go), plain_w) << "lossless on the widened target";
    same_as_small += out_s == plain_w;
    ++n;
    passes_s += ss->spec_stats().n_passes;
    acc_s += ss->spec_stats().n_accepted;
    passes_w += sw->spec_stats().n_passes;
    acc_w += sw->spec_stats().n_accepted;
  }
  ASSERT_EQ(n, 40);
  const double tau_s = static_cast<double>(passes_s + acc_s) / static_cast<double>(passes_s);
  const double tau_w = static_cast<double>(passes_w + acc_w) / static_cast<double>(passes_w);
  std::printf(
      "widened pair: %lld of 40 outputs equal the small model's; tokens per pass %.2f (small pair %.2f)\n",
      static_cast<long long>(same_as_small), tau_w, tau_s);
  // Re-quantising the widened q rows (scaled by sqrt(head_dim ratio)) and the norms' rescaled rounding move a
  // few near-ties in 4 bits, and one changed token changes the rest of a greedy output.
  EXPECT_GE(same_as_small, 30);  // 36 measured
  EXPECT_GT(tau_w, 0.9 * tau_s);
}

TEST(Widen, RefusesShapesThatCannotHoldTheModel) {
  auto s = architecture_preset("tiny");  // 64 wide, 2 layers, 4 heads / 2 KV, head_dim 16, ff 96, vocab 300
  ASSERT_TRUE(s);
  auto refused = [&](const HParams& to, const std::string& what) {
    auto w = Widening::create(*s, to);
    ASSERT_FALSE(w) << what;
    EXPECT_NE(w.status().message().find(what), std::string::npos) << w.status().message();
  };
  refused(shape(32, 2, 4, 2, 16, 96, 300), "n_embd");
  refused(shape(64, 1, 4, 2, 16, 96, 300), "n_layers");
  refused(shape(64, 2, 4, 2, 16, 48, 300), "n_ff");
  refused(shape(64, 2, 4, 2, 24, 96, 300), "head_dim");
  refused(shape(64, 2, 4, 4, 16, 96, 300), "heads per KV head");  // 1 per KV head < 2
  refused(shape(64, 2, 2, 1, 16, 96, 300), "n_heads");
  HParams biased = *s;
  biased.qkv_bias = true;
  auto w = Widening::create(biased, shape(64, 2, 4, 2, 16, 96, 300));
  ASSERT_FALSE(w);
  EXPECT_NE(w.status().message().find("biases"), std::string::npos) << w.status().message();
}

TEST(Widen, DrafterRefusesMismatchedPackages) {
  TempDir dir;
  auto h = architecture_preset("tiny");
  ASSERT_TRUE(h);
  auto small = synth(*h, dir.file("s.pocket"), 5);
  auto other = synth(*h, dir.file("o.pocket"), 6);
  ASSERT_TRUE(small && other);
  BlockDrafterSynthOptions so;
  so.target_layers = {1};
  so.dtype = DType::kF32;
  ASSERT_TRUE(write_random_block_drafter(*small, so, dir.file("d.pocket")).is_ok());
  auto dm = BlockDrafterModel::load(dir.file("d.pocket"));
  ASSERT_TRUE(dm);
  WidenOptions o;
  ASSERT_TRUE(write_widened_model(*small, shape(96, 3, 4, 2, 16, 96, 300), o, dir.file("w.pocket")).is_ok());
  auto wide = load(dir.file("w.pocket"));
  ASSERT_TRUE(wide);
  // A drafter made for another model.
  Status st = write_widened_block_drafter(*other, **dm, *wide, o, dir.file("x.pocket"));
  EXPECT_FALSE(st.is_ok());
  // Another model of the small model's own shape as the "wide" target (a valid shape, other weights).
  st = write_widened_block_drafter(*small, **dm, *other, o, dir.file("x.pocket"));
  EXPECT_FALSE(st.is_ok());
  // A wide target of the right shape that is not this model's widening (another model's).
  ASSERT_TRUE(write_widened_model(*other, shape(96, 3, 4, 2, 16, 96, 300), o, dir.file("ow.pocket")).is_ok());
  auto other_wide = load(dir.file("ow.pocket"));
  ASSERT_TRUE(other_wide);
  st = write_widened_block_drafter(*small, **dm, *other_wide, o, dir.file("x.pocket"));
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("is not a widening"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.pocket")));
}

}  // namespace
}  // namespace pocket
