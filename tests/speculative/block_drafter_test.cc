// The block drafter's runtime: its logits against a plain double-precision implementation of the math in
// block_drafter_format.h, the context it reads (positions before the anchor, superseded reports), package
// and target checks, and lossless decoding through SpeculativeSession (greedy bit for bit, sampling by a
// chi-square test), the memory plan and the budget.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "convert/tensor_fill.h"
#include "core/process_memory.h"
#include "format/package_writer.h"
#include "generate/chat_prompt.h"
#include "model/matmul.h"
#include "spec_fixture.h"
#include "speculative/block_drafter.h"
#include "speculative/block_drafter_synth.h"

namespace pocket {
namespace {

using testing::plain_generate;
using testing::spec_generate;
using testing::TempDir;
using testing::tiny_model;

// --- A drafter package written from float arrays the test keeps (the reference reads the same numbers) ---

struct DrafterTensors {
  BlockDrafterConfig config;
  std::map<std::string, std::vector<float>> t;  // every tensor, f32, row-major
  std::map<std::string, std::vector<uint64_t>> shape;
};

DrafterTensors random_drafter(const Model& target, int64_t n_layers, std::vector<int32_t> taps, int32_t block,
                              uint64_t seed) {
  const HParams& th = target.hparams();
  DrafterTensors D;
  BlockDrafterConfig& c = D.config;
  c.blocks = th;
  c.blocks.name = "test-drafter";
  c.blocks.n_layers = n_layers;
  c.blocks.tied_embeddings = true;
  c.block_size = block;
  c.target_layers = std::move(taps);
  c.target_name = th.name;
  c.target_fingerprint = package_fingerprint(target.package());
  c.target_n_layers = th.n_layers;
  c.target_n_vocab = th.n_vocab;
  c.target_n_embd = th.n_embd;
  Rng rng(seed);
  auto gauss = [&](float stdev) {
    return static_cast<float>((rng.uniform() + rng.uniform() + rng.uniform() + rng.uniform() - 2.0) * std::sqrt(3.0) *
                              stdev);
  };
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, float stdev, float mean) {
    uint64_t n = 1;
    for (uint64_t s : shape) n *= s;
    std::vector<float> v(n);
    for (auto& x : v) x = mean + gauss(stdev);
    D.t[name] = std::move(v);
    D.shape[name] = std::move(shape);
  };
  const uint64_t d = static_cast<uint64_t>(th.n_embd), q = static_cast<uint64_t>(th.q_dim()),
                 kv = static_cast<uint64_t>(th.kv_dim()), ff = static_cast<uint64_t>(th.n_ff);
  auto mat = [&](const std::string& name, uint64_t rows, uint64_t cols) {
    add(name, {rows, cols}, 1.0f / std::sqrt(static_cast<float>(cols)), 0.0f);
  };
  mat(kDrafterFuse, d, d * c.target_layers.size());
  add(kDrafterFuseNorm, {d}, 0.2f, 1.0f);  // norms near 1 but not 1, so a missed multiply shows
  add(kDrafterMaskEmbd, {d}, 1.0f, 0.0f);
  for (int64_t l = 0; l < n_layers; ++l) {
    auto n = [&](const char* s) { return layer_tensor_name(l, s); };
    add(n("attn_norm.weight"), {d}, 0.2f, 1.0f);
    mat(n("attn_q.weight"), q, d);
    mat(n("attn_k.weight"), kv, d);
    mat(n("attn_v.weight"), kv, d);
    mat(n("attn_output.weight"), d, q);
    add(n("ffn_norm.weight"), {d}, 0.2f, 1.0f);
    mat(n("ffn_gate.weight"), ff, d);
    mat(n("ffn_up.weight"), ff, d);
    mat(n("ffn_down.weight"), d, ff);
  }
  add(kDrafterOutputNorm, {d}, 0.2f, 1.0f);
  return D;
}

// Writes D as a package; `descriptor` replaces the config's JSON when non-empty, `skip` leaves a tensor out,
// `as_f16` stores that tensor in f16.
void write_drafter(const DrafterTensors& D, const std::string& path, const std::string& descriptor = "",
                   const std::string& skip = "", const std::string& as_f16 = "",
                   const std::map<std::string, std::vector<uint64_t>>& reshape = {}) {
  PackageWriter pw;
  pw.set_descriptor(descriptor.empty() ? D.config.to_json() : descriptor);
  for (const auto& [name, v] : D.t) {
    if (name == skip) continue;
    std::vector<uint64_t> shape = D.shape.at(name);
    if (auto it = reshape.find(name); it != reshape.end()) shape = it->second;
    uint64_t n = 1;
    for (uint64_t s : shape) n *= s;
    std::vector<float> data(v);
    data.resize(n, 0.5f);
    if (name == as_f16) {
      std::vector<uint8_t> bytes(n * 2);
      const uint64_t rows = shape.size() == 2 ? shape[0] : 1;
      ASSERT_TRUE(convert_f32(data, DType::kF16, rows, shape.back(), bytes).is_ok());
      ASSERT_TRUE(pw.add_tensor(name, DType::kF16, shape, bytes).is_ok());
    } else {
      ASSERT_TRUE(pw.add_tensor(name, DType::kF32, shape,
                                std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), n * 4))
                      .is_ok());
    }
  }
  Status st = pw.write(path);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
}

// --- The reference: the spec's math, plainly, in double ----------------------------------------------------

using Vec = std::vector<double>;

Vec rmsnorm(const Vec& x, const std::vector<float>& w, double eps) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
  return y;
}

Vec matvec(const std::vector<float>& W, size_t rows, const Vec& x) {
  Vec y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < x.size(); ++c) y[r] += static_cast<double>(W[r * x.size() + c]) * x[c];
  }
  return y;
}

