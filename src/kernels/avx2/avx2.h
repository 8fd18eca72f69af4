// AVX2 + FMA + F16C kernels (x86-64; these files are compiled with -mavx2 -mfma -mf16c and only called
// after dispatch has checked the CPU). Contracts as in kernels.h.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace pocket::kernels::avx2 {

void matmul_q8g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1);
void matmul_q4g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1);
void matmul_q4g64(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1);
void matmul_q4g32a(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                   int64_t r1);
void matmul_q4g32r8(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                    int64_t r1);
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

}  // namespace pocket::kernels::avx2
