// Row operators (RMSNorm, softmax, RoPE, SwiGLU) and flash attention of every table against the scalar
// reference, and attention against a naive double-precision softmax(QK^T)V.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/ref/ops_ref.h"

namespace pocket::kernels {
namespace {

std::vector<float> random_vec(int64_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = dist(rng);
  return x;
}

const int64_t kLengths[] = {1, 7, 8, 64, 172, 1000, 2816};

// RMSNorm: the sum of squares is accumulated in a different order (8 lanes vs sequential). A sequential sum
// of n positive terms is within n * 2^-24 relative of the exact one (the lane version within n / 8 + 3), so
// the two scales differ by at most (n + n / 8 + 8) * 2^-24 relative, halved by the square root, plus 3
// roundings in the output products.
TEST(Ops, RmsNormMatchesRef) {
  std::mt19937 rng(1);
  for (int64_t n : kLengths) {
    const auto x = random_vec(n, rng), w = random_vec(n, rng);
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    available(0).rmsnorm(want.data(), x.data(), w.data(), n, 1e-5f);
    for (int ti = 1; ti < n_available(); ++ti) {
      available(ti).rmsnorm(got.data(), x.data(), w.data(), n, 1e-5f);
      const float rel = (static_cast<float>(n) * 1.125f + 8.0f) * 0x1p-24f;
      for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + 1e-30f) << n;
    }
  }
}

// Softmax: the SIMD exp is a polynomial with relative error < 2e-7 (math_*.h); the normalising sum of n
// positive terms is reordered, each order within (n + 8) * 2^-24 relative of the exact sum. So each
// probability is within relative 4e-7 + (1.125 n + 16) * 2^-24 (absolute 1e-9 for underflowing ones).
TEST(Ops, SoftmaxMatchesRef) {
  std::mt19937 rng(2);
  for (int64_t n : kLengths) {
    auto x = random_vec(n, rng, 5.0f);
    if (n > 3) x[2] = -100.0f;  // deep underflow region
    auto want = x, got = x;
    available(0).softmax(want.data(), n);
    for (int ti = 1; ti < n_available(); ++ti) {
      got = x;
      available(ti).softmax(got.data(), n);
      const float rel = 4e-7f + (static_cast<float>(n) * 1.125f + 16.0f) * 0x1p-24f;
      for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], rel * want[i] + 1e-9f) << n << " " << i;
    }
  }
}

// SwiGLU: silu via the SIMD exp (relative 2e-7) and one division: relative 1e-6.
TEST(Ops, SwigluMatchesRef) {
  std::mt19937 rng(3);
  for (int64_t n : kLengths) {
    auto g = random_vec(n, rng, 4.0f);
    const auto up = random_vec(n, rng);
    if (n > 2) g[0] = 100.0f, g[1] = -100.0f;
    auto want = g, got = g;
    available(0).swiglu(want.data(), up.data(), n);
    for (int ti = 1; ti < n_available(); ++ti) {
      got = g;
      available(ti).swiglu(got.data(), up.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], 1e-6f * std::fabs(want[i]) + 1e-30f) << n;
    }
  }
}

// RoPE: every table, given rope_angles' cosines and sines, against ops_ref's per-pair rope_neox /
// rope_interleaved, which compute the angles themselves (the same formula): the rotation is the same two
// products and a sum, possibly contracted to an FMA on some ISAs: absolute 1e-6 of the pair's magnitude.
TEST(Ops, RopeMatchesRef) {
  std::mt19937 rng(4);
  for (RopeStyle style : {RopeStyle::kInterleaved, RopeStyle::kNeox}) {
    for (int64_t hd : {8, 24, 64, 128}) {
      for (int64_t pos : {0, 1, 17, 511, 4000}) {
        const int64_t nh = 3;
        const auto x = random_vec(nh * hd, rng);
        auto want = x, got = x;
        for (int64_t h = 0; h < nh; ++h) {
          if (style == RopeStyle::kNeox) pocket::ref::rope_neox(want.data() + h * hd, hd, pos, 10000.0f);
          else pocket::ref::rope_interleaved(want.data() + h * hd, hd, pos, 10000.0f);
        }
        std::vector<float> cs(static_cast<size_t>(hd / 2)), sn(cs.size());
        rope_angles(cs.data(), sn.data(), hd, pos, 10000.0f);
        for (int ti = 0; ti < n_available(); ++ti) {
          got = x;
          available(ti).rope(got.data(), nh, hd, cs.data(), sn.data(), style);
          for (int64_t i = 0; i < nh * hd; ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-6f * 4.0f) << available(ti).name << " " << hd << " " << pos;
          }
        }
      }
    }
  }
}

