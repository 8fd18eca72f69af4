// The AVX-512 VNNI table: the AVX2 table with the VPDPBUSD matmuls, the AVX-512 attention and the 16-lane
// row operators.
#include "kernels/avx512/avx512_vnni.h"
#include "kernels/tables.h"

namespace pocket::kernels {

const KernelTable& avx512_vnni_table() {
  static const KernelTable t = [] {
    KernelTable k = avx2_table();
    k.name = "avx512-vnni";
    k.matmul_q4g32r8 = avx512_vnni::matmul_q4g32r8;
    k.attention = avx512_vnni::attention;
    k.rmsnorm = avx512_vnni::rmsnorm;
    k.swiglu = avx512_vnni::swiglu;
    return k;
  }();
  return t;
}

}  // namespace pocket::kernels
