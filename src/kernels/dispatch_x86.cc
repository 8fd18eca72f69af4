// Kernel selection on x86-64: AVX2 + FMA + F16C when the CPU has them and the OS saves YMM state; on top of
// that AVX-512 VNNI (VPDPBUSD) when the CPU reports AVX512F/BW/VL/VNNI and the OS saves the opmask and ZMM
// state. (Compiled only on x86-64; dispatch_arm.cc and dispatch_generic.cc are the other builds' versions.)
#include <cpuid.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "kernels/tables.h"

namespace pocket::kernels {
namespace {

uint32_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return lo;
}

bool osxsave() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 27)) != 0;
}

bool has_avx2_fma_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const bool avx = (c & (1u << 28)) != 0, fma = (c & (1u << 12)) != 0, f16c = (c & (1u << 29)) != 0;
  if (!(osxsave() && avx && fma && f16c) || (xcr0() & 0x6u) != 0x6u) return false;  // XMM and YMM state
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return (b & (1u << 5)) != 0;  // AVX2
}

bool has_avx512_vnni() {
  if (!has_avx2_fma_f16c()) return false;
  if ((xcr0() & 0xE6u) != 0xE6u) return false;  // + opmask, ZMM_Hi256 and Hi16_ZMM state
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  const bool f = (b & (1u << 16)) != 0, bw = (b & (1u << 30)) != 0, vl = (b & (1u << 31)) != 0;
  const bool vnni = (c & (1u << 11)) != 0;
  return f && bw && vl && vnni;
}

int count() {
  static const int n = has_avx512_vnni() ? 3 : has_avx2_fma_f16c() ? 2 : 1;
  return n;
}

// POCKET_KERNELS=NAME forces an available table ("ref", "avx2", "avx512-vnni"), for debugging and A/B
// measurements; a name this CPU cannot run is reported once and the best table is used.
const KernelTable& choose() {
  const int best = count() - 1;
  const char* e = std::getenv("POCKET_KERNELS");
  if (e == nullptr || *e == '\0') return available(best);
  for (int i = 0; i <= best; ++i) {
    if (available(i).name == std::string_view(e)) return available(i);
  }
  std::fprintf(stderr, "pocket: POCKET_KERNELS=%s is not a kernel table this CPU can run; using %.*s\n", e,
               static_cast<int>(available(best).name.size()), available(best).name.data());
  return available(best);
}

}  // namespace

int n_available() { return count(); }

const KernelTable& available(int i) {
  if (i >= 2 && count() >= 3) return avx512_vnni_table();
  if (i >= 1 && count() >= 2) return avx2_table();
  return ref_table();
}

const KernelTable& active() {
  static const KernelTable& t = choose();
  return t;
}

}  // namespace pocket::kernels