// Rotates every head of x (n_heads * head_dim) to position pos (theta^(-2i/head_dim) per pair).
void rope(Vec& x, int64_t head_dim, int64_t pos, double theta, RopeStyle style) {
  const int64_t half = head_dim / 2;
  for (size_t h0 = 0; h0 < x.size(); h0 += static_cast<size_t>(head_dim)) {
    for (int64_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(i) / head_dim);
      const size_t i0 = h0 + static_cast<size_t>(style == RopeStyle::kNeox ? i : 2 * i);
      const size_t i1 = h0 + static_cast<size_t>(style == RopeStyle::kNeox ? i + half : 2 * i + 1);
      const double u = x[i0], v = x[i1];
      x[i0] = u * std::cos(a) - v * std::sin(a);
      x[i1] = u * std::sin(a) + v * std::cos(a);
    }
  }
}

std::vector<float> target_matrix(const WeightRef& w) {  // f32 target: the rows as stored
  return std::vector<float>(w.f32(), w.f32() + w.rows * w.cols);
}

// hidden[j][tap][d] for context positions j = 0 .. n-2; returns the logits of rows 1..B, [B][n_vocab].
// causal = true computes a causal block instead (the test's sensitivity check).
std::vector<Vec> reference_logits(const Model& target, const DrafterTensors& D,
                                  const std::vector<std::vector<std::vector<float>>>& hidden, int32_t anchor,
                                  bool causal = false) {
  const HParams& h = D.config.blocks;
  const size_t d = static_cast<size_t>(h.n_embd), q = static_cast<size_t>(h.q_dim()),
               kvd = static_cast<size_t>(h.kv_dim()), ff = static_cast<size_t>(h.n_ff), hd = static_cast<size_t>(h.head_dim);
  const double eps = h.norm_eps, theta = h.rope_theta;
  const int64_t nc = static_cast<int64_t>(hidden.size());  // context positions 0 .. n-2
  const int64_t B = D.config.block_size;
  auto T = [&](const std::string& n) -> const std::vector<float>& { return D.t.at(n); };
  // Context features.
  std::vector<Vec> c(static_cast<size_t>(nc));
  for (int64_t j = 0; j < nc; ++j) {
    Vec H;
    for (const auto& tap : hidden[static_cast<size_t>(j)]) H.insert(H.end(), tap.begin(), tap.end());
    c[static_cast<size_t>(j)] = rmsnorm(matvec(T(kDrafterFuse), d, H), T(kDrafterFuseNorm), eps);
  }
  // Block rows.
  const std::vector<float> emb = target_matrix(target.weights().token_embd);
  std::vector<Vec> x(static_cast<size_t>(B + 1));
  x[0] = Vec(emb.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(anchor) * d),
             emb.begin() + static_cast<ptrdiff_t>((static_cast<size_t>(anchor) + 1) * d));
  for (int64_t r = 1; r <= B; ++r) x[static_cast<size_t>(r)] = Vec(T(kDrafterMaskEmbd).begin(), T(kDrafterMaskEmbd).end());
  const size_t group = static_cast<size_t>(h.n_heads / h.n_kv_heads);
  for (int64_t l = 0; l < h.n_layers; ++l) {
    auto n = [&](const char* s) { return layer_tensor_name(l, s); };
    std::vector<Vec> K, V;  // every key/value: context then block rows
    for (int64_t j = 0; j < nc; ++j) {
      Vec k = matvec(T(n("attn_k.weight")), kvd, c[static_cast<size_t>(j)]);
      rope(k, h.head_dim, j, theta, h.rope_style);
      K.push_back(k);
      V.push_back(matvec(T(n("attn_v.weight")), kvd, c[static_cast<size_t>(j)]));
    }
    std::vector<Vec> Q;
    for (int64_t r = 0; r <= B; ++r) {
      const Vec a = rmsnorm(x[static_cast<size_t>(r)], T(n("attn_norm.weight")), eps);
      Vec qq = matvec(T(n("attn_q.weight")), q, a), k = matvec(T(n("attn_k.weight")), kvd, a);
      rope(qq, h.head_dim, nc + r, theta, h.rope_style);
      rope(k, h.head_dim, nc + r, theta, h.rope_style);
      Q.push_back(qq);
      K.push_back(k);
      V.push_back(matvec(T(n("attn_v.weight")), kvd, a));
    }
    for (int64_t r = 0; r <= B; ++r) {
      const size_t n_keys = static_cast<size_t>(causal ? nc + r + 1 : nc + B + 1);
      Vec att(q, 0.0);
      for (size_t hh = 0; hh < static_cast<size_t>(h.n_heads); ++hh) {
        const size_t kvh = hh / group;
        Vec s(n_keys);
        double mx = -1e300;
        for (size_t t = 0; t < n_keys; ++t) {
          double dot = 0.0;
          for (size_t i = 0; i < hd; ++i) dot += Q[static_cast<size_t>(r)][hh * hd + i] * K[t][kvh * hd + i];
          s[t] = dot / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[t]);
        }
        double sum = 0.0;
        for (double& v : s) sum += (v = std::exp(v - mx));
        for (size_t t = 0; t < n_keys; ++t) {
          for (size_t i = 0; i < hd; ++i) att[hh * hd + i] += s[t] / sum * V[t][kvh * hd + i];
        }
      }
      Vec& xr = x[static_cast<size_t>(r)];
      const Vec o = matvec(T(n("attn_output.weight")), d, att);
      for (size_t i = 0; i < d; ++i) xr[i] += o[i];
    }
    for (int64_t r = 0; r <= B; ++r) {
      Vec& xr = x[static_cast<size_t>(r)];
      const Vec b = rmsnorm(xr, T(n("ffn_norm.weight")), eps);
      const Vec g = matvec(T(n("ffn_gate.weight")), ff, b), u = matvec(T(n("ffn_up.weight")), ff, b);
      Vec act(ff);
      for (size_t i = 0; i < ff; ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const Vec o = matvec(T(n("ffn_down.weight")), d, act);
      for (size_t i = 0; i < d; ++i) xr[i] += o[i];
    }
  }
  const std::vector<float> head = target_matrix(target.weights().output);
  std::vector<Vec> logits;
  for (int64_t r = 1; r <= B; ++r) {
    logits.push_back(matvec(head, static_cast<size_t>(h.n_vocab), rmsnorm(x[static_cast<size_t>(r)], T(kDrafterOutputNorm), eps)));
  }
  return logits;
}

