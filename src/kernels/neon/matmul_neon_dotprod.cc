// NEON quantised matmuls with SDOT (ARMv8.2 dotprod; this file is compiled with +dotprod and only
// called when the CPU reports it): four int8 products summed into each int32 lane per instruction.
#include <arm_neon.h>

#include "kernels/neon/neon.h"
#include "kernels/tile_loop.h"
#include "quant/blocks.h"

namespace pocket::kernels::neon_dot {
namespace {

struct Dot {
  static int32x4_t acc(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
  // lane k += sum of the products of bytes 4k..4k+3 (SDOT's own grouping).
  static int32x4_t lanes4(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};

#include "kernels/neon/matmul_neon_impl.h"

}  // namespace

void matmul_q8g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1) {
  run(SymKernel<quant::BlockQ8G32, LoadQ8>{qargs(y, ldy, w, x, n, 32, 34)}, m, r0, r1);
}
void matmul_q4g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1) {
  run(SymKernel<quant::BlockQ4G32, LoadQ4>{qargs(y, ldy, w, x, n, 32, 18)}, m, r0, r1);
}
void matmul_q4g64(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1) {
  run(Q4G64Kernel{qargs(y, ldy, w, x, n, 64, 34)}, m, r0, r1);
}
void matmul_q4g32a(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                   int64_t r1) {
  run(Q4G32AKernel{qargs(y, ldy, w, x, n, 32, 20)}, m, r0, r1);
}

void matmul_q4g32r8(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                    int64_t r1) {
  run_r8(Q4R8Kernel{qargs(y, ldy, w, x, n, 32, 18)}, m, r0, r1);
}

}  // namespace pocket::kernels::neon_dot
