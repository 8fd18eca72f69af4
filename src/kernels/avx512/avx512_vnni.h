// AVX-512 VNNI kernels (x86-64; these files are compiled with AVX2/FMA/F16C plus AVX512F/BW/VL/VNNI flags and
// only called after dispatch has checked the CPU and the OS's ZMM/opmask state). They use VPDPBUSD on 256-bit
// registers (the EVEX encoding AVX512VL allows), so they also run at full speed on CPUs that split 512-bit
// operations into two halves (Zen 4). Contracts as in kernels.h; the table takes everything else from AVX2.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace pocket::kernels::avx512_vnni {

void matmul_q4g32r8(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                    int64_t r1);

// Attention with the key tile transposed and 4 query heads per register block (attention_avx512.cc).
void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1);

// Row operators on 16 lanes (ops_avx512.cc); contracts as in kernels.h.
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps);
void swiglu(float* gate, const float* up, int64_t n);

}  // namespace pocket::kernels::avx512_vnni
