// Scalar reference matmuls for every weight dtype (ground truth of the ISA versions; see kernels.h for the
// MatmulQFn / MatmulFFn contract).
#pragma once

#include <cstdint>

#include "quant/blocks.h"

namespace pocket::kernels::ref {

void matmul_q8g32(float* y, int64_t ldy, const uint8_t* w, const quant::ActBlock* x, int64_t m, int64_t n,
                  int64_t r0, int64_t r1);
void matmul_q4g32(float* y, int64_t ldy, const uint8_t* w, const quant::ActBlock* x, int64_t m, int64_t n,
                  int64_t r0, int64_t r1);
void matmul_q4g64(float* y, int64_t ldy, const uint8_t* w, const quant::ActBlock* x, int64_t m, int64_t n,
                  int64_t r0, int64_t r1);
void matmul_q4g32r8(float* y, int64_t ldy, const uint8_t* w, const quant::ActBlock* x, int64_t m, int64_t n,
                    int64_t r0, int64_t r1);
void matmul_q4g32a(float* y, int64_t ldy, const uint8_t* w, const quant::ActBlock* x, int64_t m, int64_t n,
                   int64_t r0, int64_t r1);
void matmul_f32(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1);
void matmul_f16(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1);

}  // namespace pocket::kernels::ref
