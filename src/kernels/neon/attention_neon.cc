// NEON flash-style attention over an f16 KV cache: the tiling and online softmax of ref/attention_ref.cc,
// each K and V tile converted to f32 once and shared by the query heads of its GQA group and by every row of
// the call's block of rows.
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

// Rows [r0, r1) (at most kAttentionRows) of kv head kvh, each key/value tile converted to f32 once for all
// of them. Per row the arithmetic is the one-row computation's (same tiles, same order), so results do not
// depend on how rows are grouped.
void attention_rows(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
                    int64_t kvh, int64_t r0, int64_t r1) {
  const int64_t hd = s.head_dim, g = s.n_heads / s.n_kv_heads, kv_stride = s.n_kv_heads * hd;
  float score[kMaxGroup][kKeyTile];
  float kf[kKeyTile * kMaxHeadDim];
  float vf[kKeyTile * kMaxHeadDim];
  float run_max[kAttentionRows][kMaxGroup], run_sum[kAttentionRows][kMaxGroup];
  for (int64_t r = r0; r < r1; ++r) {
    std::fill(out + (r * s.n_heads + kvh * g) * hd, out + (r * s.n_heads + kvh * g + g) * hd, 0.0f);
    std::fill(run_max[r - r0], run_max[r - r0] + g, -INFINITY);
    std::fill(run_sum[r - r0], run_sum[r - r0] + g, 0.0f);
  }
  const int64_t keys_max = s.pos0 + r1;  // the last row's causal keys
  for (int64_t j0 = 0; j0 < keys_max; j0 += kKeyTile) {
    const int64_t nt_max = std::min(kKeyTile, keys_max - j0);
    for (int64_t j = 0; j < nt_max; ++j) {
      f16_row(kf + j * hd, k + (j0 + j) * kv_stride + kvh * hd, hd);
      f16_row(vf + j * hd, v + (j0 + j) * kv_stride + kvh * hd, hd);
    }
    for (int64_t r = std::max(r0, j0 - s.pos0); r < r1; ++r) {  // rows with keys in this tile
      const int64_t nt = std::min(kKeyTile, s.pos0 + r + 1 - j0);
      const float* qg = q + (r * s.n_heads + kvh * g) * hd;
      float* og = out + (r * s.n_heads + kvh * g) * hd;
      float* rmax = run_max[r - r0];
      float* rsum = run_sum[r - r0];
      for (int64_t j = 0; j < nt; ++j) {
        for (int64_t h = 0; h < g; ++h) score[h][j] = dot(qg + h * hd, kf + j * hd, hd) * s.scale;
      }
      for (int64_t h = 0; h < g; ++h) {
        float* sc = score[h];
        for (int64_t j = nt; j < (nt + 3) / 4 * 4; ++j) sc[j] = -INFINITY;
        float32x4_t vm = vdupq_n_f32(rmax[h]);
        for (int64_t j = 0; j < nt; j += 4) vm = vmaxq_f32(vm, vld1q_f32(sc + j));
        const float mx = vmaxvq_f32(vm);
        const float c = std::exp(rmax[h] - mx);
        rsum[h] *= c;
        scale(og + h * hd, c, hd);
        float32x4_t vs = vdupq_n_f32(0.0f);
        for (int64_t j = 0; j < nt; j += 4) {
          const float32x4_t p = exp4(vsubq_f32(vld1q_f32(sc + j), vdupq_n_f32(mx)));
          vst1q_f32(sc + j, p);
          vs = vaddq_f32(vs, p);
        }
        rsum[h] += vaddvq_f32(vs);
        rmax[h] = mx;
      }
      for (int64_t j = 0; j < nt; ++j) {
        for (int64_t h = 0; h < g; ++h) axpy(og + h * hd, score[h][j], vf + j * hd, hd);
      }
    }
  }
  for (int64_t r = r0; r < r1; ++r) {
    float* og = out + (r * s.n_heads + kvh * g) * hd;
    for (int64_t h = 0; h < g; ++h) scale(og + h * hd, 1.0f / run_sum[r - r0][h], hd);
  }
}

}  // namespace

void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1) {
  // Runs of consecutive rows of one kv head, in groups of at most kAttentionRows.
  for (int64_t t = t0; t < t1;) {
    const int64_t kvh = t / s.m, r0 = t % s.m;
    const int64_t r1 = std::min({s.m, r0 + kAttentionRows, r0 + (t1 - t)});
    attention_rows(out, q, k, v, s, kvh, r0, r1);
    t += r1 - r0;
  }
}

}  // namespace pocket::kernels::neon