// Random hidden states [n][taps][d], a little larger than unit scale (a real residual stream's is larger
// still; the fuse norm takes any scale).
std::vector<std::vector<std::vector<float>>> random_hidden(int64_t n, size_t taps, int64_t d, uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<std::vector<float>>> H(static_cast<size_t>(n));
  for (auto& row : H) {
    row.resize(taps);
    for (auto& tap : row) {
      tap.resize(static_cast<size_t>(d));
      for (auto& v : tap) v = static_cast<float>((rng.uniform() - 0.5) * 6.0);
    }
  }
  return H;
}

// Reports rows [from, to) of H to the drafter in one call (layer-major, as the session does).
Status report(BlockDrafter& dr, const std::vector<std::vector<std::vector<float>>>& H, int64_t from, int64_t to) {
  const size_t taps = H[0].size();
  const int64_t d = static_cast<int64_t>(H[0][0].size()), n = to - from;
  std::vector<float> buf(taps * static_cast<size_t>(n * d));
  for (size_t t = 0; t < taps; ++t) {
    for (int64_t r = 0; r < n; ++r) {
      std::memcpy(buf.data() + (t * static_cast<size_t>(n) + static_cast<size_t>(r)) * static_cast<size_t>(d),
                  H[static_cast<size_t>(from + r)][t].data(), sizeof(float) * static_cast<size_t>(d));
    }
  }
  TargetHiddenStates s;
  s.layers = dr.hidden_layers();
  s.data = buf.data();
  s.layer_stride = n * d;
  s.pos0 = from;
  s.n_rows = n;
  s.n_embd = d;
  return dr.observe_hidden(s);
}

std::unique_ptr<PackagedBlockDrafter> make_drafter(std::shared_ptr<const Model> target, const std::string& path,
                                                   int64_t n_ctx = 256, ThreadPool* pool = nullptr) {
  auto m = BlockDrafterModel::load(path);
  EXPECT_TRUE(m) << m.status().to_string();
  if (!m) return nullptr;
  auto d = PackagedBlockDrafter::create(std::move(target), *m, n_ctx, pool);
  EXPECT_TRUE(d) << d.status().to_string();
  return d ? std::move(*d) : nullptr;
}

// Tolerance: the drafter keeps K and V in f16 (relative rounding 2^-11 ~ 4.9e-4) and computes in float32;
// measured, the largest logit error is 0.8e-4 .. 2.2e-4 of the largest |logit| over the cases below.
// 2e-3 of it leaves a 10x margin and still catches a wrong operation (a causal block differs by far more
// than 5x the tolerance, checked below).
constexpr double kRelTol = 2e-3;

double max_abs(const std::vector<Vec>& L) {
  double m = 0.0;
  for (const Vec& r : L) for (double v : r) m = std::max(m, std::fabs(v));
  return m;
}

double max_diff(std::span<const float> got, const std::vector<Vec>& want) {
  double m = 0.0;
  size_t i = 0;
  for (const Vec& r : want) for (double v : r) m = std::max(m, std::fabs(static_cast<double>(got[i++]) - v));
  return m;
}

