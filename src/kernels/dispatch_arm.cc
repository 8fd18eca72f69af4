// Kernel selection on aarch64: NEON is part of the base ISA; SDOT (ARMv8.2 dotprod) is used when the kernel
// reports HWCAP_ASIMDDP. (Compiled only on aarch64.)
#include <sys/auxv.h>

#include <cstdlib>
#include <string_view>

#include "kernels/tables.h"

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

namespace pocket::kernels {
namespace {

bool has_dotprod() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

bool forced(std::string_view name) {
  const char* e = std::getenv("POCKET_KERNELS");
  return e != nullptr && std::string_view(e) == name;
}

}  // namespace

int n_available() { return has_dotprod() ? 3 : 2; }

const KernelTable& available(int i) {
  if (i == 2 && has_dotprod()) return neon_dotprod_table();
  return i >= 1 ? neon_table() : ref_table();
}

const KernelTable& active() {
  static const KernelTable& t = forced("ref")    ? ref_table()
                                : forced("neon") ? neon_table()
                                                 : available(n_available() - 1);
  return t;
}

}  // namespace pocket::kernels
