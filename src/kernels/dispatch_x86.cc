// Kernel selection on x86-64: AVX2 + FMA + F16C when the CPU has them and the OS saves YMM state.
// (Compiled only on x86-64; dispatch_arm.cc and dispatch_generic.cc are the other builds' versions.)
#include <cpuid.h>

#include <cstdlib>
#include <string_view>

#include "kernels/tables.h"

namespace pocket::kernels {
namespace {

bool os_saves_ymm() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0x6u) == 0x6u;  // XMM and YMM state enabled by the OS
}

bool has_avx2_fma_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const bool osxsave = (c & (1u << 27)) != 0, avx = (c & (1u << 28)) != 0;
  const bool fma = (c & (1u << 12)) != 0, f16c = (c & (1u << 29)) != 0;
  if (!(osxsave && avx && fma && f16c) || !os_saves_ymm()) return false;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return (b & (1u << 5)) != 0;  // AVX2
}

// POCKET_KERNELS=ref forces the scalar table (for debugging and A/B measurements).
bool forced_ref() {
  const char* e = std::getenv("POCKET_KERNELS");
  return e != nullptr && std::string_view(e) == "ref";
}

}  // namespace

int n_available() { return has_avx2_fma_f16c() ? 2 : 1; }

const KernelTable& available(int i) { return i == 1 && has_avx2_fma_f16c() ? avx2_table() : ref_table(); }

const KernelTable& active() {
  static const KernelTable& t = forced_ref() ? ref_table() : available(n_available() - 1);
  return t;
}

}  // namespace pocket::kernels
