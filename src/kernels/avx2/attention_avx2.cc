// AVX2 flash-style attention over an f16 KV cache: the same tiling and online softmax as ref/attention_ref.cc,
// with each K and V row converted to f32 once (F16C) and shared by all query heads of its GQA group.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/math_avx2.h"

namespace pocket::kernels::avx2 {
namespace {

constexpr int64_t kKeyTile = 64;

inline void f16_row(float* out, const uint16_t* in, int64_t n) {
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    _mm256_store_ps(out + e, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + e))));
  }
  for (; e < n; ++e) out[e] = _cvtsh_ss(in[e]);
}

inline float dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + e), _mm256_load_ps(b + e), acc);
  float s = hsum8(acc);
  for (; e < n; ++e) s += a[e] * b[e];
  return s;
}

// y *= c (c is 0 on the first tile, exp(-inf))
inline void scale(float* y, float c, int64_t n) {
  const __m256 vc = _mm256_set1_ps(c);
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) _mm256_storeu_ps(y + e, _mm256_mul_ps(_mm256_loadu_ps(y + e), vc));
  for (; e < n; ++e) y[e] *= c;
}

inline void axpy(float* y, float a, const float* x, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) _mm256_storeu_ps(y + e, _mm256_fmadd_ps(va, _mm256_load_ps(x + e), _mm256_loadu_ps(y + e)));
  for (; e < n; ++e) y[e] += a * x[e];
}

}  // namespace

void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1) {
  const int64_t hd = s.head_dim, g = s.n_heads / s.n_kv_heads, kv_stride = s.n_kv_heads * hd;
  alignas(32) float score[kMaxGroup][kKeyTile];
  alignas(32) float row[kMaxHeadDim];
  float run_max[kMaxGroup], run_sum[kMaxGroup];
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t qi = t / s.n_kv_heads, kvh = t % s.n_kv_heads;
    const int64_t n_keys = s.pos0 + qi + 1;
    const float* qg = q + (qi * s.n_heads + kvh * g) * hd;
    float* og = out + (qi * s.n_heads + kvh * g) * hd;
    std::fill(og, og + g * hd, 0.0f);
    std::fill(run_max, run_max + g, -INFINITY);
    std::fill(run_sum, run_sum + g, 0.0f);
    for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyTile) {
      const int64_t nt = std::min(kKeyTile, n_keys - j0);
      for (int64_t j = 0; j < nt; ++j) {
        f16_row(row, k + (j0 + j) * kv_stride + kvh * hd, hd);
        for (int64_t h = 0; h < g; ++h) score[h][j] = dot(qg + h * hd, row, hd) * s.scale;
      }
      for (int64_t h = 0; h < g; ++h) {
        float* sc = score[h];
        for (int64_t j = nt; j < (nt + 7) / 8 * 8; ++j) sc[j] = -INFINITY;  // pad the last vector
        __m256 vm = _mm256_set1_ps(run_max[h]);
        for (int64_t j = 0; j < nt; j += 8) vm = _mm256_max_ps(vm, _mm256_load_ps(sc + j));
        const float mx = hmax8(vm);
        const float c = std::exp(run_max[h] - mx);  // 0 on the first tile
        run_sum[h] *= c;
        scale(og + h * hd, c, hd);
        const __m256 vmx = _mm256_set1_ps(mx);
        __m256 vs = _mm256_setzero_ps();
        for (int64_t j = 0; j < nt; j += 8) {
          const __m256 p = exp8(_mm256_sub_ps(_mm256_load_ps(sc + j), vmx));  // padded lanes -> 0
          _mm256_store_ps(sc + j, p);
          vs = _mm256_add_ps(vs, p);
        }
        run_sum[h] += hsum8(vs);
        run_max[h] = mx;
      }
      for (int64_t j = 0; j < nt; ++j) {
        f16_row(row, v + (j0 + j) * kv_stride + kvh * hd, hd);
        for (int64_t h = 0; h < g; ++h) axpy(og + h * hd, score[h][j], row, hd);
      }
    }
    for (int64_t h = 0; h < g; ++h) scale(og + h * hd, 1.0f / run_sum[h], hd);
  }
}

}  // namespace pocket::kernels::avx2
