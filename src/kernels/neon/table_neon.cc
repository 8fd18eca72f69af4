// The NEON tables: baseline, and the same with the SDOT matmuls.
#include "kernels/neon/neon.h"
#include "kernels/tables.h"

namespace pocket::kernels {
namespace {

KernelTable base() {
  KernelTable k;
  k.name = "neon";
  k.matmul_q8g32 = neon::matmul_q8g32;
  k.matmul_q4g32 = neon::matmul_q4g32;
  k.matmul_q4g64 = neon::matmul_q4g64;
  k.matmul_q4g32a = neon::matmul_q4g32a;
  k.matmul_q4g32r8 = neon::matmul_q4g32r8;
  k.matmul_f32 = neon::matmul_f32;
  k.matmul_f16 = neon::matmul_f16;
  k.quantize_act = neon::quantize_act;
  k.rmsnorm = neon::rmsnorm;
  k.softmax = neon::softmax;
  k.rope = neon::rope;
  k.swiglu = neon::swiglu;
  k.attention = neon::attention;
  k.f32_to_f16 = neon::f32_to_f16;
  return k;
}

}  // namespace

const KernelTable& neon_table() {
  static const KernelTable t = base();
  return t;
}

const KernelTable& neon_dotprod_table() {
  static const KernelTable t = [] {
    KernelTable k = base();
    k.name = "neon-dotprod";
    k.matmul_q8g32 = neon_dot::matmul_q8g32;
    k.matmul_q4g32 = neon_dot::matmul_q4g32;
    k.matmul_q4g64 = neon_dot::matmul_q4g64;
    k.matmul_q4g32a = neon_dot::matmul_q4g32a;
    k.matmul_q4g32r8 = neon_dot::matmul_q4g32r8;
    return k;
  }();
  return t;
}

}  // namespace pocket::kernels
