// AVX2 row operators: activation quantiser, RMSNorm, softmax, RoPE, SwiGLU. Tails are scalar.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/math_avx2.h"

namespace pocket::kernels::avx2 {

void quantize_act(ActBlock* out, const float* x, int64_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const int64_t nb = quant::act_blocks(n);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t k0 = b * 32;
    __m256 v[4];
    if (k0 + 32 <= n) {
      for (int j = 0; j < 4; ++j) v[j] = _mm256_loadu_ps(x + k0 + 8 * j);
    } else {  // ragged last block: zeros past n
      alignas(32) float buf[32] = {};
      std::copy(x + k0, x + n, buf);
      for (int j = 0; j < 4; ++j) v[j] = _mm256_load_ps(buf + 8 * j);
    }
    __m256 m = _mm256_andnot_ps(sign, v[0]);
    for (int j = 1; j < 4; ++j) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[j]));
    const float amax = hmax8(m);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    ActBlock& a = out[b];
    a.d = amax / 127.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int j = 0; j < 4; ++j) q[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], vid));  // ties to even
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_hadd_epi32(s4, s4);
    s4 = _mm_hadd_epi32(s4, s4);
    a.s = static_cast<float>(_mm_cvtsi128_si32(s4)) * a.d;
    a.s8 = -8.0f * a.s;
    // Pack 32-bit -> 16 -> 8 (saturating, values are within [-127, 127]); packs interleave 128-bit lanes,
    // the final permute restores element order.
    const __m256i p01 = _mm256_packs_epi32(q[0], q[1]);
    const __m256i p23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i p = _mm256_packs_epi16(p01, p23);
    const __m256i ordered = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.q), ordered);
  }
}

void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    acc = _mm256_fmadd_ps(v, v, acc);
  }
  float ss = hsum8(acc);
  for (; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  const __m256 vs = _mm256_set1_ps(scale);
  for (i = 0; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_mul_ps(vs, _mm256_loadu_ps(x + i))));
  }
  for (; i < n; ++i) out[i] = w[i] * (scale * x[i]);
}

void softmax(float* x, int64_t n) {
  __m256 vm = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
  float mx = hmax8(vm);
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  const __m256 vmx = _mm256_set1_ps(mx);
  __m256 vs = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
    _mm256_storeu_ps(x + i, e);
    vs = _mm256_add_ps(vs, e);
  }
  float sum = hsum8(vs);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  const __m256 vinv = _mm256_set1_ps(inv);
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
  for (; i < n; ++i) x[i] *= inv;
}

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cs, const float* sn, RopeStyle style) {
  // The row's angles (rope_angles) applied to every head with vector multiplies.
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* p = x + h * head_dim;
    int64_t i = 0;
    if (style == RopeStyle::kNeox) {
      for (; i + 8 <= half; i += 8) {
        const __m256 a = _mm256_loadu_ps(p + i), b = _mm256_loadu_ps(p + half + i);
        const __m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
        _mm256_storeu_ps(p + i, _mm256_sub_ps(_mm256_mul_ps(a, c), _mm256_mul_ps(b, s)));
        _mm256_storeu_ps(p + half + i, _mm256_add_ps(_mm256_mul_ps(a, s), _mm256_mul_ps(b, c)));
      }
      for (; i < half; ++i) {
        const float a = p[i], b = p[half + i];
        p[i] = a * cs[i] - b * sn[i];
        p[half + i] = a * sn[i] + b * cs[i];
      }
    } else {
      // Pairs (p[2i], p[2i+1]): 4 pairs per vector; duplicate each angle's cos/sin into both lanes.
      for (; i + 4 <= half; i += 4) {
        const __m256 v = _mm256_loadu_ps(p + 2 * i);
        const __m128 c4 = _mm_loadu_ps(cs + i), s4 = _mm_loadu_ps(sn + i);
        const __m256 c = _mm256_set_m128(_mm_unpackhi_ps(c4, c4), _mm_unpacklo_ps(c4, c4));
        const __m256 s = _mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4));
        const __m256 sw = _mm256_permute_ps(v, 0xb1);  // (b, a) per pair
        // even lanes: a c - b s; odd lanes: b c + a s
        _mm256_storeu_ps(p + 2 * i, _mm256_addsub_ps(_mm256_mul_ps(v, c), _mm256_mul_ps(sw, s)));
      }
      for (; i < half; ++i) {
        const float a = p[2 * i], b = p[2 * i + 1];
        p[2 * i] = a * cs[i] - b * sn[i];
        p[2 * i + 1] = a * sn[i] + b * cs[i];
      }
    }
  }
}

void swiglu(float* gate, const float* up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = exp8(_mm256_sub_ps(zero, g));
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

// VCVTPS2PH with round to nearest even: the same rounding, overflow and subnormals as core/half.h's
// f32_to_f16 (NaN payloads aside). The tail goes through a padded vector (calling the inline f32_to_f16
// from this AVX2-compiled file could leave an AVX2 copy of it for the linker to pick for baseline code).
void f32_to_f16(uint16_t* out, const float* in, int64_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRound));
  }
  if (i < n) {
    alignas(32) float f[8] = {};
    alignas(16) uint16_t h[8];
    std::copy(in + i, in + n, f);
    _mm_store_si128(reinterpret_cast<__m128i*>(h), _mm256_cvtps_ph(_mm256_load_ps(f), kRound));
    std::copy(h, h + (n - i), out + i);
  }
}

}  // namespace pocket::kernels::avx2
