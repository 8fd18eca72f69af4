// AVX2 flash-style attention over an f16 KV cache: the same tiling and online softmax as ref/attention_ref.cc.
// Per key tile, the K and V rows are converted to f32 once (F16C) into L1 buffers shared by all query heads
// of the GQA group and all rows of the call's block (kernels/attention_blocks.h). Scores are computed 8 keys at a time (8 accumulators, then one transposing reduction
// instead of 8 horizontal sums), and P·V keeps each 64-wide slice of the output in registers across the
// whole tile instead of loading and storing it once per key.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention_blocks.h"
#include "kernels/avx2/avx2.h"
#include "kernels/avx2/math_avx2.h"

namespace pocket::kernels::avx2 {
namespace {

inline void f16_row(float* out, const uint16_t* in, int64_t n) {
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    _mm256_storeu_ps(out + e, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + e))));
  }
  for (; e < n; ++e) out[e] = _cvtsh_ss(in[e]);
}

inline float dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + e), _mm256_loadu_ps(b + e), acc);
  float s = hsum8(acc);
  for (; e < n; ++e) s += a[e] * b[e];
  return s;
}

// The 8 horizontal sums of a[0..7] as one vector (lane k = sum of a[k]).
inline __m256 reduce8(const __m256 (&a)[8]) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// sc[j] = scale * q · kf[j] for j in [0, nt); kf rows have stride hd (a multiple of 8 on the fast path).
inline void scores(float* sc, const float* q, const float* kf, int64_t hd, int64_t nt, float scale) {
  int64_t j = 0;
  if (hd % 8 == 0) {
    const __m256 vs = _mm256_set1_ps(scale);
    for (; j + 8 <= nt; j += 8) {
      __m256 acc[8];
      for (int kk = 0; kk < 8; ++kk) acc[kk] = _mm256_setzero_ps();
      for (int64_t e = 0; e < hd; e += 8) {
        const __m256 qv = _mm256_loadu_ps(q + e);
#pragma GCC unroll 8
        for (int kk = 0; kk < 8; ++kk) acc[kk] = _mm256_fmadd_ps(qv, _mm256_load_ps(kf + (j + kk) * hd + e), acc[kk]);
      }
      _mm256_store_ps(sc + j, _mm256_mul_ps(reduce8(acc), vs));
    }
  }
  for (; j < nt; ++j) sc[j] = dot(q, kf + j * hd, hd) * scale;
}

// o[0..hd) = c * o + sum_j p[j] * vf[j], vf rows with stride hd.
inline void pv(float* o, float c, const float* p, const float* vf, int64_t hd, int64_t nt) {
  const __m256 vc = _mm256_set1_ps(c);
  int64_t e = 0;
  for (; e + 64 <= hd; e += 64) {  // 8 accumulators: one 64-wide slice of the output
    __m256 acc[8];
    for (int u = 0; u < 8; ++u) acc[u] = _mm256_mul_ps(_mm256_loadu_ps(o + e + 8 * u), vc);
    for (int64_t j = 0; j < nt; ++j) {
      const __m256 pj = _mm256_broadcast_ss(p + j);
      const float* vr = vf + j * hd + e;
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) acc[u] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr + 8 * u), acc[u]);
    }
    for (int u = 0; u < 8; ++u) _mm256_storeu_ps(o + e + 8 * u, acc[u]);
  }
  for (; e + 8 <= hd; e += 8) {
    __m256 acc = _mm256_mul_ps(_mm256_loadu_ps(o + e), vc);
    for (int64_t j = 0; j < nt; ++j) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j), _mm256_loadu_ps(vf + j * hd + e), acc);
    _mm256_storeu_ps(o + e, acc);
  }
  for (; e < hd; ++e) {
    float acc = o[e] * c;
    for (int64_t j = 0; j < nt; ++j) acc += p[j] * vf[j * hd + e];
    o[e] = acc;
  }
}

struct Avx2Ops {
  static void f16_row(float* out, const uint16_t* in, int64_t n) { avx2::f16_row(out, in, n); }
  static void scale(float* y, float c, int64_t n) {
    for (int64_t e = 0; e < n; ++e) y[e] *= c;
  }
  // The g heads of one row against nt keys of the converted tile: scores 8 keys at a time, the running max
  // and sum rescaled, P·V into the row's numerators.
  static void row_tile(const float* qg, float* og, float* rmax, float* rsum, const float* kf, const float* vf,
                       int64_t g, int64_t hd, int64_t nt, float scale_qk) {
    alignas(32) float sc[kAttentionKeyTile];
    for (int64_t h = 0; h < g; ++h) {
      scores(sc, qg + h * hd, kf, hd, nt, scale_qk);
      for (int64_t j = nt; j < (nt + 7) / 8 * 8; ++j) sc[j] = -INFINITY;  // pad the last vector
      __m256 vm = _mm256_set1_ps(rmax[h]);
      for (int64_t j = 0; j < nt; j += 8) vm = _mm256_max_ps(vm, _mm256_load_ps(sc + j));
      const float mx = hmax8(vm);
      const float c = std::exp(rmax[h] - mx);  // 0 on the first tile
      const __m256 vmx = _mm256_set1_ps(mx);
      __m256 vs = _mm256_setzero_ps();
      for (int64_t j = 0; j < nt; j += 8) {
        const __m256 p = exp8(_mm256_sub_ps(_mm256_load_ps(sc + j), vmx));  // padded lanes -> 0
        _mm256_store_ps(sc + j, p);
        vs = _mm256_add_ps(vs, p);
      }
      rsum[h] = rsum[h] * c + hsum8(vs);
      rmax[h] = mx;
      pv(og + h * hd, c, sc, vf, hd, nt);
    }
  }
};

}  // namespace

void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1) {
  attention_tasks<Avx2Ops>(out, q, k, v, s, t0, t1);
}

}  // namespace pocket::kernels::avx2
