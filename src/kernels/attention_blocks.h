// The walk shared by the ISA attention kernels (avx2/, neon/): tasks [t0, t1) (kv head major, kernels.h) are
// cut into blocks of at most kAttentionRows rows of one kv head; per block, each tile of kAttentionKeyTile
// keys is converted to f32 once (Ops::f16_row) for all the block's rows, every row with keys in the tile runs
// Ops::row_tile on it with its online-softmax state, and each row is finally divided by its sums. Per row the
// arithmetic is the one-row computation's (same tiles, same order), so results do not depend on how tasks are
// split: a decode step's row equals the same row of a verify batch, bit for bit.
//
// Ops is a struct of static functions defined in the ISA file's anonymous namespace, so each ISA gets its own
// instantiation, compiled with its own flags and never merged with another's:
//   f16_row(float* out, const uint16_t* in, int64_t n)
//   row_tile(const float* qg, float* og, float* run_max, float* run_sum, const float* kf, const float* vf,
//            int64_t g, int64_t hd, int64_t nt, float scale)   // the g heads of one row against nt keys
//   scale(float* y, float c, int64_t n)                         // y *= c
// (kf holds the tile's keys as rows of hd floats, or transposed: see transposed_keys below.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/kernels.h"

namespace pocket::kernels {

inline constexpr int64_t kAttentionKeyTile = 64;

// Ops may instead take the key tile transposed (static constexpr bool kTransposedKeys = true and
//   keys_transposed(float* kt, const uint16_t* k, int64_t stride, int64_t hd, int64_t nt)
// writing kt[e * kAttentionKeyTile + j] for e < hd and j < nt rounded up to 16, the padding zero), so that
// scores can be formed with the keys across the vector lanes: no horizontal sums.
template <typename Ops>
constexpr bool transposed_keys() {
  if constexpr (requires { Ops::kTransposedKeys; }) {
    return Ops::kTransposedKeys;
  } else {
    return false;
  }
}

// Rows [r0, r1) (at most kAttentionRows) of kv head kvh.
template <typename Ops>
void attention_row_block(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
                         int64_t kvh, int64_t r0, int64_t r1) {
  const int64_t hd = s.head_dim, g = s.n_heads / s.n_kv_heads, kv_stride = kv_pos_stride(s);
  k += kvh * kv_head_stride(s);  // this kv head's position 0
  v += kvh * kv_head_stride(s);
  alignas(64) float kf[kAttentionKeyTile * kMaxHeadDim];
  alignas(64) float vf[kAttentionKeyTile * kMaxHeadDim];
  float run_max[kAttentionRows][kMaxGroup], run_sum[kAttentionRows][kMaxGroup];
  for (int64_t r = r0; r < r1; ++r) {
    std::fill(out + (r * s.n_heads + kvh * g) * hd, out + (r * s.n_heads + kvh * g + g) * hd, 0.0f);
    std::fill(run_max[r - r0], run_max[r - r0] + g, -INFINITY);
    std::fill(run_sum[r - r0], run_sum[r - r0] + g, 0.0f);
  }
  const int64_t keys_max = s.pos0 + r1;  // the last row's causal keys
  for (int64_t j0 = 0; j0 < keys_max; j0 += kAttentionKeyTile) {
    const int64_t nt_max = std::min(kAttentionKeyTile, keys_max - j0);
    if constexpr (transposed_keys<Ops>()) {
      Ops::keys_transposed(kf, k + j0 * kv_stride, kv_stride, hd, nt_max);
    }
    for (int64_t j = 0; j < nt_max; ++j) {
      // Key j of the next tile and its value into L2 (prefetcht1), one position per converted position: at
      // long contexts the cache comes from DRAM or L3, read once per pass. pocket-0.3b at depth 1024 (Intel
      // Xeon VM, head-major cache, time inside the attention jobs per pass and thread, with and without it
      // alternating in one process): 8-row verify 3.92-4.30 -> 3.58-3.85 ms, decode 1.65-1.72 -> 1.38-1.40
      // ms. Two tiles ahead, into L1, or spread over the rows' work: no better.
      if (j0 + kAttentionKeyTile + j < keys_max) {
        const char* kn = reinterpret_cast<const char*>(k + (j0 + kAttentionKeyTile + j) * kv_stride);
        const char* vn = reinterpret_cast<const char*>(v + (j0 + kAttentionKeyTile + j) * kv_stride);
        for (int64_t b = 0; b < hd * static_cast<int64_t>(sizeof(uint16_t)); b += 64) {
          __builtin_prefetch(kn + b, 0, 2);
          __builtin_prefetch(vn + b, 0, 2);
        }
      }
      if constexpr (!transposed_keys<Ops>()) Ops::f16_row(kf + j * hd, k + (j0 + j) * kv_stride, hd);
      Ops::f16_row(vf + j * hd, v + (j0 + j) * kv_stride, hd);
    }
    for (int64_t r = std::max(r0, j0 - s.pos0); r < r1; ++r) {  // rows with keys in this tile
      const int64_t nt = std::min(kAttentionKeyTile, s.pos0 + r + 1 - j0);
      Ops::row_tile(q + (r * s.n_heads + kvh * g) * hd, out + (r * s.n_heads + kvh * g) * hd, run_max[r - r0],
                    run_sum[r - r0], kf, vf, g, hd, nt, s.scale);
    }
  }
  for (int64_t r = r0; r < r1; ++r) {
    float* og = out + (r * s.n_heads + kvh * g) * hd;
    for (int64_t h = 0; h < g; ++h) Ops::scale(og + h * hd, 1.0f / run_sum[r - r0][h], hd);
  }
}

// Tasks [t0, t1): runs of consecutive rows of one kv head, in blocks of at most kAttentionRows.
template <typename Ops>
void attention_tasks(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
                     int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1;) {
    const int64_t kvh = t / s.m, r0 = t % s.m;
    const int64_t r1 = std::min({s.m, r0 + kAttentionRows, r0 + (t1 - t)});
    attention_row_block<Ops>(out, q, k, v, s, kvh, r0, r1);
    t += r1 - r0;
  }
}

}  // namespace pocket::kernels
