// ISA-neutral loop over register tiles for the matmul kernels: weight-row tiles of R outside, activation
// rows in tiles of C inside, so each weight block is fetched from memory once for all m activation rows and
// then reused from L1. Ragged edges fall back to R = 1 / C = 1 tiles.
#pragma once

#include <cstdint>

namespace pocket::kernels {

// K provides `template <int R, int C> void tile(int64_t r, int64_t i) const`, computing
// Y[i .. i + C, r .. r + R].
template <int R, int C, typename K>
inline void tile_loop(const K& k, int64_t m, int64_t r0, int64_t r1) {
  int64_t r = r0;
  for (; r + R <= r1; r += R) {
    int64_t i = 0;
    for (; i + C <= m; i += C) k.template tile<R, C>(r, i);
    for (; i < m; ++i) k.template tile<R, 1>(r, i);
  }
  for (; r < r1; ++r) {
    int64_t i = 0;
    for (; i + C <= m; i += C) k.template tile<1, C>(r, i);
    for (; i < m; ++i) k.template tile<1, 1>(r, i);
  }
}

// m == 1 (decode) and m > 1 (prefill) use different tile shapes.
template <int RV, int RM, int CM, typename K>
inline void matmul_tiles(const K& k, int64_t m, int64_t r0, int64_t r1) {
  if (m == 1) {
    tile_loop<RV, 1>(k, m, r0, r1);
  } else {
    tile_loop<RM, CM>(k, m, r0, r1);
  }
}

}  // namespace pocket::kernels
