// Kernel selection where no SIMD table is built: the scalar reference only.
#include "kernels/tables.h"

namespace pocket::kernels {

int n_available() { return 1; }
const KernelTable& available(int) { return ref_table(); }
const KernelTable& active() { return ref_table(); }

}  // namespace pocket::kernels
