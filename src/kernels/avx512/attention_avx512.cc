// AVX-512 flash-style attention over an f16 KV cache, on the walk of kernels/attention_blocks.h (the same
// key tiles and online softmax as ref/attention_ref.cc and the AVX2 kernel).
//
// The AVX2 kernel forms each score as a dot product along head_dim and sums 8 of them horizontally, and
// walks the key tile once per query head: one load per multiply-add, bound by the load ports at about half
// of the FMA rate. Here the key tile is converted transposed (kt[e][j], keys across the 16 lanes; one 16 x
// 16 register transpose per block of 16 keys x 16 dims, shared by every row and head of the call's block),
// so the scores of up to 64 keys for up to 4 query heads of a row are 16 accumulators updated by one
// broadcast query element per head and one key vector per 16 keys: 16 multiply-adds per 8 loads, no
// horizontal sums. P·V likewise keeps 4 heads x 64 output dims in registers and loads each value row once
// for the 4 heads. Rows of the GQA group always come with their row, so a row's arithmetic is the same
// whatever rows are computed with it (speculative verification relies on that).
//
// The softmax runs in base 2 (scores scaled by scale * log2 e, weights 2^(s - max)): the exponential is then
// 12 vector operations with no rounding instruction, compare or call, and the 4 heads' maxima and sums are
// reduced together (reduce4). On the Intel Xeon VM this cut an 8-row block at depth 1024 from 319 to 300 us
// per layer, and unrolling the score and P·V loops by two to 291 us (BM_attention_row_blocks, one thread).
//
// This file is compiled with AVX-512 flags: everything stays in an anonymous namespace, no out-of-line
// library templates are called, so no AVX-512 code can be merged into code that runs on other CPUs.
#include <cmath>

#include "kernels/attention_blocks.h"
#include "kernels/avx512/avx512_vnni.h"
#include "kernels/avx512/common_avx512.h"

namespace pocket::kernels::avx512_vnni {
namespace {

constexpr int64_t kT = kAttentionKeyTile;  // row stride of the transposed key tile
static_assert(kT % 16 == 0 && kT <= 64);
constexpr int kMaxJ = static_cast<int>(kT / 16);  // key vectors per tile
constexpr int kHeads = 4;                         // query heads per register block

// 2^x for x <= 0 (and -inf), the scores already in base 2 (the scale carries log2 e): n = round(x) from the
// 1.5 * 2^23 rounding constant (plus the exponent bias 127, so the sum's low bits are n + 127), r = x - n in
// [-0.5, 0.5], 2^r by a degree-6 polynomial (near-minimax: relative error < 8e-8 evaluated in f32), times 2^n
// built by shifting n + 127 into the exponent field. x is clamped at -127, where n + 127 = 0 makes 2^n the
// bit pattern of +0: every lane below about -126.5 (e^-87.7), -inf included, comes out exactly 0, with no
// compare or mask. 12 operations, no rounding instruction and no call.
inline __m512 exp2_nonpositive(__m512 x) {
  const __m512 round_bias = _mm512_set1_ps(12583039.0f);  // 1.5 * 2^23 + 127
  x = _mm512_max_ps(x, _mm512_set1_ps(-127.0f));
  const __m512 t = _mm512_add_ps(x, round_bias);
  const __m512 r = _mm512_sub_ps(x, _mm512_sub_ps(t, round_bias));
  __m512 p = _mm512_set1_ps(1.53458110e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.33999309e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.61848907e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.55032864e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(2.40226462e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(6.93147182e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(t), 23)));
}

// Per-head horizontal reductions of up to 4 vectors at once (op is max or add): each 128-bit lane of the
// result holds [r0, r1, r2, r3], so _mm512_shuffle_ps(r, r, 0x55 * h) broadcasts head h. 13 operations for 4
// heads where 4 separate reductions take ~32, and a shorter dependency chain.
template <typename Op>
inline __m512 reduce4(__m512 v0, __m512 v1, __m512 v2, __m512 v3, Op op) {
  const __m512 t01 = op(_mm512_unpacklo_ps(v0, v1), _mm512_unpackhi_ps(v0, v1));  // per lane: a b a b
  const __m512 t23 = op(_mm512_unpacklo_ps(v2, v3), _mm512_unpackhi_ps(v2, v3));  // c d c d
  __m512 u = op(_mm512_shuffle_ps(t01, t23, 0x44), _mm512_shuffle_ps(t01, t23, 0xee));  // a b c d
  u = op(u, _mm512_shuffle_f32x4(u, u, 0x4e));
  return op(u, _mm512_shuffle_f32x4(u, u, 0xb1));
}

inline __m512 head_lane(__m512 r, int h) {
  switch (h) {
    case 0: return _mm512_shuffle_ps(r, r, 0x00);
    case 1: return _mm512_shuffle_ps(r, r, 0x55);
    case 2: return _mm512_shuffle_ps(r, r, 0xaa);
    default: return _mm512_shuffle_ps(r, r, 0xff);
  }
}

// Rows to columns: r[i] lane l -> r[l] lane i.
inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // r[4a + c], 128-bit lane L: column 4L + c of rows 4a .. 4a + 3.
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  // Column 4L + c gathers lane L of r[c], r[4 + c], r[8 + c], r[12 + c] (a 4 x 4 transpose of 128-bit lanes).
  __m512 o[16];
  for (int c = 0; c < 4; ++c) {
    const __m512 u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44), u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xee);
    const __m512 u2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
    const __m512 u3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xee);
    o[c] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    o[4 + c] = _mm512_shuffle_f32x4(u0, u2, 0xdd);
    o[8 + c] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    o[12 + c] = _mm512_shuffle_f32x4(u1, u3, 0xdd);
  }
  for (int i = 0; i < 16; ++i) r[i] = o[i];
}

