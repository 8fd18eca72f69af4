// ISA-neutral loop over register tiles for the matmul kernels, blocked for the caches.
//
// Decode (m == 1): weight-row tiles of RV against the single activation row; the weights stream from DRAM
// once and the activation row stays in L1.
//
// Batched (m > 1, prefill and speculative verification): the thread's weight rows are cut into blocks that
// fit in L2 (about kWeightBlockBytes); for each block, the activation rows are walked in tiles of CM, and for
// each activation tile (C rows, a few KB: L1-resident) every RM-row weight tile of the block is applied.
// Each weight block is thus read from DRAM once for all m rows, the activation tile is reused from L1 for
// the whole block, and the weights of the block are reused from L2 for every activation tile. (Walking all
// m activation rows for every weight tile instead streams m * n * 40 / 32 bytes of activations through L2 per
// weight tile: at m = 512 that is 0.6-1.8 MB, more than L2, and the kernel stalls on L3.)
// Ragged edges fall back to R = 1 tiles and C = 2, then C = 1 tiles.
#pragma once

#include <algorithm>
#include <cstdint>

namespace pocket::kernels {

inline constexpr int64_t kWeightBlockBytes = 128 * 1024;

// K provides `template <int R, int C> void tile(int64_t r, int64_t i) const`, computing
// Y[i .. i + C, r .. r + R].
template <int R, int C, typename K>
inline void tile_rows(const K& k, int64_t i, int64_t rb, int64_t re) {
  int64_t r = rb;
  for (; r + R <= re; r += R) k.template tile<R, C>(r, i);
  for (; r < re; ++r) k.template tile<1, C>(r, i);
}

template <int R, int C, typename K>
inline void tile_loop(const K& k, int64_t m, int64_t r0, int64_t r1, int64_t weight_row_bytes = 0) {
  int64_t block = r1 - r0;
  if (weight_row_bytes > 0) block = std::max<int64_t>(R, kWeightBlockBytes / weight_row_bytes / R * R);
  for (int64_t rb = r0; rb < r1; rb += block) {
    const int64_t re = std::min(r1, rb + block);
    int64_t i = 0;
    for (; i + C <= m; i += C) tile_rows<R, C>(k, i, rb, re);
    if constexpr (C > 2) {
      for (; i + 2 <= m; i += 2) tile_rows<R, 2>(k, i, rb, re);
    }
    for (; i < m; ++i) tile_rows<R, 1>(k, i, rb, re);
  }
}

// m == 1 (decode) and m > 1 (batched) use different tile shapes; weight_row_bytes sizes the L2 blocks.
// m == 2 (a decode step of Q8 weights: int8 activations and their residual; a one-token draft's verify)
// keeps decode's tall weight tile with both rows in it, so each weight block is prepared once for both.
template <int RV, int RM, int CM, typename K>
inline void matmul_tiles(const K& k, int64_t m, int64_t r0, int64_t r1, int64_t weight_row_bytes = 0) {
  if (m == 1) {
    tile_loop<RV, 1>(k, m, r0, r1);
  } else if (m == 2) {
    tile_loop<RV, 2>(k, m, r0, r1);
  } else {
    tile_loop<RM, CM>(k, m, r0, r1, weight_row_bytes);
  }
}

// Activation rows [0, m) as ceil(m / CMax) tiles of near-equal width, each 1..CMax: calls
// f.template operator()<C>(i) for the tile of C rows starting at row i. (m = 5, CMax = 4: 3 + 2, not 4 + 1; a
// narrow tile pays the weight unpacking of a wide one for a fraction of the work, and speculative
// verification asks for every m from 2 to 17.)
template <int CMax, typename F>
inline void near_equal_col_tiles(int64_t m, F&& f) {
  static_assert(CMax >= 1 && CMax <= 8);
  const int64_t tiles = (m + CMax - 1) / CMax;
  for (int64_t t = 0, i = 0; t < tiles; ++t) {
    const int64_t left = tiles - t, c = (m - i + left - 1) / left;  // ceil of the rows left per tile
    switch (c) {
      case 1: f.template operator()<1>(i); break;
      case 2: if constexpr (CMax >= 2) f.template operator()<2>(i); break;
      case 3: if constexpr (CMax >= 3) f.template operator()<3>(i); break;
      case 4: if constexpr (CMax >= 4) f.template operator()<4>(i); break;
      case 5: if constexpr (CMax >= 5) f.template operator()<5>(i); break;
      case 6: if constexpr (CMax >= 6) f.template operator()<6>(i); break;
      case 7: if constexpr (CMax >= 7) f.template operator()<7>(i); break;
      default: if constexpr (CMax >= 8) f.template operator()<8>(i); break;
    }
    i += c;
  }
}

}  // namespace pocket::kernels