// The KV cache write: every table's f32 -> f16 against core/half.h's f32_to_f16, bit for bit, over ties,
// subnormals, the overflow threshold, infinities, signed zeros, f32 subnormals and random bit patterns of
// every exponent, at lengths that leave every tail size; NaN must stay NaN.
TEST(Ops, F32ToF16MatchesCore) {
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e9f, INFINITY,
                          -INFINITY, 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-140f,
                          1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 0x1.ffcp-15f, 0x1.002p-14f, 5.9604645e-8f};
  std::mt19937 rng(6);
  for (int i = 0; i < 20000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    if ((bits & 0x7f800000u) == 0x7f800000u) bits &= 0xbfffffffu;  // no NaN (payloads may differ)
    float f;
    std::memcpy(&f, &bits, sizeof f);
    x.push_back(f);
    x.push_back(std::ldexp(static_cast<float>(rng() % 2048) + 0.5f, -static_cast<int>(rng() % 40)));  // ties
  }
  for (int ti = 0; ti < n_available(); ++ti) {
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{7}, int64_t{9}, int64_t{37}, static_cast<int64_t>(x.size())}) {
      std::vector<uint16_t> got(static_cast<size_t>(n), 0xdead);
      available(ti).f32_to_f16(got.data(), x.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i], f32_to_f16(x[i])) << available(ti).name << " " << x[i] << " n " << n;
      }
    }
    const float nan[3] = {NAN, -NAN, NAN};
    uint16_t h[3];
    available(ti).f32_to_f16(h, nan, 3);
    for (uint16_t v : h) EXPECT_TRUE(std::isnan(f16_to_f32(v))) << available(ti).name;
  }
}

struct Attn {
  AttentionShape s;
  std::vector<float> q;
  std::vector<uint16_t> k, v;
};

Attn make_attn(int64_t m, int64_t pos0, int64_t nh, int64_t nkv, int64_t hd, uint32_t seed) {
  std::mt19937 rng(seed);
  Attn a;
  a.s = AttentionShape{m, pos0, nh, nkv, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  a.q = random_vec(m * nh * hd, rng, 1.5f);
  const int64_t n_ctx = pos0 + m + 3;  // a cache longer than needed: the extra rows must be ignored
  for (const float f : random_vec(n_ctx * nkv * hd, rng, 1.5f)) a.k.push_back(f32_to_f16(f));
  for (const float f : random_vec(n_ctx * nkv * hd, rng)) a.v.push_back(f32_to_f16(f));
  return a;
}

std::vector<double> naive_attention(const Attn& a) {
  const auto& s = a.s;
  const int64_t g = s.n_heads / s.n_kv_heads, hd = s.head_dim;
  std::vector<double> out(static_cast<size_t>(s.m * s.n_heads * hd), 0.0);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t h = 0; h < s.n_heads; ++h) {
      const int64_t kvh = h / g, n_keys = s.pos0 + i + 1;
      std::vector<double> p(static_cast<size_t>(n_keys));
      double mx = -INFINITY, sum = 0.0;
      for (int64_t j = 0; j < n_keys; ++j) {
        double d = 0.0;
        for (int64_t e = 0; e < hd; ++e) {
          d += static_cast<double>(a.q[(i * s.n_heads + h) * hd + e]) * f16_to_f32(a.k[(j * s.n_kv_heads + kvh) * hd + e]);
        }
        p[j] = d * s.scale;
        mx = std::max(mx, p[j]);
      }
      for (auto& v : p) sum += (v = std::exp(v - mx));
      for (int64_t j = 0; j < n_keys; ++j) {
        for (int64_t e = 0; e < hd; ++e) {
          out[(i * s.n_heads + h) * hd + e] += p[j] / sum * f16_to_f32(a.v[(j * s.n_kv_heads + kvh) * hd + e]);
        }
      }
    }
  }
  return out;
}

struct AttnCase {
  int64_t m, pos0, nh, nkv, hd;
};
// head_dim 20: rows of the converted tiles are not 32-byte aligned (the AVX2 conversion stored them aligned).
const AttnCase kAttnCases[] = {{1, 0, 2, 2, 8},    {1, 130, 8, 2, 64}, {5, 0, 4, 1, 24},
                               {7, 60, 6, 3, 64},  {70, 0, 2, 1, 128}, {3, 200, 16, 1, 32},
                               {9, 70, 8, 2, 20}};

// Output is a convex combination of V rows (|v| ~ 1): float scores and weights (exp: relative 2e-7) and the
// tile-wise rescaling leave an absolute error under 1e-5 against double precision (checked for the reference
// here); the ISA versions differ from the reference only in summation order and exp, so each is held to the
// same 1e-5 against double, i.e. 2e-5 against the reference.
TEST(Attention, RefMatchesNaiveDouble) {
  uint32_t seed = 1;
  for (const AttnCase& c : kAttnCases) {
    const Attn a = make_attn(c.m, c.pos0, c.nh, c.nkv, c.hd, seed++);
    const auto want = naive_attention(a);
    std::vector<float> out(want.size(), NAN);
    available(0).attention(out.data(), a.q.data(), a.k.data(), a.v.data(), a.s, 0, c.m * c.nkv);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-5) << c.m << " " << c.pos0 << " " << i;
  }
}