// Keeps loaded vectors in registers: GCC otherwise folds the load into every multiply-add that uses the
// vector (a memory operand each), H loads per vector instead of one, and the loops became bound by the load
// ports (scores and P·V 1.1-1.2x slower at 8 rows x 4 heads, in-process A/B).
template <int N>
inline void pin(__m512 (&v)[N]) {
  static_assert(N >= 1 && N <= 4);
  if constexpr (N == 1) __asm__("" : "+v"(v[0]));
  if constexpr (N == 2) __asm__("" : "+v"(v[0]), "+v"(v[1]));
  if constexpr (N == 3) __asm__("" : "+v"(v[0]), "+v"(v[1]), "+v"(v[2]));
  if constexpr (N == 4) __asm__("" : "+v"(v[0]), "+v"(v[1]), "+v"(v[2]), "+v"(v[3]));
}

// Scores of H heads (q, stride hd) against NJ x 16 keys of the transposed tile, scaled (into base 2: scale2
// = scale * log2 e) and masked past nt, then the online softmax: rmax (base 2), rsum and the rescale factor c
// per head updated, the weights into p.
template <int H, int NJ>
inline void scores_softmax(float (*p)[kT], float* c, const float* q, const float* kt, int64_t hd, int64_t nt,
                           float scale2, float* rmax, float* rsum) {
  __m512 acc[H][NJ];
  for (int h = 0; h < H; ++h) {
    for (int j = 0; j < NJ; ++j) acc[h][j] = _mm512_setzero_ps();
  }
#pragma GCC unroll 2
  for (int64_t e = 0; e < hd; ++e) {
    __m512 kv[NJ];
#pragma GCC unroll 4
    for (int j = 0; j < NJ; ++j) kv[j] = _mm512_load_ps(kt + e * kT + 16 * j);
    pin(kv);
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
      const __m512 qb = _mm512_set1_ps(q[h * hd + e]);
#pragma GCC unroll 4
      for (int j = 0; j < NJ; ++j) acc[h][j] = _mm512_fmadd_ps(qb, kv[j], acc[h][j]);
    }
  }
  const __m512 vs = _mm512_set1_ps(scale2), ninf = _mm512_set1_ps(-INFINITY);
  const auto max_op = [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); };
  const auto add_op = [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); };
  __m512 vm[4];
  for (int h = 0; h < H; ++h) {
    acc[h][0] = _mm512_mask_mul_ps(ninf, first_lanes(nt), acc[h][0], vs);
    vm[h] = acc[h][0];
    for (int j = 1; j < NJ; ++j) {
      acc[h][j] = _mm512_mask_mul_ps(ninf, first_lanes(nt - 16 * j), acc[h][j], vs);
      vm[h] = _mm512_max_ps(vm[h], acc[h][j]);
    }
  }
  for (int h = H; h < 4; ++h) vm[h] = vm[0];
  // Lanes 0 .. H - 1 of every 128-bit lane: the running maxima (base 2), then the tile's, then the new ones.
  const __mmask8 mh = static_cast<__mmask8>((1u << H) - 1);
  const __m512 old_max = _mm512_broadcast_f32x4(_mm_maskz_loadu_ps(mh, rmax));
  const __m512 new_max = _mm512_max_ps(old_max, reduce4(vm[0], vm[1], vm[2], vm[3], max_op));
  const __m512 cv = exp2_nonpositive(_mm512_sub_ps(old_max, new_max));  // 0 on the first tile (-inf)
  _mm_mask_storeu_ps(c, mh, _mm512_castps512_ps128(cv));
  _mm_mask_storeu_ps(rmax, mh, _mm512_castps512_ps128(new_max));
  __m512 sum[4];
  for (int h = 0; h < H; ++h) {
    const __m512 vmx = head_lane(new_max, h);
    for (int j = 0; j < NJ; ++j) {
      const __m512 w = exp2_nonpositive(_mm512_sub_ps(acc[h][j], vmx));  // masked lanes -> 0
      _mm512_store_ps(p[h] + 16 * j, w);
      sum[h] = j == 0 ? w : _mm512_add_ps(sum[h], w);
    }
  }
  for (int h = H; h < 4; ++h) sum[h] = sum[0];
  const __m512 tile_sum = reduce4(sum[0], sum[1], sum[2], sum[3], add_op);
  const __m128 old_sum = _mm_maskz_loadu_ps(mh, rsum);
  _mm_mask_storeu_ps(rsum, mh,
                     _mm_fmadd_ps(old_sum, _mm512_castps512_ps128(cv), _mm512_castps512_ps128(tile_sum)));
}