TEST(BlockDrafter, LogitsMatchDoubleReference) {
  TempDir dir;
  auto target = tiny_model(21);
  const int64_t d = target->hparams().n_embd;
  struct Case {
    int64_t layers;
    std::vector<int32_t> taps;
    int32_t block;
    int64_t n;  // context length (the anchor is the last)
  };
  for (const Case& cs : {Case{2, {0, 1}, 8, 50}, Case{1, {1}, 4, 2}, Case{2, {0}, 16, 37}, Case{1, {0, 1}, 1, 70}}) {
    SCOPED_TRACE("layers " + std::to_string(cs.layers) + " block " + std::to_string(cs.block) + " n " +
                 std::to_string(cs.n));
    const DrafterTensors D = random_drafter(*target, cs.layers, cs.taps, cs.block, 100 + cs.n);
    const std::string path = dir.file("d" + std::to_string(cs.n) + ".pocket");
    write_drafter(D, path);
    ThreadPool pool(2);
    auto dr = make_drafter(target, path, 256, &pool);
    ASSERT_TRUE(dr);
    const auto H = random_hidden(cs.n - 1, cs.taps.size(), d, 7 + cs.n);
    // In uneven reports (one of more than 32 rows, so the features run in several chunks).
    const int64_t split = std::min<int64_t>(3, cs.n - 1);
    if (split > 0) {
      ASSERT_TRUE(report(*dr, H, 0, split).is_ok());
    }
    if (cs.n - 1 > split) {
      ASSERT_TRUE(report(*dr, H, split, cs.n - 1).is_ok());
    }
    EXPECT_EQ(dr->n_observed(), cs.n - 1);
    std::vector<int32_t> context(static_cast<size_t>(cs.n), 5);
    context.back() = 42;
    std::vector<int32_t> out(16, -1);
    auto got = dr->propose(context, out);
    ASSERT_TRUE(got);
    ASSERT_EQ(*got, cs.block);
    const auto want = reference_logits(*target, D, H, 42);
    const std::span<const float> L = dr->last_logits();
    ASSERT_EQ(L.size(), static_cast<size_t>(cs.block * target->hparams().n_vocab));
    const double scale = max_abs(want), diff = max_diff(L, want);
    EXPECT_LT(diff, kRelTol * scale) << "max |diff| " << diff << " of max |logit| " << scale;
    // Drafts are the reference's argmax wherever its top two are further apart than the tolerance.
    for (int32_t r = 0; r < cs.block; ++r) {
      const Vec& row = want[static_cast<size_t>(r)];
      std::vector<size_t> idx(row.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::partial_sort(idx.begin(), idx.begin() + 2, idx.end(), [&](size_t a, size_t b) { return row[a] > row[b]; });
      if (row[idx[0]] - row[idx[1]] > 2 * kRelTol * scale) {
        EXPECT_EQ(out[static_cast<size_t>(r)], static_cast<int32_t>(idx[0])) << "row " << r;
      }
    }
    // The test can tell a causal block (or one that ignores later block rows) from the spec's.
    if (cs.block > 1) {
      const auto causal = reference_logits(*target, D, H, 42, /*causal=*/true);
      EXPECT_GT(max_diff(L, causal), 5 * kRelTol * scale);
    }
  }
}

TEST(BlockDrafter, ReadsOnlyPositionsBeforeTheAnchorAndSupersedes) {
  TempDir dir;
  auto target = tiny_model(21);
  const DrafterTensors D = random_drafter(*target, 2, {0, 1}, 8, 5);
  const std::string path = dir.file("d.pocket");
  write_drafter(D, path);
  const int64_t n = 20, d = target->hparams().n_embd;
  auto H = random_hidden(n + 10, 2, d, 3);
  std::vector<int32_t> context(static_cast<size_t>(n), 9);
  std::vector<int32_t> out(8);

  auto fresh = make_drafter(target, path);
  ASSERT_TRUE(report(*fresh, H, 0, n - 1).is_ok());
  ASSERT_EQ(*fresh->propose(context, out), 8);
  const std::vector<float> want(fresh->last_logits().begin(), fresh->last_logits().end());
  const std::vector<int32_t> want_draft = out;

  // Rows past the anchor, then a report from pos0 = n - 4 superseding them: the same as the fresh drafter,
  // bit for bit (rows at and after the anchor are never read).
  auto other = make_drafter(target, path);
  auto junk = random_hidden(n + 10, 2, d, 99);
  ASSERT_TRUE(report(*other, H, 0, n - 4).is_ok());
  ASSERT_TRUE(report(*other, junk, n - 4, n + 8).is_ok());
  EXPECT_EQ(*other->propose(context, out), 0) << "features held past the anchor: no draft";
  ASSERT_TRUE(report(*other, H, n - 4, n - 1).is_ok());
  EXPECT_EQ(other->n_observed(), n - 1);
  ASSERT_EQ(*other->propose(context, out), 8);
  EXPECT_EQ(std::vector<float>(other->last_logits().begin(), other->last_logits().end()), want);
  EXPECT_EQ(out, want_draft);
  // A propose with a longer context runs the block at later positions; going back still gives the same.
  ASSERT_TRUE(report(*other, H, n - 1, n).is_ok());
  std::vector<int32_t> longer(static_cast<size_t>(n + 1), 9);
  ASSERT_EQ(*other->propose(longer, out), 8);
  ASSERT_TRUE(report(*other, H, n - 1, n - 1 + 0).is_ok());  // an empty report changes nothing
  ASSERT_TRUE(report(*other, H, 5, n - 1).is_ok());
  ASSERT_EQ(*other->propose(context, out), 8);
  EXPECT_EQ(std::vector<float>(other->last_logits().begin(), other->last_logits().end()), want);

  // A context row changed before the anchor changes the drafts' logits (the context is read).
  auto changed = make_drafter(target, path);
  auto H2 = H;
  H2[3][1][0] += 3.0f;
  ASSERT_TRUE(report(*changed, H2, 0, n - 1).is_ok());
  ASSERT_EQ(*changed->propose(context, out), 8);
  EXPECT_NE(std::vector<float>(changed->last_logits().begin(), changed->last_logits().end()), want);

  // A gap (rows reported past n_observed) leaves the drafter without a proposal until it is filled.
  auto gap = make_drafter(target, path);
  ASSERT_TRUE(report(*gap, H, 0, 5).is_ok());
  ASSERT_TRUE(report(*gap, H, 7, n - 1).is_ok());
  EXPECT_EQ(gap->n_observed(), 5);
  EXPECT_EQ(*gap->propose(context, out), 0);
  ASSERT_TRUE(report(*gap, H, 5, n - 1).is_ok());
  ASSERT_EQ(*gap->propose(context, out), 8);
  EXPECT_EQ(std::vector<float>(gap->last_logits().begin(), gap->last_logits().end()), want);
  // out shorter than the block: that many drafts; reset forgets the context.
  std::vector<int32_t> three(3);
  EXPECT_EQ(*gap->propose(context, three), 3);
  EXPECT_EQ(std::vector<int32_t>(want_draft.begin(), want_draft.begin() + 3), three);
  // ... and the LM head ran for those rows only: the first 3 rows of the full block's logits (f32 target).
  const size_t V = static_cast<size_t>(target->hparams().n_vocab);
  EXPECT_EQ(std::vector<float>(gap->last_logits().begin(), gap->last_logits().end()),
            std::vector<float>(want.begin(), want.begin() + static_cast<ptrdiff_t>(3 * V)));
  gap->reset();
  EXPECT_EQ(gap->n_observed(), 0);
  EXPECT_EQ(*gap->propose(context, out), 0);
  // Rows outside the drafter's context are an error.
  auto small = make_drafter(target, path, 16);
  EXPECT_FALSE(report(*small, H, 0, 17).is_ok());
}

TEST(BlockDrafter, RefusesAnotherTarget) {
  TempDir dir;
  auto target = tiny_model(21);
  auto other = tiny_model(22);  // the same shape, other weights
  const std::string path = dir.file("d.pocket");
  write_drafter(random_drafter(*target, 1, {1}, 8, 5), path);
  auto m = BlockDrafterModel::load(path);
  ASSERT_TRUE(m) << m.status().to_string();
  auto d = PackagedBlockDrafter::create(other, *m, 64, nullptr);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.status().code(), ErrorCode::kInvalidArgument);
  const std::string msg = d.status().message();
  EXPECT_NE(msg.find(fingerprint_string(package_fingerprint(target->package()))), std::string::npos) << msg;
  EXPECT_NE(msg.find(fingerprint_string(package_fingerprint(other->package()))), std::string::npos) << msg;
  // Through the session too, and the right target works.
  SpeculativeOptions spec;
  spec.method = SpecMethod::kBlock;
  spec.draft_model_path = path;
  SessionOptions so;
  so.n_threads = 1;
  auto s = SpeculativeSession::create(other, so, spec);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(SpeculativeSession::create(target, so, spec)) << "the right target";
  spec.draft_model_path.clear();
  auto none = SpeculativeSession::create(target, so, spec);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("block drafter package"), std::string::npos) << none.status().message();
}

