// Small NEON helpers shared by the neon/ files.
#pragma once

#include <arm_neon.h>

namespace pocket::kernels::neon {

// e^x as in avx2/math_avx2.h: 2^n * p(r), degree-6 polynomial, relative error < 2e-7 on [-87, 88]; inputs
// below -87 give 0.
inline float32x4_t exp4(float32x4_t x) {
  const float32x4_t lo = vdupq_n_f32(-87.0f);
  const uint32x4_t under = vcltq_f32(x, lo);
  x = vminq_f32(vmaxq_f32(x, lo), vdupq_n_f32(88.0f));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.0f / 720.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  const float32x4_t res = vmulq_f32(p, vreinterpretq_f32_s32(e));
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(res), under));
}

}  // namespace pocket::kernels::neon
