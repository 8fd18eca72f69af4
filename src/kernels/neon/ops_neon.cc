// Baseline NEON: float matmuls (F32, F16 weights), activation quantiser, RMSNorm, softmax, RoPE, SwiGLU.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "kernels/neon/math_neon.h"
#include "kernels/neon/neon.h"
#include "kernels/tile_loop.h"

namespace pocket::kernels::neon {
namespace {

struct LoadF32 {
  static float32x4_t vec(const uint8_t* p, int64_t e) { return vld1q_f32(reinterpret_cast<const float*>(p) + e); }
  static float one(const uint8_t* p, int64_t e) { return reinterpret_cast<const float*>(p)[e]; }
};
struct LoadF16 {
  static float32x4_t vec(const uint8_t* p, int64_t e) {
    return vcvt_f32_f16(vld1_f16(reinterpret_cast<const float16_t*>(p) + e));
  }
  static float one(const uint8_t* p, int64_t e) { return static_cast<float>(reinterpret_cast<const __fp16*>(p)[e]); }
};

template <typename WLoad>
struct FloatKernel {
  float* y;
  int64_t ldy;
  const uint8_t* w;
  const float* x;
  int64_t n;
  int64_t elem_bytes;
  template <int R, int C>
  void tile(int64_t r, int64_t i) const {
    float32x4_t acc[R][C];
    for (int k = 0; k < R; ++k)
      for (int c = 0; c < C; ++c) acc[k][c] = vdupq_n_f32(0.0f);
    const uint8_t* wr[R];
    for (int k = 0; k < R; ++k) wr[k] = w + (r + k) * n * elem_bytes;
    const int64_t n4 = n / 4 * 4;
    for (int64_t e = 0; e < n4; e += 4) {
      for (int k = 0; k < R; ++k) {
        const float32x4_t wv = WLoad::vec(wr[k], e);
        for (int c = 0; c < C; ++c) acc[k][c] = vfmaq_f32(acc[k][c], wv, vld1q_f32(x + (i + c) * n + e));
      }
    }
    for (int k = 0; k < R; ++k) {
      for (int c = 0; c < C; ++c) {
        float s = vaddvq_f32(acc[k][c]);
        for (int64_t e = n4; e < n; ++e) s += WLoad::one(wr[k], e) * x[(i + c) * n + e];
        y[(i + c) * ldy + r + k] = s;
      }
    }
  }
};

}  // namespace

void matmul_f32(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1) {
  matmul_tiles<4, 4, 4>(FloatKernel<LoadF32>{y, ldy, w, x, n, 4}, m, r0, r1);
}

void matmul_f16(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1) {
  matmul_tiles<4, 4, 4>(FloatKernel<LoadF16>{y, ldy, w, x, n, 2}, m, r0, r1);
}

void quantize_act(ActBlock* out, const float* x, int64_t n) {
  const int64_t nb = quant::act_blocks(n);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t k0 = b * 32;
    float32x4_t v[8];
    if (k0 + 32 <= n) {
      for (int j = 0; j < 8; ++j) v[j] = vld1q_f32(x + k0 + 4 * j);
    } else {
      float buf[32] = {};
      std::copy(x + k0, x + n, buf);
      for (int j = 0; j < 8; ++j) v[j] = vld1q_f32(buf + 4 * j);
    }
    float32x4_t m = vabsq_f32(v[0]);
    for (int j = 1; j < 8; ++j) m = vmaxq_f32(m, vabsq_f32(v[j]));
    const float amax = vmaxvq_f32(m);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    ActBlock& a = out[b];
    a.d = amax / 127.0f;
    int32x4_t sum = vdupq_n_s32(0);
    int16x8_t h[4];
    for (int j = 0; j < 4; ++j) {
      const int32x4_t q0 = vcvtnq_s32_f32(vmulq_n_f32(v[2 * j], id));  // nearest, ties to even
      const int32x4_t q1 = vcvtnq_s32_f32(vmulq_n_f32(v[2 * j + 1], id));
      sum = vaddq_s32(sum, vaddq_s32(q0, q1));
      h[j] = vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1));
    }
    vst1q_s8(a.q, vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1])));
    vst1q_s8(a.q + 16, vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3])));
    a.s = static_cast<float>(vaddvq_s32(sum)) * a.d;
    a.s8 = -8.0f * a.s;
  }
}

void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    acc = vfmaq_f32(acc, v, v);
  }
  float ss = vaddvq_f32(acc);
  for (; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (i = 0; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_f32(vld1q_f32(w + i), vmulq_n_f32(vld1q_f32(x + i), scale)));
  for (; i < n; ++i) out[i] = w[i] * (scale * x[i]);
}

void softmax(float* x, int64_t n) {
  float32x4_t vm = vdupq_n_f32(-INFINITY);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vm = vmaxq_f32(vm, vld1q_f32(x + i));
  float mx = vmaxvq_f32(vm);
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  float32x4_t vs = vdupq_n_f32(0.0f);
  for (i = 0; i + 4 <= n; i += 4) {
    const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), vdupq_n_f32(mx)));
    vst1q_f32(x + i, e);
    vs = vaddq_f32(vs, e);
  }
  float sum = vaddvq_f32(vs);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
  for (; i < n; ++i) x[i] *= inv;
}

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cs, const float* sn, RopeStyle style) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* p = x + h * head_dim;
    int64_t i = 0;
    if (style == RopeStyle::kNeox) {
      for (; i + 4 <= half; i += 4) {
        const float32x4_t a = vld1q_f32(p + i), b = vld1q_f32(p + half + i);
        const float32x4_t c = vld1q_f32(cs + i), s = vld1q_f32(sn + i);
        vst1q_f32(p + i, vsubq_f32(vmulq_f32(a, c), vmulq_f32(b, s)));
        vst1q_f32(p + half + i, vaddq_f32(vmulq_f32(a, s), vmulq_f32(b, c)));
      }
      for (; i < half; ++i) {
        const float a = p[i], b = p[half + i];
        p[i] = a * cs[i] - b * sn[i];
        p[half + i] = a * sn[i] + b * cs[i];
      }
    } else {
      for (; i + 4 <= half; i += 4) {
        float32x4x2_t v = vld2q_f32(p + 2 * i);  // de-interleaves the pairs: val[0] = a's, val[1] = b's
        const float32x4_t c = vld1q_f32(cs + i), s = vld1q_f32(sn + i);
        const float32x4_t a = v.val[0], b = v.val[1];
        v.val[0] = vsubq_f32(vmulq_f32(a, c), vmulq_f32(b, s));
        v.val[1] = vaddq_f32(vmulq_f32(a, s), vmulq_f32(b, c));
        vst2q_f32(p + 2 * i, v);
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
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t g = vld1q_f32(gate + i);
    const float32x4_t silu = vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(g))));
    vst1q_f32(gate + i, vmulq_f32(silu, vld1q_f32(up + i)));
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

// FCVTN (round to nearest even under the default FPCR): the same rounding, overflow and subnormals as
// core/half.h's f32_to_f16 (NaN payloads aside); the tail through a padded vector.
void f32_to_f16(uint16_t* out, const float* in, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(out + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(in + i))));
  if (i < n) {
    float f[4] = {};
    uint16_t h[4];
    std::copy(in + i, in + n, f);
    vst1_u16(h, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(f))));
    std::copy(h, h + (n - i), out + i);
  }
}

}  // namespace pocket::kernels::neon