TEST(BlockDrafter, RefusesBadPackages) {
  TempDir dir;
  auto target = tiny_model(21);
  const DrafterTensors D = random_drafter(*target, 2, {0, 1}, 8, 5);
  int i = 0;
  auto expect_refused = [&](const std::string& what, const std::string& descriptor, const std::string& skip,
                            const std::string& as_f16, const std::map<std::string, std::vector<uint64_t>>& reshape,
                            const std::string& needle) {
    SCOPED_TRACE(what);
    const std::string path = dir.file("bad" + std::to_string(i++) + ".pocket");
    write_drafter(D, path, descriptor, skip, as_f16, reshape);
    auto m = BlockDrafterModel::load(path);
    ASSERT_FALSE(m);
    EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find(path), std::string::npos) << m.status().message();
  };
  expect_refused("missing", "", "blk.1.ffn_up.weight", "", {}, "'blk.1.ffn_up.weight' is missing");
  expect_refused("shape", "", "", "", {{"blk.0.attn_k.weight", {16, 64}}}, "'blk.0.attn_k.weight' has shape [16, 64]");
  expect_refused("fuse shape", "", "", "", {{kDrafterFuse, {64, 64}}}, "'fuse.weight' has shape");
  expect_refused("norm dtype", "", "", "blk.0.ffn_norm.weight", {}, "'blk.0.ffn_norm.weight' has dtype f16");
  expect_refused("mask dtype", "", "", kDrafterMaskEmbd, {}, "'mask_embd.weight' has dtype f16");
  {  // an extra tensor (the drafter holds no embedding of its own)
    DrafterTensors E = D;
    E.t["token_embd.weight"] = std::vector<float>(300 * 64, 0.0f);
    E.shape["token_embd.weight"] = {300, 64};
    const std::string path = dir.file("extra.pocket");
    write_drafter(E, path);
    auto m = BlockDrafterModel::load(path);
    ASSERT_FALSE(m);
    EXPECT_NE(m.status().message().find("'token_embd.weight' is not part"), std::string::npos) << m.status().message();
  }
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(D.config.to_json());
    edit(j);
    return j.dump();
  };
  expect_refused("block 0", with([](auto& j) { j["block_size"] = 0; }), "", "", {}, "block_size 0");
  expect_refused("block 17", with([](auto& j) { j["block_size"] = 17; }), "", "", {}, "block_size 17");
  expect_refused("layers", with([](auto& j) { j["target_layers"] = {1, 0}; }), "", "", {}, "target_layers");
  expect_refused("layer range", with([](auto& j) { j["target_layers"] = {0, 2}; }), "", "", {}, "target_layers");
  expect_refused("no target", with([](auto& j) { j.erase("target"); }), "", "", {}, "'target'");
  expect_refused("fingerprint", with([](auto& j) { j["target"]["fingerprint"] = "xxh3:12"; }), "", "", {},
                 "fingerprint");
  expect_refused("width", with([](auto& j) { j["target"]["n_embd"] = 32; }), "", "", {}, "n_embd");
  expect_refused("kind", with([](auto& j) { j.erase("kind"); }), "", "", {}, "not a drafter");
  // A model is not a drafter.
  auto m = BlockDrafterModel::load(target->package().path());
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("not a drafter"), std::string::npos) << m.status().message();
}

// --- Through the session -----------------------------------------------------------------------------------

SessionOptions one_thread(int64_t n_ctx = 0) {
  SessionOptions so;
  so.n_threads = 1;
  so.n_ctx = n_ctx;
  return so;
}

GenerateOptions greedy(int n) {
  GenerateOptions go;
  go.n_predict = n;
  go.stop_at_eos = false;
  return go;
}

