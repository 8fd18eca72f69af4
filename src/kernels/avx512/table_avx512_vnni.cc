// The AVX-512 VNNI table: the AVX2 table with the VPDPBUSD matmuls.
#include "kernels/avx512/avx512_vnni.h"
#include "kernels/tables.h"

namespace pocket::kernels {

const KernelTable& avx512_vnni_table() {
  static const KernelTable t = [] {
    KernelTable k = avx2_table();
    k.name = "avx512-vnni";
    k.matmul_q4g32r8 = avx512_vnni::matmul_q4g32r8;
    k.attention = avx512_vnni::attention;
    return k;
  }();
  return t;
}

}  // namespace pocket::kernels
