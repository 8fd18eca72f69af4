// The AVX2 + FMA + F16C table.
#include "kernels/avx2/avx2.h"
#include "kernels/tables.h"

namespace pocket::kernels {

const KernelTable& avx2_table() {
  static const KernelTable t = [] {
    KernelTable k;
    k.name = "avx2";
    k.matmul_q8g32 = avx2::matmul_q8g32;
    k.matmul_q4g32 = avx2::matmul_q4g32;
    k.matmul_q4g64 = avx2::matmul_q4g64;
    k.matmul_q4g32a = avx2::matmul_q4g32a;
    k.matmul_q4g32r8 = avx2::matmul_q4g32r8;
    k.matmul_f32 = avx2::matmul_f32;
    k.matmul_f16 = avx2::matmul_f16;
    k.quantize_act = avx2::quantize_act;
    k.rmsnorm = avx2::rmsnorm;
    k.softmax = avx2::softmax;
    k.rope = avx2::rope;
    k.swiglu = avx2::swiglu;
    k.attention = avx2::attention;
    k.f32_to_f16 = avx2::f32_to_f16;
    return k;
  }();
  return t;
}

}  // namespace pocket::kernels
