// The per-ISA kernel tables (internal to kernels/): each is defined in its own folder's table file, which is
// compiled only where that ISA exists. dispatch_*.cc chooses among them.
#pragma once

#include "kernels/kernels.h"

namespace pocket::kernels {

const KernelTable& ref_table();
const KernelTable& avx2_table();          // x86-64 only: AVX2 + FMA + F16C
const KernelTable& avx512_vnni_table();   // x86-64 only: the AVX2 table with AVX-512 VNNI matmuls
const KernelTable& neon_table();          // aarch64 only: baseline NEON
const KernelTable& neon_dotprod_table();  // aarch64 only: NEON + SDOT (ARMv8.2 dotprod)

}  // namespace pocket::kernels
