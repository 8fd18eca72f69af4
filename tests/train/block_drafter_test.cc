// The block drafter's trainer side: the exported package round-trips through BlockDrafterConfig::from_json
// and names its target's fingerprint; the block attention mask (a block ignores context at or past its
// anchor and every other block, and each of its rows matters to all of them); resume reproduces the
// uninterrupted run bit for bit; the torch module and the runtime's PackagedBlockDrafter agree on the
// block logits and drafts for the same weights and hidden states.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "core/thread_pool.h"
#include "data/drafter_data.h"
#include "format/package.h"
#include "model/model.h"
#include "nn/block_drafter_torch.h"
#include "nn/drafter_trainer.h"
#include "nn/model_facade.h"
#include "run/drafter_exporter.h"
#include "run/exporter.h"
#include "run/package_import.h"
#include "speculative/block_drafter.h"
#include "train_test_util.h"

namespace pocket::train {
namespace {

using pocket::testing::TempDir;

HParams tiny_target_hparams() {
  HParams h;
  h.name = "drafter-test-target";
  h.n_vocab = 360;  // >= the character tokenizer's 357 tokens
  h.n_embd = 64;
  h.n_layers = 3;
  h.n_heads = 4;
  h.n_kv_heads = 2;
  h.head_dim = 16;
  h.n_ff = 96;
  h.n_ctx_train = 256;
  h.rope_style = RopeStyle::kNeox;
  h.tied_embeddings = true;
  return h;
}

// A random f32 target package; `seed` changes its weights (and so its fingerprint).
std::string write_target(const TempDir& tmp, const std::string& name, uint64_t seed) {
  const HParams h = tiny_target_hparams();
  auto w = init_model_weights(h, seed);
  EXPECT_TRUE(w.has_value()) << w.status().to_string();
  for (auto& t : *w) {
    if (t.shape.size() == 2) for (float& x : t.data) x *= 10.0f;  // O(1) activations
  }
  const std::string path = tmp.file(name);
  Status st = export_package(h, *w, testing::char_tokenizer()->serialize(), ExportOptions{}, path);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return path;
}

BlockDrafterConfig tiny_config(const std::string& target) {
  auto c = drafter_config_for_target(target, /*n_layers=*/2, /*target_layers=*/{0, 2}, /*block_size=*/4);
  EXPECT_TRUE(c.has_value()) << c.status().to_string();
  return *c;
}

TEST(BlockDrafterTrain, ExportRoundTripsAndNamesTheTarget) {
  TempDir tmp;
  const std::string target = write_target(tmp, "target.pocket", 1);
  const BlockDrafterConfig c = tiny_config(target);
  BlockDrafter m(c);
  m->reset_random(3);
  const auto w = m->to_named();
  const std::string path = tmp.file("drafter.pocket");
  ASSERT_TRUE(export_block_drafter(c, w, target, DType::kF32, path).is_ok());

  auto pkg = Package::open(path);
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  EXPECT_TRUE(is_drafter_descriptor(pkg->descriptor_json()));
  auto back = BlockDrafterConfig::from_json(pkg->descriptor_json());
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  EXPECT_EQ(back->to_json(), c.to_json());
  auto tpkg = Package::open(target);
  ASSERT_TRUE(tpkg.has_value());
  EXPECT_EQ(back->target_fingerprint, package_fingerprint(*tpkg));
  EXPECT_NE(back->target_fingerprint, 0u);
  EXPECT_EQ(back->target_layers, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(back->block_size, 4);
  // The target's tokenizer and inference config travel with the drafter.
  EXPECT_EQ(pkg->config_json(), tpkg->config_json());
  ASSERT_EQ(pkg->tokenizer_bytes().size(), tpkg->tokenizer_bytes().size());
  EXPECT_EQ(0, std::memcmp(pkg->tokenizer_bytes().data(), tpkg->tokenizer_bytes().data(), tpkg->tokenizer_bytes().size()));

  // f32 weights come back bit for bit; q8 within its quantisation error.
  auto imp = import_block_drafter(path);
  ASSERT_TRUE(imp.has_value()) << imp.status().to_string();
  ASSERT_EQ(imp->weights.size(), w.size());
  std::map<std::string, const NamedTensor*> orig;
  for (const auto& t : w) orig[t.name] = &t;
  for (const auto& t : imp->weights) {
    ASSERT_TRUE(orig.count(t.name)) << t.name;
    EXPECT_EQ(t.data, orig[t.name]->data) << t.name;
  }
  const std::string q8 = tmp.file("drafter-q8.pocket");
  ASSERT_TRUE(export_block_drafter(c, w, target, DType::kQ8G32, q8).is_ok());
  auto imp8 = import_block_drafter(q8);
  ASSERT_TRUE(imp8.has_value()) << imp8.status().to_string();
  for (const auto& t : imp8->weights) {
    const auto& o = orig[t.name]->data;
    float max_abs = 0, max_err = 0;
    for (size_t i = 0; i < o.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(o[i]));
      max_err = std::max(max_err, std::fabs(o[i] - t.data[i]));
    }
    EXPECT_LE(max_err, 0.01f * max_abs + 1e-6f) << t.name;
  }

  // Another target (other weights, so another fingerprint) is refused at export and at load.
  const std::string other = write_target(tmp, "other.pocket", 2);
  Status st = export_block_drafter(c, w, other, DType::kF32, tmp.file("x.pocket"));
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("wrong target"), std::string::npos) << st.message();
  auto other_model = Model::load(other);
  ASSERT_TRUE(other_model.has_value());
  EXPECT_FALSE(back->check_target(**other_model).is_ok());
}

TEST(BlockDrafterTrain, BlockMaskIsolatesBlocksAndContextPastTheAnchor) {
  TempDir tmp;
  const BlockDrafterConfig c = tiny_config(write_target(tmp, "target.pocket", 1));
  torch::NoGradGuard no_grad;
  BlockDrafter m(c);
  m->reset_random(5);
  const int64_t d = c.blocks.n_embd, T = 14, B = c.block_size, R = B + 1;
  torch::manual_seed(7);
  auto hidden = torch::randn({1, T, c.n_taps() * d});
  auto anchors = torch::tensor({5, 9}, torch::kInt64).view({1, 2});
  auto x = torch::randn({1, 2 * R, d});
  auto base = m->rows_forward(hidden, anchors, x);  // [1, 2R, d]
  auto block = [&](const torch::Tensor& y, int64_t k) { return y.narrow(1, k * R, R); };

  // Context at positions >= 5 changes: block 0 (anchor 5) is unchanged, block 1 (anchor 9) changes.
  auto h2 = hidden.clone();
  h2.narrow(1, 5, T - 5).add_(torch::randn({1, T - 5, c.n_taps() * d}));
  auto y2 = m->rows_forward(h2, anchors, x);
  EXPECT_TRUE(torch::allclose(block(y2, 0), block(base, 0), 0, 1e-6));
  EXPECT_FALSE(torch::allclose(block(y2, 1), block(base, 1), 1e-4, 1e-4));
  // Context at position 4 (< both anchors) changes both.
  auto h3 = hidden.clone();
  h3.narrow(1, 4, 1).add_(torch::randn({1, 1, c.n_taps() * d}));
  auto y3 = m->rows_forward(h3, anchors, x);
  EXPECT_FALSE(torch::allclose(block(y3, 0), block(base, 0), 1e-4, 1e-4));

  // Each row of block 0 changes every row of block 0 (non-causal within the block) and none of block 1.
  for (int64_t j = 0; j < R; ++j) {
    SCOPED_TRACE("perturbed row " + std::to_string(j));
    auto xj = x.clone();
    xj.narrow(1, j, 1).add_(torch::randn({1, 1, d}));
    auto yj = m->rows_forward(hidden, anchors, xj);
    for (int64_t r = 0; r < R; ++r) {
      EXPECT_FALSE(torch::allclose(yj.narrow(1, r, 1), base.narrow(1, r, 1), 1e-5, 1e-5)) << "row " << r;
    }
    EXPECT_TRUE(torch::allclose(block(yj, 1), block(base, 1), 0, 1e-6));
  }
  // The logits of the full forward follow the same rows: rows 1..B of each block through the head.
  auto head = torch::randn({c.blocks.n_vocab, d});
  auto embd = torch::randn({1, 2, d});
  auto logits = m->forward(hidden, anchors, embd, head);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{1, 2, B, c.blocks.n_vocab}));
}

