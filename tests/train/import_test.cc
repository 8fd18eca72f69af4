// pocket-train import: a package -> a training checkpoint. An F32 package comes back bit for bit (weights,
// tokenizer, hyper-parameters) and its re-export gives the runtime the same logits; a Q4 package comes back
// as exactly the runtime's own dequantisation and re-exports at Q4 to the same tensor bytes; the checkpoint
// is one that sft --init fine-tunes and the CLI imports and exports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/thread_pool.h"
#include "format/package.h"
#include "model/model.h"
#include "model/transformer.h"
#include "nn/checkpoint_import.h"
#include "nn/model_facade.h"
#include "nn/trainer.h"
#include "quant/quantize.h"
#include "run/exporter.h"
#include "run/grow.h"
#include "train_test_util.h"

namespace pocket::train {
namespace {

using pocket::testing::TempDir;

// Small, but every matrix has a multiple of 8 rows so Q4 export uses the interleaved q4_g32r8 layout the
// shipped model has; untied so output.weight is a tensor of its own.
HParams small_hparams(bool tied) {
  HParams h;
  h.name = "import-test";
  h.n_vocab = 360;  // >= the character tokenizer's 357 tokens, a multiple of 8
  h.n_embd = 64;
  h.n_layers = 2;
  h.n_heads = 4;
  h.n_kv_heads = 2;
  h.head_dim = 16;
  h.n_ff = 96;
  h.n_ctx_train = 128;
  h.rope_style = RopeStyle::kNeox;
  h.tied_embeddings = tied;
  return h;
}

// Trainer initialisation with matrices scaled to std 0.2 and randomised norms, so logits are O(1) and every
// tensor matters to them.
std::vector<NamedTensor> random_weights(const HParams& h, uint64_t seed) {
  auto w = init_model_weights(h, seed);
  EXPECT_TRUE(w.has_value()) << w.status().to_string();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> n01(0.0f, 1.0f);
  for (auto& t : *w) {
    for (float& x : t.data) x = t.shape.size() == 1 ? 1.0f + 0.2f * n01(rng) : 10.0f * x;
  }
  return std::move(*w);
}

std::vector<float> runtime_logits(const std::string& path, const std::vector<int32_t>& tokens) {
  auto model = Model::load(path);
  EXPECT_TRUE(model.has_value()) << model.status().to_string();
  if (!model) return {};
  ThreadPool pool(1);
  const auto n = static_cast<int64_t>(tokens.size());
  auto tr = Transformer::create(*model, SessionShape{.n_ctx = 64, .n_batch = 64, .n_threads = 1, .n_logit_rows = n},
                                &pool);
  EXPECT_TRUE(tr.has_value()) << tr.status().to_string();
  if (!tr) return {};
  EXPECT_TRUE((*tr)->forward(tokens, /*all_logits=*/true).is_ok());
  const int64_t nv = (*model)->hparams().n_vocab;
  std::vector<float> out(static_cast<size_t>(n * nv));
  for (int64_t i = 0; i < n; ++i) std::memcpy(out.data() + i * nv, (*tr)->logits(i), static_cast<size_t>(nv) * 4);
  return out;
}

std::string export_to(const TempDir& tmp, const std::string& name, const HParams& h,
                      const std::vector<NamedTensor>& w, const std::vector<uint8_t>& tok, DType type) {
  ExportOptions eo;
  eo.matrix_type = type;
  const std::string path = tmp.file(name);
  Status st = export_package(h, w, tok, eo, path);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return path;
}

// Three SFT steps of seq 128 x 4 rows from checkpoint `init` on `shard` into `out` (one thread, quiet).
TrainConfig three_sft_steps(const std::string& init, const std::string& shard, const std::string& out) {
  TrainConfig cfg;
  cfg.stage = Stage::kSft;
  cfg.init_from = init;
  cfg.data = {shard};
  cfg.out_dir = out;
  cfg.seq_len = 128;
  cfg.micro_batch = 4;
  cfg.max_steps = 3;
  cfg.warmup_steps = 1;
  cfg.eval_interval = 0;
  cfg.ckpt_interval = 100;
  cfg.threads = 1;
  cfg.plot = false;
  cfg.quiet = true;
  return cfg;
}

TEST(Import, F32PackageRoundTripsExactly) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    TempDir tmp;
    const HParams h = small_hparams(tied);
    const auto w = random_weights(h, 11);
    const auto tok = testing::char_tokenizer()->serialize();
    const std::string a = export_to(tmp, "a.pocket", h, w, tok, DType::kF32);