std::unique_ptr<SpeculativeSession> block_session(std::shared_ptr<const Model> target, const std::string& path,
                                                  int32_t k = 8, bool adaptive = true, SessionOptions so = one_thread()) {
  SpeculativeOptions spec;
  spec.method = SpecMethod::kBlock;
  spec.draft_model_path = path;
  spec.draft_max = k;
  spec.adaptive = adaptive;
  spec.fallback.enabled = false;
  auto s = SpeculativeSession::create(std::move(target), so, spec);
  EXPECT_TRUE(s) << s.status().to_string();
  return s ? std::move(*s) : nullptr;
}

// A drafter that always drafts token `tok`: its blocks add nothing (zero output projections), so every
// block row after the anchor stays mask_embd, set to the row of the tied LM head (the target's output)
// whose argmax is `tok`.
DrafterTensors constant_drafter(const Model& target, int32_t tok, int32_t block) {
  DrafterTensors D = random_drafter(target, 1, {0, 1}, block, 9);
  const HParams& h = target.hparams();
  std::fill(D.t["blk.0.attn_output.weight"].begin(), D.t["blk.0.attn_output.weight"].end(), 0.0f);
  std::fill(D.t["blk.0.ffn_down.weight"].begin(), D.t["blk.0.ffn_down.weight"].end(), 0.0f);
  std::fill(D.t[kDrafterOutputNorm].begin(), D.t[kDrafterOutputNorm].end(), 1.0f);
  const WeightRef& out = target.weights().output;
  std::vector<float>& mask = D.t[kDrafterMaskEmbd];
  for (int64_t i = 0; i < h.n_embd; ++i) mask[static_cast<size_t>(i)] = 4.0f * out.f32()[tok * h.n_embd + i];
  return D;
}

TEST(BlockDrafter, GreedyEqualsPlainThroughSession) {
  TempDir dir;
  for (uint64_t seed : {21u, 23u}) {
    auto target = tiny_model(seed);
    const std::string random_path = dir.file("r" + std::to_string(seed) + ".pocket");
    write_drafter(random_drafter(*target, 2, {0, 1}, 8, seed), random_path);
    const auto prompts = testing::repetitive_prompts(4, 300, seed);
    int64_t accepted_total = 0;
    for (const auto& prompt : prompts) {
      const std::vector<int32_t> want = plain_generate(target, prompt, greedy(40));
      // The most frequent token of the greedy continuation: a drafter that always drafts it is right often.
      std::map<int32_t, int> freq;
      for (int32_t t : want) ++freq[t];
      const int32_t common = std::max_element(freq.begin(), freq.end(), [](auto& a, auto& b) {
                               return a.second < b.second;
                             })->first;
      const std::string const_path = dir.file("c" + std::to_string(seed) + "-" + std::to_string(common) + ".pocket");
      write_drafter(constant_drafter(*target, common, 8), const_path);
      for (const std::string& path : {random_path, const_path}) {
        for (int32_t k : {1, 3, 8}) {
          for (bool adaptive : {false, true}) {
            SCOPED_TRACE(path + " k " + std::to_string(k) + (adaptive ? " adaptive" : " fixed"));
            auto s = block_session(target, path, k, adaptive);
            ASSERT_TRUE(s);
            EXPECT_EQ(s->draft_max(), k);
            EXPECT_EQ(spec_generate(*s, prompt, greedy(40)), want);
            EXPECT_EQ(s->n_past(), static_cast<int64_t>(s->history().size()));
            EXPECT_GT(s->spec_stats().n_drafted, 0);
            if (path == const_path) accepted_total += s->spec_stats().n_accepted;
            // A second call continues the same context.
            const std::vector<int32_t> more = spec_generate(*s, {}, greedy(10));
            EXPECT_EQ(more.size(), 10u);
          }
        }
      }
    }
    EXPECT_GT(accepted_total, 0) << "the constant drafter was never right";
  }
}

TEST(BlockDrafter, BlockSizeLimitsDraftLength) {
  TempDir dir;
  auto target = tiny_model(21);
  const std::string path = dir.file("b4.pocket");
  write_drafter(random_drafter(*target, 1, {1}, 4, 5), path);
  auto s = block_session(target, path, 8);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->draft_max(), 4);
  ASSERT_NE(s->drafter(), nullptr);
  EXPECT_STREQ(s->drafter()->name(), "block");
}