// Synthetic drafter data over the tiny target's vocabulary (the tokens need not be the target's outputs for
// the resume test).
std::string write_sequences(const TempDir& tmp, int n) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> tok(3, 300), len(3, 20);
  std::vector<DrafterSequence> seqs;
  for (int i = 0; i < n; ++i) {
    DrafterSequence s;
    s.task = static_cast<TaskKind>(i % 5);
    s.n_prompt = len(rng);
    const int n_gen = len(rng);
    for (int j = 0; j < s.n_prompt + n_gen; ++j) s.ids.push_back(tok(rng));
    seqs.push_back(std::move(s));
  }
  const std::string path = tmp.file("data.bin");
  EXPECT_TRUE(write_drafter_data(path, seqs).is_ok());
  auto back = read_drafter_data(path);
  EXPECT_TRUE(back.has_value());
  if (back.has_value()) {
    EXPECT_EQ(back->size(), seqs.size());
    EXPECT_EQ((*back)[3].ids, seqs[3].ids);
  }
  return path;
}

TEST(BlockDrafterTrain, ResumeReproducesTheWeightsBitwise) {
  TempDir tmp;
  const std::string target = write_target(tmp, "target.pocket", 1);
  DrafterTrainOptions o;
  o.target = target;
  o.data = write_sequences(tmp, 24);
  o.eval_data = o.data;
  o.n_layers = 1;
  o.taps = {0, 2};
  o.block = 4;
  o.steps = 6;
  o.warmup = 2;
  o.seqs_per_step = 4;
  o.anchors_per_seq = 3;
  o.eval_every = 0;
  o.eval_seqs = 4;
  o.ckpt_every = 0;
  o.log_every = 2;
  o.threads = 1;
  o.quiet = true;
  o.export_types = {};
  o.random_init = true;

  o.run_dir = tmp.file("straight");
  ASSERT_TRUE(train_block_drafter(o).is_ok());

  o.run_dir = tmp.file("resumed");
  o.stop_at = 3;
  ASSERT_TRUE(train_block_drafter(o).is_ok());
  EXPECT_FALSE(std::filesystem::exists(o.run_dir + "/drafter-f32.pocket"));
  Status again = train_block_drafter(o);  // without --resume an existing run is refused
  EXPECT_FALSE(again.is_ok());
  o.stop_at = 0;
  o.resume = true;
  ASSERT_TRUE(train_block_drafter(o).is_ok());

  auto a = import_block_drafter(tmp.file("straight/drafter-f32.pocket"));
  auto b = import_block_drafter(tmp.file("resumed/drafter-f32.pocket"));
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_EQ(a->weights.size(), b->weights.size());
  bool moved = false;
  BlockDrafter init(a->config);
  init->reset_random(o.seed);
  for (size_t i = 0; i < a->weights.size(); ++i) {
    ASSERT_EQ(a->weights[i].name, b->weights[i].name);
    EXPECT_EQ(0, std::memcmp(a->weights[i].data.data(), b->weights[i].data.data(), a->weights[i].data.size() * 4))
        << a->weights[i].name;
  }
  // Training moved the weights away from the initialisation (the test compares trained weights).
  const auto w0 = init->to_named();
  for (size_t i = 0; i < w0.size(); ++i) moved |= w0[i].data != a->weights[i].data;
  EXPECT_TRUE(moved);

  // Warm start for a fine-tuned target: --init with the drafter of other weights of the same shape trains
  // and the result names the new target; a drafter of another configuration is refused.
  const std::string target2 = write_target(tmp, "target2.pocket", 2);
  o.target = target2;
  o.init_package = tmp.file("straight/drafter-f32.pocket");
  o.resume = false;
  o.steps = 2;
  o.run_dir = tmp.file("warm");
  Status warm = train_block_drafter(o);
  ASSERT_TRUE(warm.is_ok()) << warm.to_string();
  auto w = import_block_drafter(tmp.file("warm/drafter-f32.pocket"));
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  auto pkg2 = Package::open(target2);
  ASSERT_TRUE(pkg2.has_value());
  EXPECT_EQ(w->config.target_fingerprint, package_fingerprint(*pkg2));
  EXPECT_NE(w->config.target_fingerprint, a->config.target_fingerprint);
  o.block = 8;
  o.run_dir = tmp.file("other_block");
  Status refused = train_block_drafter(o);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.to_string().find("another configuration"), std::string::npos) << refused.to_string();
}