    auto s = import_checkpoint(a, tmp.file("run"), 1);
    ASSERT_TRUE(s.has_value()) << s.status().to_string();
    EXPECT_EQ(s->source_type, "f32");
    for (const char* f : {"model.pt", "optim.pt", "rng.pt", "meta.json", "tokenizer.bin"}) {
      EXPECT_TRUE(std::filesystem::exists(s->checkpoint + "/" + f)) << f;
    }
    // Read back the way export, eval and sft --init read a checkpoint.
    auto c = load_checkpoint(tmp.file("run"));
    ASSERT_TRUE(c.has_value()) << c.status().to_string();
    EXPECT_EQ(c->meta.step, 0);
    EXPECT_EQ(c->meta.hparams.to_json(), h.to_json());
    EXPECT_EQ(c->meta.config.stage, Stage::kSft);
    EXPECT_EQ(c->meta.config.chat_template, "chatml");
    EXPECT_EQ(c->tokenizer, tok) << "tokenizer.bin must be the package's tokenizer section, byte for byte";
    ASSERT_EQ(c->weights.size(), w.size());
    for (const auto& want : w) {
      auto it = std::find_if(c->weights.begin(), c->weights.end(), [&](const NamedTensor& t) { return t.name == want.name; });
      ASSERT_NE(it, c->weights.end()) << want.name;
      EXPECT_EQ(it->shape, want.shape) << want.name;
      EXPECT_TRUE(it->data == want.data) << want.name << " differs after import";
    }

    const std::string b = export_to(tmp, "b.pocket", c->meta.hparams, c->weights, c->tokenizer, DType::kF32);
    std::vector<int32_t> tokens(40);
    std::mt19937 rng(3);
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % h.n_vocab);
    const auto la = runtime_logits(a, tokens), lb = runtime_logits(b, tokens);
    ASSERT_EQ(la.size(), tokens.size() * static_cast<size_t>(h.n_vocab));
    EXPECT_TRUE(la == lb) << "the re-exported package must give the runtime identical logits";
  }
}

