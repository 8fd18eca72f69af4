// Shared by the avx512/ attention and row-operator files, which are compiled with the AVX-512 flags and
// include it only there: the GCC 12 warning workaround and a mask helper. The helper sits in an anonymous
// namespace on purpose (each file gets its own copy), so no AVX-512 code can be merged into code that runs
// on other CPUs.
#pragma once

#include <immintrin.h>

#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC bug 105593, as in matmul_avx512_vnni.cc: the intrinsics' self-initialised "undefined" vectors,
// reported as (maybe) uninitialised once inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace pocket::kernels::avx512_vnni {
namespace {  // NOLINT(google-build-namespaces): one copy per AVX-512 file, see above

// The first n of 16 lanes (none for n <= 0, all for n >= 16).
inline __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

}  // namespace
}  // namespace pocket::kernels::avx512_vnni