// The trained drafter committed beside the default model: lossless and faster than one token per pass.
TEST(BlockDrafter, TrainedNanoDrafterIsLosslessAndAccepts) {
  const std::string root =
      std::filesystem::absolute(__FILE__).parent_path().parent_path().parent_path().string();  // the checkout
  // $POCKET_TEST_BLOCK_DRAFTER names another drafter for a package under models/ (trying one out).
  const char* env = std::getenv("POCKET_TEST_BLOCK_DRAFTER");
  const std::string drafter = env != nullptr ? std::string(env) : root + "/models/pocket-nano-drafter.pocket";
  if (!std::filesystem::exists(drafter)) {
    GTEST_SKIP() << "models/pocket-nano-drafter.pocket is absent: the trained block drafter is not committed yet";
  }
  auto dm = BlockDrafterModel::load(drafter);
  ASSERT_TRUE(dm) << dm.status().to_string();
  // Its target: the package under models/ whose weights it names (the fingerprint).
  std::string target_path;
  for (const auto& e : std::filesystem::directory_iterator(root + "/models")) {
    if (e.path().extension() != ".pocket" || e.path() == drafter) continue;
    auto p = Package::open(e.path().string());
    if (p && package_fingerprint(*p) == (*dm)->config().target_fingerprint) target_path = e.path().string();
  }
  ASSERT_FALSE(target_path.empty()) << "no package under models/ is the drafter's target '"
                                    << (*dm)->config().target_name << "' ("
                                    << fingerprint_string((*dm)->config().target_fingerprint) << ")";
  auto target = Model::load(target_path);
  ASSERT_TRUE(target) << target.status().to_string();
  // The task prompts: 4 per task and language from the held-out test split (pocket-train make-tasks --seed 1),
  // each rendered as `pocket bench --task-prompts` renders it.
  std::ifstream in(root + "/tests/speculative/data/task_prompts.jsonl");
  ASSERT_TRUE(in) << "tests/speculative/data/task_prompts.jsonl is missing";
  struct Prompt {
    std::string task;
    std::vector<ChatMessage> chat;
  };
  std::vector<Prompt> prompts;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    Prompt p{j.at("task").get<std::string>() + "/" + j.at("lang").get<std::string>(), {}};
    for (const auto& m : j.at("messages")) {
      p.chat.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
    }
    prompts.push_back(std::move(p));
  }
  ASSERT_EQ(prompts.size(), 40u);
  SessionOptions so;
  so.n_threads = 1;
  so.n_ctx = 512;
  auto s = block_session(*target, drafter, 8, true, so);
  ASSERT_TRUE(s);
  std::map<std::string, std::pair<int64_t, int64_t>> by_task;  // passes, accepted drafts
  int64_t passes = 0, accepted = 0;
  for (const Prompt& p : prompts) {
    SCOPED_TRACE(p.task + ": " + p.chat.back().content);
    auto ids = render_chat_ids(**target, p.chat, /*add_generation_prompt=*/true);
    ASSERT_TRUE(ids) << ids.status().to_string();
    GenerateOptions go = greedy(128);
    go.stop_at_eos = true;
    const std::vector<int32_t> want = plain_generate(*target, *ids, go, 512);
    s->reset();
    EXPECT_EQ(spec_generate(*s, *ids, go), want);
    by_task[p.task].first += s->spec_stats().n_passes;
    by_task[p.task].second += s->spec_stats().n_accepted;
    passes += s->spec_stats().n_passes;
    accepted += s->spec_stats().n_accepted;
  }
  ASSERT_GT(passes, 0);
  for (const auto& [task, pa] : by_task) {
    std::printf("trained block drafter, %-12s %.2f tokens per target pass\n", task.c_str(),
                static_cast<double>(pa.first + pa.second) / static_cast<double>(std::max<int64_t>(pa.first, 1)));
  }
  const double tokens_per_pass = static_cast<double>(accepted + passes) / static_cast<double>(passes);
  std::printf("trained block drafter: %.2f tokens per target pass over %lld passes\n", tokens_per_pass,
              static_cast<long long>(passes));
  if (env == nullptr) {  // the committed, trained drafter must draft well (docs/speculative.md has the figures)
    EXPECT_GT(tokens_per_pass, 2.0);
  }
}

// Sampling stays the target's distribution (the pattern and its power analysis are in
// speculative_session_test.cc, SamplingDistributionMatchesPlainChiSquare): the block drafter drafts the
// token the target samples most often at the drafted positions. The tiny random model is flat at the other
// test's temperature 0.5 (that token in 7 % of samples, too few acceptances); at 0.1 it is drawn in ~45 %,
// so both branches of the acceptance rule run often (~1800 acceptances, ~2500 rejections).
TEST(BlockDrafter, SamplingDistributionMatchesPlainChiSquare) {
  TempDir dir;
  auto target = tiny_model(13);
  const std::vector<int32_t> prompt = {17, 18, 19, 20};
  const std::string path = dir.file("c.pocket");
  auto plain = Session::create(target, one_thread());
  ASSERT_TRUE(plain);
  const int n_runs = 2000;
  const size_t pos = 2;
  std::map<int32_t, int64_t> plain_counts, spec_counts, mode_counts;
  auto options = [](uint64_t seed) {
    GenerateOptions go = greedy(3);
    go.sampling.temperature = 0.1f;
    go.sampling.top_k = 0;
    go.sampling.top_p = 1.0f;
    go.sampling.min_p = 0.0f;
    go.sampling.seed = seed;
    return go;
  };
  for (int r = 0; r < n_runs; ++r) {
    (*plain)->reset();
    std::vector<int32_t> a;
    ASSERT_TRUE((*plain)->generate_tokens(prompt, options(1000003u * r + 1), [&](int32_t id, std::string_view) {
      a.push_back(id);
      return true;
    }).is_ok());
    ASSERT_GT(a.size(), pos);
    ++plain_counts[a[pos]];
    ++mode_counts[a[1]];
    ++mode_counts[a[2]];
  }
  // The drafter drafts the token most often sampled at positions 1 and 2 (the ones it drafts for).
  const int32_t mode = std::max_element(mode_counts.begin(), mode_counts.end(), [](auto& a, auto& b) {
                         return a.second < b.second;
                       })->first;
  write_drafter(constant_drafter(*target, mode, 8), path);
  auto s = block_session(target, path, 4, /*adaptive=*/false);
  ASSERT_TRUE(s);
  int64_t drafted = 0, accepted = 0;
  for (int r = 0; r < n_runs; ++r) {
    s->reset();
    const std::vector<int32_t> b = spec_generate(*s, prompt, options(7777777u * r + 5));  // independent streams
    ASSERT_GT(b.size(), pos);
    ++spec_counts[b[pos]];
    drafted += s->spec_stats().n_drafted;
    accepted += s->spec_stats().n_accepted;
  }
  std::printf("block drafter, chi-square: %lld drafted, %lld accepted; the drafted token in %lld of %d plain samples\n",
              static_cast<long long>(drafted), static_cast<long long>(accepted),
              static_cast<long long>(mode_counts[mode]), 2 * n_runs);
  EXPECT_GT(accepted, n_runs / 4);
  EXPECT_GT(drafted - accepted, n_runs / 4);
  testing::expect_same_distribution(plain_counts, spec_counts);
}