// o_h = c_h * o_h + sum_j p_h[j] * vf[j] for H heads (o, stride hd), 64 dims at a time.
template <int H>
inline void pv(float* o, const float* c, const float (*p)[kT], const float* vf, int64_t hd, int64_t nt) {
  for (int64_t e0 = 0; e0 < hd; e0 += 64) {
    __mmask16 mu[4];
    for (int u = 0; u < 4; ++u) mu[u] = first_lanes(hd - e0 - 16 * u);
    __m512 acc[H][4];
    for (int h = 0; h < H; ++h) {
      const __m512 vc = _mm512_set1_ps(c[h]);
      for (int u = 0; u < 4; ++u) acc[h][u] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mu[u], o + h * hd + e0 + 16 * u), vc);
    }
    const bool full = hd - e0 >= 64;
#pragma GCC unroll 2
    for (int64_t j = 0; j < nt; ++j) {
      __m512 vv[4];
      if (full) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) vv[u] = _mm512_loadu_ps(vf + j * hd + e0 + 16 * u);
      } else {
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) vv[u] = _mm512_maskz_loadu_ps(mu[u], vf + j * hd + e0 + 16 * u);
      }
      pin(vv);
#pragma GCC unroll 4
      for (int h = 0; h < H; ++h) {
        const __m512 pb = _mm512_set1_ps(p[h][j]);
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) acc[h][u] = _mm512_fmadd_ps(pb, vv[u], acc[h][u]);
      }
    }
    for (int h = 0; h < H; ++h) {
      for (int u = 0; u < 4; ++u) _mm512_mask_storeu_ps(o + h * hd + e0 + 16 * u, mu[u], acc[h][u]);
    }
  }
}