TEST(BlockDrafterTrain, RuntimeMatchesTorchLogitsAndDrafts) {
  TempDir tmp;
  const std::string target = write_target(tmp, "target.pocket", 1);
  const BlockDrafterConfig c = tiny_config(target);
  BlockDrafter m(c);
  m->reset_random(9);
  const std::string path = tmp.file("drafter.pocket");
  ASSERT_TRUE(export_block_drafter(c, m->to_named(), target, DType::kF32, path).is_ok());

  auto model = Model::load(target);
  ASSERT_TRUE(model.has_value()) << model.status().to_string();
  auto dm = BlockDrafterModel::load(path);
  ASSERT_TRUE(dm.has_value()) << dm.status().to_string();
  ThreadPool pool(1);
  auto rt = PackagedBlockDrafter::create(*model, *dm, /*n_ctx=*/64, &pool);
  if (!rt.has_value() && rt.status().code() == ErrorCode::kUnsupported) {
    GTEST_SKIP() << "the runtime PackagedBlockDrafter is not implemented yet: " << rt.status().to_string();
  }
  ASSERT_TRUE(rt.has_value()) << rt.status().to_string();

  auto imp = import_package(target);
  ASSERT_TRUE(imp.has_value());
  const int64_t d = c.blocks.n_embd, B = c.block_size, V = c.blocks.n_vocab, taps = c.n_taps();
  const std::vector<int32_t> context = {5, 17, 40, 41, 99, 123, 7, 8, 250, 3, 77, 12};  // anchor 12 at position 11
  const int64_t n = static_cast<int64_t>(context.size());
  torch::manual_seed(13);
  auto hidden = torch::randn({1, n - 1, taps * d});  // [1, n-1, taps*d], rows in target_layers order
  // The runtime's layout: layer i's rows at data + i * layer_stride.
  auto per_layer = hidden.view({n - 1, taps, d}).transpose(0, 1).contiguous();  // [taps, n-1, d]
  TargetHiddenStates s;
  s.layers = c.target_layers;
  s.data = per_layer.data_ptr<float>();
  s.layer_stride = (n - 1) * d;
  s.pos0 = 0;
  s.n_rows = n - 1;
  s.n_embd = d;
  ASSERT_TRUE((*rt)->observe_hidden(s).is_ok());
  std::vector<int32_t> drafts(static_cast<size_t>(B), -1);
  auto nd = (*rt)->propose(context, drafts);
  ASSERT_TRUE(nd.has_value()) << nd.status().to_string();
  ASSERT_EQ(*nd, B);
  const auto rl = (*rt)->last_logits();
  ASSERT_EQ(static_cast<int64_t>(rl.size()), B * V);

  torch::NoGradGuard no_grad;
  auto taps_t = TargetTaps::create(imp->hparams, imp->weights, c.target_layers);
  ASSERT_TRUE(taps_t.has_value());
  auto anchors = torch::tensor({n - 1}, torch::kInt64).view({1, 1});
  auto embd = taps_t->token_embd().narrow(0, context.back(), 1).view({1, 1, d});
  auto logits = m->forward(hidden, anchors, embd, taps_t->head()).view({B, V}).contiguous();
  const float* tl = logits.data_ptr<float>();
  float scale = 0, max_err = 0;
  for (int64_t i = 0; i < B * V; ++i) {
    scale = std::max(scale, std::fabs(tl[i]));
    max_err = std::max(max_err, std::fabs(tl[i] - rl[static_cast<size_t>(i)]));
  }
  // The runtime keeps K/V in f16 (relative error ~5e-4 per element); 1e-2 of the logits' scale covers it.
  EXPECT_LE(max_err, 1e-2f * scale) << "max |torch - runtime| " << max_err << " at logit scale " << scale;
  RecordProperty("max_abs_err", std::to_string(max_err));
  RecordProperty("logit_scale", std::to_string(scale));
  auto am = logits.argmax(-1);
  int compared = 0;
  for (int64_t r = 0; r < B; ++r) {
    // Equal drafts unless torch's top two are closer than the tolerance (a tie the f16 cache may flip).
    const torch::Tensor top = std::get<0>(logits[r].topk(2));
    const float gap = (top[0] - top[1]).item().toFloat();
    if (gap > 2 * max_err) {
      ++compared;
      EXPECT_EQ(drafts[static_cast<size_t>(r)], am[r].item().toLong()) << "row " << r;
    }
  }
  EXPECT_GE(compared, B / 2) << "too many near-ties to compare drafts";
}