// The 8-row interleaved Q4 layout: the imported weights equal a plain row-by-row dequantize_row of the
// package's bytes, and quantising them again reproduces those bytes (each q4_g32 block's scale comes from its
// largest-magnitude value, which dequantises to exactly -8 * d, so requantising finds the same d and codes).
TEST(Import, Q4PackageGivesTheRuntimesDequantisation) {
  TempDir tmp;
  const HParams h = small_hparams(/*tied=*/true);
  const auto tok = testing::char_tokenizer()->serialize();
  const std::string q = export_to(tmp, "q.pocket", h, random_weights(h, 5), tok, DType::kQ4G32);
  auto s = import_checkpoint(q, tmp.file("run"), 1);
  ASSERT_TRUE(s.has_value()) << s.status().to_string();
  EXPECT_EQ(s->source_type, "q4_g32");
  auto c = load_checkpoint(tmp.file("run"));
  ASSERT_TRUE(c.has_value()) << c.status().to_string();

  auto pkg = Package::open(q);
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  int n_r8 = 0;
  for (const NamedTensor& t : c->weights) {
    const TensorInfo* info = pkg->find(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    n_r8 += info->dtype == DType::kQ4G32R8;
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1, cols = t.shape.back();
    std::vector<float> want(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(quant::dequantize_row(info->dtype, std::span<const uint8_t>(info->data, info->size), rows, cols, r,
                                        want.data() + r * cols).is_ok());
    }
    EXPECT_TRUE(t.data == want) << t.name << " is not the runtime's dequantisation";
  }
  EXPECT_EQ(n_r8, 1 + 7 * h.n_layers) << "every matrix should be stored as q4_g32r8";

  const std::string q2 = export_to(tmp, "q2.pocket", c->meta.hparams, c->weights, c->tokenizer, DType::kQ4G32);
  auto pkg2 = Package::open(q2);
  ASSERT_TRUE(pkg2.has_value()) << pkg2.status().to_string();
  for (const TensorInfo& t : pkg->tensors()) {
    const TensorInfo* t2 = pkg2->find(t.name);
    ASSERT_NE(t2, nullptr) << t.name;
    ASSERT_EQ(t2->size, t.size) << t.name;
    EXPECT_EQ(t2->dtype, t.dtype) << t.name;
    EXPECT_EQ(std::memcmp(t2->data, t.data, t.size), 0) << t.name << ": Q4 -> import -> Q4 must be lossless";
  }
}

TEST(Import, CheckpointFineTunesAndTheCliImportsAndExports) {
  TempDir tmp;
  const std::string shard = testing::write_chat_data(tmp.file("."), 64);
  const HParams h = small_hparams(/*tied=*/true);
  const auto tok = testing::char_tokenizer()->serialize();
  const std::string a = export_to(tmp, "a.pocket", h, random_weights(h, 2), tok, DType::kQ4G32);

  // The command line, as docs/pocket-nano.md runs it; a second import into the same directory is refused.
  const std::string bin = POCKET_TRAIN_BIN;
  std::string out;
  ASSERT_EQ(testing::run_command(bin + " import -m " + a + " --out " + tmp.file("run") + " 2>&1", &out), 0) << out;
  EXPECT_NE(testing::run_command(bin + " import -m " + a + " --out " + tmp.file("run") + " 2>&1", &out), 0);
  EXPECT_NE(out.find("already holds a checkpoint"), std::string::npos) << out;
  EXPECT_NE(testing::run_command(bin + " import -m " + tmp.file("missing.pocket") + " --out " + tmp.file("r2") +
                                     " 2>&1", &out), 0);

  auto r = run_training(three_sft_steps(tmp.file("run"), shard, tmp.file("sft")));
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  ASSERT_EQ(r->steps.size(), 3u);
  EXPECT_TRUE(std::isfinite(r->steps.front().loss));

  ASSERT_EQ(testing::run_command(bin + " export --ckpt " + tmp.file("sft") + " -o " + tmp.file("b.pocket") +
                                     " --type q4_g32 2>&1", &out), 0) << out;
  auto m = Model::load(tmp.file("b.pocket"));
  ASSERT_TRUE(m.has_value()) << m.status().to_string();
  EXPECT_EQ((*m)->config().chat_template, "chatml");
  EXPECT_EQ((*m)->weight_type_label(), "q4_g32");
}

// Depth growth keeps the function: the grown checkpoint (2 -> 5 layers, uneven on purpose) gives the same
// libtorch and runtime logits as its source, layer j is a copy of source layer floor(j * 2 / 5) with the
// residual outputs of every copy after the first zeroed, it fine-tunes, and bad requests are refused.
TEST(Grow, DeeperCheckpointComputesTheSameFunctionAndTrains) {
  TempDir tmp;
  const HParams h = small_hparams(/*tied=*/true);
  const auto w = random_weights(h, 21);
  const auto tok = testing::char_tokenizer()->serialize();
  const std::string a = export_to(tmp, "a.pocket", h, w, tok, DType::kF32);
  ASSERT_TRUE(import_checkpoint(a, tmp.file("src"), 1).has_value());

  const std::string bin = POCKET_TRAIN_BIN;
  std::string out;
  ASSERT_EQ(testing::run_command(bin + " grow --from " + tmp.file("src") + " --out " + tmp.file("big") +
                                     " --layers 5 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("5 layers"), std::string::npos) << out;
  auto c = load_checkpoint(tmp.file("big"));
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  EXPECT_EQ(c->meta.hparams.n_layers, 5);
  EXPECT_EQ(c->meta.config.chat_template, "chatml");
  EXPECT_EQ(c->tokenizer, tok);
  const int64_t per_layer = static_cast<int64_t>(w.size() - 2) / h.n_layers;  // token_embd, output_norm
  ASSERT_EQ(static_cast<int64_t>(c->weights.size()), 2 + 5 * per_layer);

  const std::vector<int64_t> want_src = {0, 0, 0, 1, 1};
  for (int64_t j = 0; j < 5; ++j) {
    const bool first_copy = j == 0 || want_src[j] != want_src[j - 1];
    for (const NamedTensor& t : c->weights) {
      const std::string prefix = "blk." + std::to_string(j) + ".";
      if (t.name.rfind(prefix, 0) != 0) continue;
      const std::string src_name = "blk." + std::to_string(want_src[j]) + "." + t.name.substr(prefix.size());
      auto it = std::find_if(w.begin(), w.end(), [&](const NamedTensor& x) { return x.name == src_name; });
      ASSERT_NE(it, w.end()) << src_name;
      const bool zeroed = !first_copy && (t.name.ends_with("attn_output.weight") || t.name.ends_with("ffn_down.weight"));
      if (zeroed) {
        EXPECT_TRUE(std::all_of(t.data.begin(), t.data.end(), [](float x) { return x == 0.0f; })) << t.name;
      } else {
        EXPECT_TRUE(t.data == it->data) << t.name << " should be " << src_name;
      }
    }
  }

  std::vector<int32_t> tokens(40);
  std::mt19937 rng(9);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % h.n_vocab);
  auto ls = libtorch_logits(h, w, tokens);
  auto lg = libtorch_logits(c->meta.hparams, c->weights, tokens);
  ASSERT_TRUE(ls.has_value() && lg.has_value());
  EXPECT_TRUE(*ls == *lg) << "an identity block adds exactly 0 to the residual stream";
  const std::string b = export_to(tmp, "b.pocket", c->meta.hparams, c->weights, c->tokenizer, DType::kF32);
  const auto ra = runtime_logits(a, tokens), rb = runtime_logits(b, tokens);
  ASSERT_EQ(ra.size(), rb.size());
  float max_err = 0;
  for (size_t i = 0; i < ra.size(); ++i) max_err = std::max(max_err, std::abs(ra[i] - rb[i]));
  EXPECT_LT(max_err, 1e-4f) << "the runtime must agree too (its kernels may sum in another order)";

  // Training moves the new blocks: after a few SFT steps a zeroed output matrix is no longer zero.
  auto r = run_training(three_sft_steps(tmp.file("big"), testing::write_chat_data(tmp.file("."), 64), tmp.file("sft")));
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  auto t = load_checkpoint(tmp.file("sft"));
  ASSERT_TRUE(t.has_value()) << t.status().to_string();
  auto grown_out = std::find_if(t->weights.begin(), t->weights.end(),
                                [](const NamedTensor& x) { return x.name == "blk.1.ffn_down.weight"; });
  ASSERT_NE(grown_out, t->weights.end());
  EXPECT_TRUE(std::any_of(grown_out->data.begin(), grown_out->data.end(), [](float x) { return x != 0.0f; }));

  // Refusals: not deeper, an existing checkpoint, a missing source, a malformed flag.
  EXPECT_FALSE(grow_depth(h, w, 2).has_value());
  EXPECT_FALSE(grow_depth(h, w, 1000).has_value());
  auto bad = w;
  bad.erase(std::find_if(bad.begin(), bad.end(), [](const NamedTensor& x) { return x.name == "blk.1.ffn_down.weight"; }));
  auto g = grow_depth(h, bad, 4);
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.status().to_string().find("blk.1.ffn_down.weight"), std::string::npos) << g.status().to_string();
  EXPECT_NE(testing::run_command(bin + " grow --from " + tmp.file("src") + " --out " + tmp.file("big") +
                                     " --layers 5 2>&1", &out), 0);
  EXPECT_NE(out.find("already holds a checkpoint"), std::string::npos) << out;
  EXPECT_NE(testing::run_command(bin + " grow --from " + tmp.file("src") + " --out " + tmp.file("g2") +
                                     " --layers 2 2>&1", &out), 0);
  EXPECT_NE(out.find("more layers"), std::string::npos) << out;
  EXPECT_NE(testing::run_command(bin + " grow --from " + tmp.file("nothing") + " --out " + tmp.file("g3") +
                                     " --layers 4 2>&1", &out), 0);
  EXPECT_NE(testing::run_command(bin + " grow --from " + tmp.file("src") + " --out " + tmp.file("g4") +
                                     " --layers x 2>&1", &out), 0);
  EXPECT_NE(out.find("--layers"), std::string::npos) << out;
}

// Width growth keeps the function: 64 -> 96 wide, 4/2 -> 6/3 heads, FFN 96 -> 160, tied and untied (with
// q/k/v biases and q/k-norm, every tensor kind). The source's weights sit top-left in the grown ones, new
// residual writers are zero, the logits agree with the source's (libtorch and runtime), training moves the
// new parts, and bad requests are refused.
TEST(Grow, WiderCheckpointComputesTheSameFunctionAndTrains) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    TempDir tmp;
    HParams h = small_hparams(tied);
    h.qkv_bias = !tied;
    h.qk_norm = !tied;
    const auto w = random_weights(h, 23);
    const auto tok = testing::char_tokenizer()->serialize();
    const std::string a = export_to(tmp, "a.pocket", h, w, tok, DType::kF32);
    ASSERT_TRUE(import_checkpoint(a, tmp.file("src"), 1).has_value());

    const std::string bin = POCKET_TRAIN_BIN;
    std::string out;
    ASSERT_EQ(testing::run_command(bin + " grow --from " + tmp.file("src") + " --out " + tmp.file("wide") +
                                       " --width 96 --heads 6 --kv-heads 3 --ff 160 --layers 3 --seed 5 2>&1", &out), 0)
        << out;
    EXPECT_NE(out.find("width 96"), std::string::npos) << out;
    auto c = load_checkpoint(tmp.file("wide"));
    ASSERT_TRUE(c.has_value()) << c.status().to_string();
    const HParams& g = c->meta.hparams;
    EXPECT_EQ(g.n_embd, 96);
    EXPECT_EQ(g.n_heads, 6);
    EXPECT_EQ(g.n_kv_heads, 3);
    EXPECT_EQ(g.n_ff, 160);
    EXPECT_EQ(g.n_layers, 3);
    EXPECT_EQ(g.head_dim, h.head_dim);
    EXPECT_FLOAT_EQ(g.norm_eps, h.norm_eps * 64.0f / 96.0f);

    // Width only, through the API, to check the placement of every source weight.
    auto wide = grow_width(h, w, WidthSpec{.n_embd = 96, .n_heads = 6, .n_kv_heads = 3, .n_ff = 160, .seed = 5});
    ASSERT_TRUE(wide.has_value()) << wide.status().to_string();
    ASSERT_EQ(wide->weights.size(), w.size());
    const float scale = std::sqrt(64.0f / 96.0f);
    for (size_t i = 0; i < w.size(); ++i) {
      const NamedTensor &s = w[i], &t = wide->weights[i];
      ASSERT_EQ(s.name, t.name);
      const int64_t rows = s.shape[0], cols = s.shape.size() == 2 ? s.shape[1] : 1;
      const int64_t tcols = t.shape.size() == 2 ? t.shape[1] : 1;
      const bool norm = s.name.ends_with("attn_norm.weight") || s.name.ends_with("ffn_norm.weight") ||
                        s.name == "output_norm.weight";
      const bool writer = s.name == "token_embd.weight" || s.name == "output.weight" ||
                          s.name.ends_with("attn_output.weight") || s.name.ends_with("ffn_down.weight");
      bool old_kept = true, new_zero = true, new_nonzero = false;
      for (int64_t r = 0; r < t.shape[0]; ++r) {
        for (int64_t k = 0; k < tcols; ++k) {
          const float x = t.data[static_cast<size_t>(r * tcols + k)];
          if (r < rows && k < cols) {
            const float want = s.data[static_cast<size_t>(r * cols + k)] * (norm ? scale : 1.0f);
            old_kept = old_kept && std::abs(x - want) <= 1e-6f * std::max(1.0f, std::abs(want));
          } else {
            new_zero = new_zero && x == 0.0f;
            new_nonzero = new_nonzero || x != 0.0f;
          }
        }
      }
      EXPECT_TRUE(old_kept) << s.name;
      if (writer || s.name.ends_with(".bias")) {
        EXPECT_TRUE(new_zero) << s.name << ": a new entry writes into the stream";
      }
      if (s.name.ends_with("attn_q.weight") || s.name.ends_with("ffn_up.weight")) {
        EXPECT_TRUE(new_nonzero) << s.name;
      }
    }

    std::vector<int32_t> tokens(40);
    std::mt19937 rng(9);
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % h.n_vocab);
    auto ls = libtorch_logits(h, w, tokens);
    auto lg = libtorch_logits(g, c->weights, tokens);
    ASSERT_TRUE(ls.has_value() && lg.has_value());
    ASSERT_EQ(ls->size(), lg->size());
    float max_err = 0, max_abs = 0;
    for (size_t i = 0; i < ls->size(); ++i) {
      max_err = std::max(max_err, std::abs((*ls)[i] - (*lg)[i]));
      max_abs = std::max(max_abs, std::abs((*ls)[i]));
    }
    EXPECT_LT(max_err, 1e-4f * std::max(1.0f, max_abs)) << "largest logit " << max_abs;
    const std::string b = export_to(tmp, "b.pocket", g, c->weights, c->tokenizer, DType::kF32);
    const auto ra = runtime_logits(a, tokens), rb = runtime_logits(b, tokens);
    ASSERT_EQ(ra.size(), rb.size());
    max_err = 0;
    for (size_t i = 0; i < ra.size(); ++i) max_err = std::max(max_err, std::abs(ra[i] - rb[i]));
    EXPECT_LT(max_err, 1e-4f * std::max(1.0f, max_abs)) << "the runtime must agree too";

    // Training moves the new residual dimensions: token_embd's new columns leave zero.
    auto r = run_training(three_sft_steps(tmp.file("wide"), testing::write_chat_data(tmp.file("."), 64), tmp.file("sft")));
    ASSERT_TRUE(r.has_value()) << r.status().to_string();
    auto t = load_checkpoint(tmp.file("sft"));
    ASSERT_TRUE(t.has_value()) << t.status().to_string();
    auto emb = std::find_if(t->weights.begin(), t->weights.end(), [](const NamedTensor& x) { return x.name == "token_embd.weight"; });
    ASSERT_NE(emb, t->weights.end());
    bool moved = false;
    for (int64_t v = 0; v < g.n_vocab && !moved; ++v) {
      for (int64_t k = 64; k < 96; ++k) moved = moved || emb->data[static_cast<size_t>(v * 96 + k)] != 0.0f;
    }
    EXPECT_TRUE(moved);

    // Refusals: narrower, another head ratio, nothing to grow, a bad flag.
    EXPECT_FALSE(grow_width(h, w, WidthSpec{.n_embd = 32}).has_value());
    auto ratio = grow_width(h, w, WidthSpec{.n_heads = 6, .n_kv_heads = 2});
    ASSERT_FALSE(ratio.has_value());
    EXPECT_NE(ratio.status().to_string().find("ratio"), std::string::npos) << ratio.status().to_string();
    EXPECT_FALSE(grow_width(h, w, WidthSpec{}).has_value());
    EXPECT_NE(testing::run_command(bin + " grow --from " + tmp.file("src") + " --out " + tmp.file("w2") +
                                       " --width 0 2>&1", &out), 0);
    EXPECT_NE(out.find("--width"), std::string::npos) << out;
    EXPECT_NE(testing::run_command(bin + " grow --from " + tmp.file("src") + " --out " + tmp.file("w3") +
                                       " --width 48 2>&1", &out), 0);
    EXPECT_NE(out.find("shrink"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace pocket::train