template <int H>
inline void heads_tile(const float* q, float* o, float* rmax, float* rsum, const float* kt, const float* vf,
                       int64_t hd, int64_t nt, float scale) {
  alignas(64) float p[H][kT];
  float c[H];
  switch ((nt + 15) / 16) {
    case 1: scores_softmax<H, 1>(p, c, q, kt, hd, nt, scale, rmax, rsum); break;
    case 2: scores_softmax<H, 2>(p, c, q, kt, hd, nt, scale, rmax, rsum); break;
    case 3: scores_softmax<H, 3>(p, c, q, kt, hd, nt, scale, rmax, rsum); break;
    default: scores_softmax<H, kMaxJ>(p, c, q, kt, hd, nt, scale, rmax, rsum); break;
  }
  pv<H>(o, c, p, vf, hd, nt);
}

struct Avx512Ops {
  static constexpr bool kTransposedKeys = true;

  static void f16_row(float* out, const uint16_t* in, int64_t n) {
    for (int64_t e = 0; e < n; e += 16) {
      const __mmask16 m = first_lanes(n - e);
      _mm512_mask_storeu_ps(out + e, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, in + e)));
    }
  }

  // kt[e * kT + j] = k[j * stride + e] for e < hd, j < nt; zero for nt <= j < nt rounded up to 16.
  static void keys_transposed(float* kt, const uint16_t* k, int64_t stride, int64_t hd, int64_t nt) {
    for (int64_t j0 = 0; j0 < nt; j0 += 16) {
      for (int64_t e0 = 0; e0 < hd; e0 += 16) {
        const __mmask16 me = first_lanes(hd - e0);
        __m512 r[16];
        for (int i = 0; i < 16; ++i) {
          r[i] = j0 + i < nt ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(me, k + (j0 + i) * stride + e0))
                             : _mm512_setzero_ps();
        }
        transpose16(r);
        const int64_t ne = hd - e0 < 16 ? hd - e0 : 16;
        for (int64_t d = 0; d < ne; ++d) _mm512_store_ps(kt + (e0 + d) * kT + j0, r[d]);
      }
    }
  }

  static void scale(float* y, float c, int64_t n) {
    const __m512 vc = _mm512_set1_ps(c);
    for (int64_t e = 0; e < n; e += 16) {
      const __mmask16 m = first_lanes(n - e);
      _mm512_mask_storeu_ps(y + e, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + e), vc));
    }
  }

  // The g heads of one row against nt keys of the tile, kHeads at a time.
  static void row_tile(const float* qg, float* og, float* rmax, float* rsum, const float* kt, const float* vf,
                       int64_t g, int64_t hd, int64_t nt, float scale_qk) {
    const float scale2 = scale_qk * 1.44269504088896341f;  // scores in base 2 (exp2_nonpositive)
    int64_t h = 0;
    for (; h + kHeads <= g; h += kHeads) {
      heads_tile<kHeads>(qg + h * hd, og + h * hd, rmax + h, rsum + h, kt, vf, hd, nt, scale2);
    }
    switch (g - h) {
      case 3: heads_tile<3>(qg + h * hd, og + h * hd, rmax + h, rsum + h, kt, vf, hd, nt, scale2); break;
      case 2: heads_tile<2>(qg + h * hd, og + h * hd, rmax + h, rsum + h, kt, vf, hd, nt, scale2); break;
      case 1: heads_tile<1>(qg + h * hd, og + h * hd, rmax + h, rsum + h, kt, vf, hd, nt, scale2); break;
      default: break;
    }
  }
};

}  // namespace

void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1) {
  attention_tasks<Avx512Ops>(out, q, k, v, s, t0, t1);
}

}  // namespace pocket::kernels::avx512_vnni