// Bad input to the two commands: each exits 1 with a message naming what is wrong, and writes nothing.
TEST(BlockDrafterTrain, CommandLineErrorsAreClear) {
  TempDir tmp;
  const std::string target = write_target(tmp, "t.pocket", 1);
  const std::string bin = POCKET_TRAIN_BIN;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(tmp.file(name), std::ios::binary) << text;
    return tmp.file(name);
  };
  struct Case {
    std::string args, want;
  };
  const std::string good_line =
      R"({"messages":[{"role":"user","content":"Classify intent: hi"},{"role":"assistant","content":"greet"}],"task":"intent","lang":"en"})";
  const std::string no_task = write("no_task.jsonl", good_line + "\n" +
      R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}],"lang":"en"})" + "\n");
  const std::string not_json = write("not_json.jsonl", good_line + "\n{oops\n");
  const std::string good = write("good.jsonl", good_line + "\n");
  const std::string text_file = write("notes.bin", "these are not drafter data\n");
  std::string truncated_bytes = "PKDD";
  const uint32_t version = 1;
  const uint64_t n = 3;
  truncated_bytes.append(reinterpret_cast<const char*>(&version), 4).append(reinterpret_cast<const char*>(&n), 8);
  const std::string truncated = write("truncated.bin", truncated_bytes);
  const std::string out = tmp.file("out.bin");
  const std::vector<Case> cases = {
      {"drafter-data -m " + target + " --tasks " + no_task + " -o " + out, "no_task.jsonl"},
      {"drafter-data -m " + target + " --tasks " + not_json + " -o " + out, "not_json.jsonl"},
      {"drafter-data -m " + target + " --tasks " + tmp.file("missing.jsonl") + " -o " + out, "cannot read"},
      {"drafter-data -m " + tmp.file("missing.pocket") + " --tasks " + good + " -o " + out, "missing.pocket"},
      {"drafter-data -m " + target + " --tasks " + no_task + " -o " + out + " --limit -3", "--limit"},
      {"drafter-data -m " + target + " --tasks " + no_task + " -o " + out + " --speed 9", "--speed"},
      // --taps 0,2: the tiny target has 3 layers (the default taps 1,3 are refused before the data is read).
      {"drafter --taps 0,2 --target " + target + " --data " + text_file + " -o " + tmp.file("run"), "not a drafter data file"},
      {"drafter --taps 0,2 --target " + target + " --data " + truncated + " -o " + tmp.file("run"), "truncated"},
      {"drafter --taps 0,2 --target " + target + " --data " + tmp.file("none.bin") + " -o " + tmp.file("run"), "cannot read"},
      {"drafter --target " + tmp.file("missing.pocket") + " --data " + truncated + " -o " + tmp.file("run"),
       "missing.pocket"},
      {"drafter --taps 1,3 --target " + target + " --data " + truncated + " -o " + tmp.file("run"), "target_layers"},
      {"drafter --target " + target + " --data " + truncated + " -o " + tmp.file("run") + " --threads 0",
       "--threads"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    std::string o;
    EXPECT_EQ(testing::run_command(bin + " " + c.args + " 2>&1", &o), 1) << o;
    EXPECT_NE(o.find(c.want), std::string::npos) << o;
  }
  EXPECT_FALSE(std::filesystem::exists(out)) << "a failed drafter-data must not leave an output file";
}

}  // namespace
}  // namespace pocket::train