TEST(Attention, EveryTableMatchesRef) {
  uint32_t seed = 50;
  for (const AttnCase& c : kAttnCases) {
    const Attn a = make_attn(c.m, c.pos0, c.nh, c.nkv, c.hd, seed++);
    std::vector<float> want(static_cast<size_t>(c.m * c.nh * c.hd)), got(want.size());
    available(0).attention(want.data(), a.q.data(), a.k.data(), a.v.data(), a.s, 0, c.m * c.nkv);
    for (int ti = 1; ti < n_available(); ++ti) {
      std::fill(got.begin(), got.end(), NAN);
      available(ti).attention(got.data(), a.q.data(), a.k.data(), a.v.data(), a.s, 0, c.m * c.nkv);
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-5) << available(ti).name << " " << i;
    }
  }
}

// Every row's output is bitwise the same however the tasks are split: one task per call (a decode step's
// row), runs of rows of one kv head (the pool wrapper's blocks, which share converted key/value tiles), or
// everything at once. Speculative verification relies on it: a verified row equals the decode step's.
TEST(Attention, RowsAreBitwiseIndependentOfTheSplit) {
  for (int ti = 0; ti < n_available(); ++ti) {
    uint32_t seed = 90;
    for (const AttnCase& c : kAttnCases) {
      const Attn a = make_attn(c.m, c.pos0, c.nh, c.nkv, c.hd, seed++);
      const auto& fn = available(ti).attention;
      const int64_t n = c.m * c.nkv;
      std::vector<float> all(static_cast<size_t>(c.m * c.nh * c.hd), NAN), one(all.size(), NAN), ragged(all.size(), NAN);
      fn(all.data(), a.q.data(), a.k.data(), a.v.data(), a.s, 0, n);
      for (int64_t t = 0; t < n; ++t) fn(one.data(), a.q.data(), a.k.data(), a.v.data(), a.s, t, t + 1);
      std::mt19937 rng(seed);
      for (int64_t t = 0; t < n;) {  // random runs, crossing kv heads too
        const int64_t e = std::min<int64_t>(n, t + 1 + static_cast<int64_t>(rng() % 23));
        fn(ragged.data(), a.q.data(), a.k.data(), a.v.data(), a.s, t, e);
        t = e;
      }
      EXPECT_EQ(std::memcmp(all.data(), one.data(), all.size() * sizeof(float)), 0)
          << available(ti).name << " m " << c.m << " pos0 " << c.pos0;
      EXPECT_EQ(std::memcmp(all.data(), ragged.data(), all.size() * sizeof(float)), 0)
          << available(ti).name << " m " << c.m << " pos0 " << c.pos0;
    }
  }
}

// The cache layout is a parameter: the same keys and values stored head-major ([n_kv_heads][n_ctx][head_dim],
// the model's cache, with spare positions) give every table bitwise the interleaved layout's output.
TEST(Attention, HeadMajorCacheMatchesInterleaved) {
  uint32_t seed = 120;
  for (const AttnCase& c : kAttnCases) {
    const Attn a = make_attn(c.m, c.pos0, c.nh, c.nkv, c.hd, seed++);
    const int64_t n_ctx = c.pos0 + c.m + 3, cap = n_ctx + 5;  // head stride longer than the used positions
    std::vector<uint16_t> kh(static_cast<size_t>(c.nkv * cap * c.hd), 0x7e00), vh(kh.size(), 0x7e00);  // NaN
    for (int64_t j = 0; j < n_ctx; ++j) {
      for (int64_t h = 0; h < c.nkv; ++h) {
        for (int64_t e = 0; e < c.hd; ++e) {
          kh[static_cast<size_t>((h * cap + j) * c.hd + e)] = a.k[static_cast<size_t>((j * c.nkv + h) * c.hd + e)];
          vh[static_cast<size_t>((h * cap + j) * c.hd + e)] = a.v[static_cast<size_t>((j * c.nkv + h) * c.hd + e)];
        }
      }
    }
    AttentionShape sh = a.s;
    sh.pos_stride = c.hd;
    sh.head_stride = cap * c.hd;
    for (int ti = 0; ti < n_available(); ++ti) {
      std::vector<float> want(static_cast<size_t>(c.m * c.nh * c.hd), NAN), got(want.size(), NAN);
      available(ti).attention(want.data(), a.q.data(), a.k.data(), a.v.data(), a.s, 0, c.m * c.nkv);
      available(ti).attention(got.data(), a.q.data(), kh.data(), vh.data(), sh, 0, c.m * c.nkv);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
          << available(ti).name << " m " << c.m << " pos0 " << c.pos0;
    }
  }
}

TEST(Attention, PoolWrapperMatchesSingleCall) {
  ThreadPool pool(2);
  const Attn a = make_attn(33, 40, 8, 2, 64, 9);
  std::vector<float> want(static_cast<size_t>(33 * 8 * 64)), got(want.size());
  active().attention(want.data(), a.q.data(), a.k.data(), a.v.data(), a.s, 0, 33 * 2);
  attention(pool, got.data(), a.q.data(), a.k.data(), a.v.data(), a.s);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace pocket::kernels
