// Q4G32R8 with VPDPBUSD. The block layout is the one avx2/matmul_avx2.cc reads: per 4-element chunk p of a
// 32-element block, 32 bytes hold the 8 rows' nibbles (row k in 32-bit lane k: low nibbles elements 4p..4p+3,
// high nibbles 16+4p..16+4p+3). VPDPBUSD multiplies each lane's 4 unsigned nibbles (u in [0, 15]) by the
// activation's 4 signed bytes broadcast to every lane and adds the 4 products into the lane's int32: one
// instruction where AVX2 needs maddubs + an int16 add, and no int16 range argument (|sum| per block
// <= 32 * 15 * 127, far from 2^31). The +8 offset of the nibbles is removed per block with the activation
// block's float sum s: dw[8] * (da * sum - 8 s), two FMAs for 8 rows.
//
// Dependency chains: VPDPBUSD has a latency of several cycles, so each activation row keeps two int32
// accumulators (low and high nibbles) and a tile works on C rows: 2C independent chains per block.
// This file is compiled with AVX-512 flags: it keeps everything in an anonymous namespace and calls no
// out-of-line library templates, so no AVX-512 code can be merged into code that runs on other CPUs.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx512/avx512_vnni.h"
#include "kernels/tile_loop.h"
#include "quant/blocks.h"

namespace pocket::kernels::avx512_vnni {
namespace {

using quant::ActBlock;
using quant::BlockQ4G32R8;

struct R8Args {
  float* y;
  int64_t ldy;
  const BlockQ4G32R8* w;
  const ActBlock* x;
  int64_t nb;  // blocks per row
};

// acc += VPDPBUSD(u, the 4 bytes at p broadcast to every lane), with the broadcast embedded in the memory
// operand ({1to8}): GCC does not fold _mm256_set1_epi32 of a load into it, and a separate VPBROADCASTD
// per instruction measurably costs issue bandwidth.
inline __m256i dpbusd_bcast(__m256i acc, __m256i u, const int8_t* p) {
  __asm__("vpdpbusd %2%{1to8%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
}

// Y[i .. i + C, r .. r + 8].
template <int C>
inline void r8_tile(const R8Args& a, int64_t r, int64_t i) {
  const BlockQ4G32R8* wg = a.w + (r / 8) * a.nb;
  const ActBlock* x[C];
  for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
  __m256 acc[C];
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  for (int64_t b = 0; b < a.nb; ++b) {
    const BlockQ4G32R8& blk = wg[b];
    // ~14 blocks ahead, both lines of a block. A batched tile spends ~8x a decode step's time per block, so
    // the distance in bytes is longer than decode's: 2048 ran 12-14 % faster than 640 for 8 rows streaming
    // pocket-0.3b-sized weights from DRAM (same process, alternating), 3-5 % for 3 and 5 rows.
    const char* pf = reinterpret_cast<const char*>(&blk) + 2048;
    _mm_prefetch(pf, _MM_HINT_T0);
    _mm_prefetch(pf + 72, _MM_HINT_T0);
    __m256i s_lo[C], s_hi[C];
    for (int c = 0; c < C; ++c) s_lo[c] = s_hi[c] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.q + 32 * p));
      const __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        s_lo[c] = dpbusd_bcast(s_lo[c], lo, x[c][b].q + 4 * p);
        s_hi[c] = dpbusd_bcast(s_hi[c], hi, x[c][b].q + 16 + 4 * p);
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m256 dot = _mm256_cvtepi32_ps(_mm256_add_epi32(s_lo[c], s_hi[c]));
      const __m256 t = _mm256_fmadd_ps(dot, _mm256_broadcast_ss(&x[c][b].d), _mm256_set1_ps(-8.0f * x[c][b].s));
      acc[c] = _mm256_fmadd_ps(dw, t, acc[c]);
    }
  }
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(a.y + (i + c) * a.ldy + r, acc[c]);
}

// Decode (m == 1): the high nibbles are taken in place (byte & 0xF0 = 16 u): their sums come out 16 times
// too large and one exact arithmetic shift per block puts them right, instead of a shift per 32 bytes.
// |16 u a| sums stay far below 2^31. (Two 8-row groups per step ran 14 % faster from L2 but slower from
// DRAM: two interleaved weight streams per thread.)
inline void r8_gemv(const R8Args& a, int64_t r) {
  const BlockQ4G32R8* wg = a.w + (r / 8) * a.nb;
  const ActBlock* x = a.x;
  __m256 acc = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0f), mf0 = _mm256_set1_epi8(static_cast<char>(0xf0));
  for (int64_t b = 0; b < a.nb; ++b) {
    const char* pf = reinterpret_cast<const char*>(&wg[b]) + 640;
    _mm_prefetch(pf, _MM_HINT_T0);
    _mm_prefetch(pf + 72, _MM_HINT_T0);
    __m256i s_lo = _mm256_setzero_si256(), s_hi = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg[b].q + 32 * p));
      s_lo = dpbusd_bcast(s_lo, _mm256_and_si256(raw, m4), x[b].q + 4 * p);
      s_hi = dpbusd_bcast(s_hi, _mm256_and_si256(raw, mf0), x[b].q + 16 + 4 * p);
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wg[b].d)));
    const __m256i sum = _mm256_add_epi32(s_lo, _mm256_srai_epi32(s_hi, 4));
    const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_broadcast_ss(&x[b].d), _mm256_set1_ps(-8.0f * x[b].s));
    acc = _mm256_fmadd_ps(dw, t, acc);
  }
  _mm256_storeu_ps(a.y + r, acc);
}

// Batched tiles: 8 weight rows x kColsR8 activation rows (2 * kColsR8 int32 + kColsR8 float accumulators,
// the unpacked nibbles and constants fit the 32 registers AVX512VL gives).
constexpr int kColsR8 = 8;

}  // namespace

void matmul_q4g32r8(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                    int64_t r1) {
  const R8Args a{y, ldy, reinterpret_cast<const BlockQ4G32R8*>(w), x, quant::act_blocks(n)};
  if (m == 1) {
    for (int64_t r = r0; r < r1; r += 8) r8_gemv(a, r);
    return;
  }
  // Weight rows in blocks of about kWeightBlockBytes (L2), activation tiles of near-equal width inside
  // (tile_loop.h: m = 5 is one tile of 5, m = 9 is 5 + 4).
  const int64_t row_bytes = a.nb * static_cast<int64_t>(sizeof(BlockQ4G32R8)) / 8;
  int64_t block = kWeightBlockBytes / (8 * row_bytes) * 8;
  if (block < 8) block = 8;
  for (int64_t rb = r0; rb < r1; rb += block) {
    const int64_t re = rb + block < r1 ? rb + block : r1;
    near_equal_col_tiles<kColsR8>(m, [&]<int C>(int64_t i) {
      for (int64_t r = rb; r < re; r += 8) r8_tile<C>(a, r, i);
    });
  }
}

}  // namespace pocket::kernels::avx512_vnni
