// NEON flash-style attention over an f16 KV cache: the tiling and online softmax of ref/attention_ref.cc,
// each K and V row converted to f32 once and shared by the query heads of its GQA group.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "kernels/neon/math_neon.h"
#include "kernels/neon/neon.h"

namespace pocket::kernels::neon {
namespace {

constexpr int64_t kKeyTile = 64;

inline void f16_row(float* out, const uint16_t* in, int64_t n) {
  const auto* h = reinterpret_cast<const float16_t*>(in);
  int64_t e = 0;
  for (; e + 4 <= n; e += 4) vst1q_f32(out + e, vcvt_f32_f16(vld1_f16(h + e)));
  for (; e < n; ++e) out[e] = static_cast<float>(reinterpret_cast<const __fp16*>(in)[e]);
}

inline float dot(const float* a, const float* b, int64_t n) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  int64_t e = 0;
  for (; e + 4 <= n; e += 4) acc = vfmaq_f32(acc, vld1q_f32(a + e), vld1q_f32(b + e));
  float s = vaddvq_f32(acc);
  for (; e < n; ++e) s += a[e] * b[e];
  return s;
}

inline void scale(float* y, float c, int64_t n) {
  int64_t e = 0;
  for (; e + 4 <= n; e += 4) vst1q_f32(y + e, vmulq_n_f32(vld1q_f32(y + e), c));
  for (; e < n; ++e) y[e] *= c;
}

inline void axpy(float* y, float a, const float* x, int64_t n) {
  int64_t e = 0;
  for (; e + 4 <= n; e += 4) vst1q_f32(y + e, vfmaq_n_f32(vld1q_f32(y + e), vld1q_f32(x + e), a));
  for (; e < n; ++e) y[e] += a * x[e];
}

}  // namespace

void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1) {
  const int64_t hd = s.head_dim, g = s.n_heads / s.n_kv_heads, kv_stride = s.n_kv_heads * hd;
  float score[kMaxGroup][kKeyTile];
  float row[kMaxHeadDim];
  float run_max[kMaxGroup], run_sum[kMaxGroup];
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t qi = t % s.m, kvh = t / s.m;
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
        for (int64_t j = nt; j < (nt + 3) / 4 * 4; ++j) sc[j] = -INFINITY;
        float32x4_t vm = vdupq_n_f32(run_max[h]);
        for (int64_t j = 0; j < nt; j += 4) vm = vmaxq_f32(vm, vld1q_f32(sc + j));
        const float mx = vmaxvq_f32(vm);
        const float c = std::exp(run_max[h] - mx);
        run_sum[h] *= c;
        scale(og + h * hd, c, hd);
        float32x4_t vs = vdupq_n_f32(0.0f);
        for (int64_t j = 0; j < nt; j += 4) {
          const float32x4_t p = exp4(vsubq_f32(vld1q_f32(sc + j), vdupq_n_f32(mx)));
          vst1q_f32(sc + j, p);
          vs = vaddq_f32(vs, p);
        }
        run_sum[h] += vaddvq_f32(vs);
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

}  // namespace pocket::kernels::neon
