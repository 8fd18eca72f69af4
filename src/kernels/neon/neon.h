// NEON kernels (aarch64). neon:: is baseline ARMv8-A; neon_dot:: holds the matmuls built with SDOT
// (ARMv8.2 dotprod, *_dotprod.cc), called only when the CPU reports HWCAP_ASIMDDP. Contracts as in kernels.h.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace pocket::kernels {

#define POCKET_NEON_MATMULS                                                                                  \
  void matmul_q8g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n,      \
                    int64_t r0, int64_t r1);                                                                 \
  void matmul_q4g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n,      \
                    int64_t r0, int64_t r1);                                                                 \
  void matmul_q4g64(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n,      \
                    int64_t r0, int64_t r1);                                                                 \
  void matmul_q4g32a(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n,     \
                     int64_t r0, int64_t r1);                                                                \
  void matmul_q4g32r8(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n,    \
                      int64_t r0, int64_t r1);

namespace neon {
POCKET_NEON_MATMULS
void matmul_f32(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1);
void matmul_f16(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1);
void quantize_act(ActBlock* out, const float* x, int64_t n);
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps);
void softmax(float* x, int64_t n);
void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cs, const float* sn, RopeStyle style);
void f32_to_f16(uint16_t* out, const float* in, int64_t n);
void swiglu(float* gate, const float* up, int64_t n);
void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1);
}  // namespace neon

namespace neon_dot {
POCKET_NEON_MATMULS
}  // namespace neon_dot

#undef POCKET_NEON_MATMULS

}  // namespace pocket::kernels
