// AVX-512 row operators: RMSNorm and SwiGLU on 16 lanes. These are per-row work (a verify pass of 8 rows does
// 8 times a decode step's), so unlike the weight stream they grow with the rows. Tails are masked loads and
// stores, not scalar loops. (A 16-lane activation quantiser, two vectors per block and 512-bit horizontal
// reductions, ran 1.17x slower than the AVX2 one, so the table keeps that.)
//
// This file is compiled with AVX-512 flags: everything stays in an anonymous namespace or the avx512_vnni
// namespace, no out-of-line library templates are called, so no AVX-512 code can be merged into code that
// runs on other CPUs.
#include <cmath>

#include "kernels/avx512/avx512_vnni.h"
#include "kernels/avx512/common_avx512.h"

namespace pocket::kernels::avx512_vnni {
namespace {

// e^x, the AVX2 exp8 (avx2/math_avx2.h) on 16 lanes: 2^n * p(r), relative error < 2e-7 on [-87, 88]; below
// -87 0, above 88 clamped.
inline __m512 exp16(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.0f);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, lo), _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(static_cast<__mmask16>(~under), p, _mm512_castsi512_ps(e));
}

}  // namespace

// The sum of squares in 16 lanes (two accumulators, so the FMA latency does not bind), then the reference's
// out = w * (scale * x).
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
    acc1 = _mm512_fmadd_ps(b, b, acc1);
  }
  for (; i < n; i += 16) {
    const __m512 a = _mm512_maskz_loadu_ps(first_lanes(n - i), x + i);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
  }
  const float ss = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  const __m512 vs = _mm512_set1_ps(scale);
  for (i = 0; i < n; i += 16) {
    const __mmask16 m = first_lanes(n - i);
    const __m512 v =
        _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + i), _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(m, x + i)));
    _mm512_mask_storeu_ps(out + i, m, v);
  }
}

// gate = g / (1 + e^-g) * up. The division is a reciprocal estimate (VRCP14PS, relative error < 2^-14) with
// one Newton step (error ~2^-28 before rounding, a few ulp after): a third of the time of VDIVPS at 16 lanes.
void swiglu(float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = first_lanes(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 d = _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), g)));
    __m512 r = _mm512_rcp14_ps(d);
    r = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, two));
    _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(_mm512_mul_ps(g, r), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace pocket::kernels::avx512_vnni