// --- Memory --------------------------------------------------------------------------------------------

// The plan's figure for a drafter session is what the process holds after create(): a long context, so the
// cache is tens of MiB and the 16 MiB allowance (allocator and page granularity) is small beside it.
TEST(BlockDrafter, SessionBytesMatchMeasuredMemory) {
  TempDir dir;
  auto target = tiny_model(21);
  const std::string path = dir.file("d.pocket");
  write_drafter(random_drafter(*target, 2, {0, 1}, 8, 5), path);
  auto m = BlockDrafterModel::load(path);
  ASSERT_TRUE(m);
  const int64_t n_ctx = 1 << 18;
  ThreadPool pool(2);
  const uint64_t planned = (*m)->session_bytes(n_ctx, pool.n_threads());
  EXPECT_GT(planned, 64ull << 20);  // 2 layers x K and V x 2^18 positions x 32 f16
  EXPECT_EQ((*m)->session_plan(n_ctx, 2).session_total(), planned);
  EXPECT_EQ((*m)->session_plan(n_ctx, 2).weights, (*m)->package().file_size());
  const uint64_t before = read_process_memory().rss_bytes;
  auto d = PackagedBlockDrafter::create(target, *m, n_ctx, &pool);
  ASSERT_TRUE(d);
  const uint64_t after = read_process_memory().rss_bytes;
  if (before == 0) GTEST_SKIP() << "/proc/self/status unavailable";
  const double diff = std::fabs(static_cast<double>(after) - static_cast<double>(before) - static_cast<double>(planned));
  EXPECT_LT(diff, 16.0 * (1 << 20)) << "planned " << planned << ", measured " << (after - before);
}

TEST(BlockDrafter, SessionPlanCountsTheDrafterAndBudgetFallsBackToPlain) {
  TempDir dir;
  auto target = tiny_model(21);
  const std::string path = dir.file("d.pocket");
  write_drafter(random_drafter(*target, 2, {0, 1}, 8, 5), path);
  auto full = block_session(target, path, 8, true, one_thread(256));
  ASSERT_TRUE(full);
  auto m = BlockDrafterModel::load(path);
  ASSERT_TRUE(m);
  const MemoryPlan dp = (*m)->session_plan(256, 1);
  EXPECT_EQ(full->drafter_plan().total(), dp.total());
  EXPECT_EQ(full->plan().total(), full->transformer().plan().total() + dp.total());
  EXPECT_TRUE(full->spec_disabled_reason().empty());

  const std::vector<int32_t> prompt = {10, 11, 12, 10, 11};
  const std::vector<int32_t> want = plain_generate(target, prompt, greedy(20), 256);
  {  // the budget holds target and drafter exactly
    SessionOptions so = one_thread(256);
    so.mem_budget_bytes = full->plan().total();
    auto s = block_session(target, path, 8, true, so);
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->spec_disabled_reason().empty());
    EXPECT_NE(s->drafter(), nullptr);
  }
  {  // one byte less: the target fits alone, the session decodes plainly and says why
    SessionOptions so = one_thread(256);
    so.mem_budget_bytes = full->plan().total() - 1;
    auto s = block_session(target, path, 8, true, so);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->drafter(), nullptr);
    EXPECT_NE(s->spec_disabled_reason().find("memory budget"), std::string::npos) << s->spec_disabled_reason();
    EXPECT_EQ(s->drafter_plan().total(), 0u);
    EXPECT_LE(s->plan().total(), so.mem_budget_bytes);
    EXPECT_EQ(spec_generate(*s, prompt, greedy(20)), want);
    EXPECT_EQ(s->spec_stats().n_drafted, 0);
  }
  {  // a budget the target alone exceeds is still an error
    SessionOptions so = one_thread(256);
    so.mem_budget_bytes = 1 << 10;
    SpeculativeOptions spec;
    spec.method = SpecMethod::kBlock;
    spec.draft_model_path = path;
    auto s = SpeculativeSession::create(target, so, spec);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.status().code(), ErrorCode::kOutOfMemory);
  }
}

// --- The random-weight writer --------------------------------------------------------------------------

TEST(BlockDrafter, RandomDrafterWriterLoadsAndDrafts) {
  TempDir dir;
  for (DType t : {DType::kF32, DType::kF16, DType::kQ4G32, DType::kQ8G32}) {
    SCOPED_TRACE(dtype_name(t));
    auto target = tiny_model(31, t == DType::kF32 ? DType::kF32 : DType::kQ4G32);
    BlockDrafterSynthOptions o;
    o.dtype = t;
    o.n_layers = 2;
    const std::string path = dir.file(std::string("s-") + std::string(dtype_name(t)) + ".pocket");
    Status st = write_random_block_drafter(*target, o, path);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    auto m = BlockDrafterModel::load(path);
    ASSERT_TRUE(m) << m.status().to_string();
    EXPECT_EQ((*m)->config().target_layers, (std::vector<int32_t>{0, 1}));
    EXPECT_EQ((*m)->config().block_size, 8);
    auto s = block_session(target, path, 8, false);
    ASSERT_TRUE(s);
    const std::vector<int32_t> prompt = {10, 11, 12, 13};
    EXPECT_EQ(spec_generate(*s, prompt, greedy(24)), plain_generate(target, prompt, greedy(24)));
    EXPECT_GT(s->spec_stats().n_drafted, 0);
  }
  BlockDrafterSynthOptions bad;
  bad.block_size = 0;
  EXPECT_FALSE(write_random_block_drafter(*tiny_model(31), bad, dir.file("bad.pocket")).is_ok());
}

}  // namespace
}  // namespace pocket
