// NEON flash-style attention over an f16 KV cache: the tiling and online softmax of ref/attention_ref.cc,
// each K and V tile converted to f32 once and shared by the query heads of its GQA group and by every row of
// the call's block of rows.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention_blocks.h"
#include "kernels/neon/math_neon.h"
#include "kernels/neon/neon.h"

namespace pocket::kernels::neon {
namespace {

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

struct NeonOps {
  static void f16_row(float* out, const uint16_t* in, int64_t n) { neon::f16_row(out, in, n); }
  static void scale(float* y, float c, int64_t n) { neon::scale(y, c, n); }
  // The g heads of one row against nt keys of the converted tile: scores key by key for every head, the
  // running max and sum rescaled per head, then P·V key by key.
  static void row_tile(const float* qg, float* og, float* rmax, float* rsum, const float* kf, const float* vf,
                       int64_t g, int64_t hd, int64_t nt, float scale_qk) {
    float score[kMaxGroup][kAttentionKeyTile];
    for (int64_t j = 0; j < nt; ++j) {
      for (int64_t h = 0; h < g; ++h) score[h][j] = dot(qg + h * hd, kf + j * hd, hd) * scale_qk;
    }
    for (int64_t h = 0; h < g; ++h) {
      float* sc = score[h];
      for (int64_t j = nt; j < (nt + 3) / 4 * 4; ++j) sc[j] = -INFINITY;
      float32x4_t vm = vdupq_n_f32(rmax[h]);
      for (int64_t j = 0; j < nt; j += 4) vm = vmaxq_f32(vm, vld1q_f32(sc + j));
      const float mx = vmaxvq_f32(vm);
      const float c = std::exp(rmax[h] - mx);
      rsum[h] *= c;
      neon::scale(og + h * hd, c, hd);
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
};

}  // namespace

void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1) {
  attention_tasks<NeonOps>(out, q, k, v, s, t0, t1);
}

}  // namespace pocket::kernels::neon
