// Q4G32R8 with VPDPBUSD. The block layout is the one avx2/matmul_avx2.cc reads: per 4-element chunk p of a
// 32-element block, 32 bytes hold the 8 rows' nibbles (row k in 32-bit lane k: low nibbles elements 4p..4p+3,
// high nibbles 16+4p..16+4p+3). VPDPBUSD multiplies each lane's 4 unsigned nibbles (u in [0, 15]) by the
// activation's 4 signed bytes broadcast to every lane and adds the 4 products into the lane's int32: one
// instruction where AVX2 needs maddubs + an int16 add, and no int16 range argument (|sum| per block
// <= 32 * 15 * 127, far from 2^31). The +8 offset of the nibbles is removed per block with the activation
// block's s8 = -8 d sum(q): dw[8] * (da * sum + s8), two FMAs per activation row. Every path (decode, the
// 8- and 16-row tiles) computes exactly these operations in this order, so a row's result does not depend
// on how many rows were computed with it (speculative verification relies on that).
//
// Batched passes are bound by the multiply ports, not by memory: VPDPBUSD, the FMAs and every other
// multiply share two pipes on the CPUs measured (Zen 4: 2 VPDPBUSD ymm per cycle, a multiply issued beside
// them takes a slot). So the batched tile issues VPDPBUSD with register operands only (a memory or
// embedded-broadcast operand ran at ~80 % of the register form's rate), broadcasts each activation word
// with a plain load (which leaves the multiply pipes alone), and works on 16 weight rows in one zmm
// (two 8-row groups) so that each broadcast feeds 16 rows: half the broadcasts per multiply-add.
//
// Dependency chains: VPDPBUSD has a latency of several cycles; each activation row of a tile keeps its own
// accumulators (C independent chains per block, two per row in the 8-row tile).
// This file is compiled with AVX-512 flags: it keeps everything in an anonymous namespace and calls no
// out-of-line library templates, so no AVX-512 code can be merged into code that runs on other CPUs.
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start some results from a self-initialised "undefined" vector, which
// -Wmaybe-uninitialized reports once they are inlined (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cpuid.h>

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

// The 4 activation bytes at p as one word, for a broadcast load (VPBROADCASTD from memory; GCC does not
// fold it into an embedded-broadcast VPDPBUSD operand, which is what we want here).
inline int32_t load_word(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// acc += VPDPBUSD(u, the 4 bytes at p broadcast to every lane), with the broadcast embedded in the memory
// operand ({1to8}): one instruction for decode, whose rate the weight stream sets, not the multiply pipes.
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
        s_lo[c] = _mm256_dpbusd_epi32(s_lo[c], lo, _mm256_set1_epi32(load_word(x[c][b].q + 4 * p)));
        s_hi[c] = _mm256_dpbusd_epi32(s_hi[c], hi, _mm256_set1_epi32(load_word(x[c][b].q + 16 + 4 * p)));
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m256 dot = _mm256_cvtepi32_ps(_mm256_add_epi32(s_lo[c], s_hi[c]));
      const __m256 t = _mm256_fmadd_ps(dot, _mm256_set1_ps(x[c][b].d), _mm256_set1_ps(x[c][b].s8));
      acc[c] = _mm256_fmadd_ps(dw, t, acc[c]);
    }
  }
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(a.y + (i + c) * a.ldy + r, acc[c]);
}

// Y[i .. i + C, r .. r + 16]: the 8-row groups r / 8 and r / 8 + 1 in one zmm (lanes 0-7 and 8-15), so
// each broadcast activation word feeds 16 weight rows.
//
// Prefetch: this tile is bound by the multiply pipes, so the weight stream must be in flight well before
// it is needed, and neither the hardware prefetcher nor a distance of a few KiB is far enough. Into L1: the
// same block of the next pair of groups (the next tile this thread computes); into L2: kFarPrefetchBytes
// ahead of each stream. A fixed 2048 or 1024 bytes into L1 instead ran 1.13-1.17x slower for a whole
// 8-row verify pass of pocket-0.3b; the L2 prefetch two tiles ahead instead of 32 KiB, 1.07-1.10x slower
// (in-process A/B, passes alternating). The same L2 prefetch in the decode and 2-3 row paths, which the weight stream binds, made
// them 6-23 % slower, so they keep theirs.
constexpr int64_t kFarPrefetchBytes = 32 * 1024;

template <int C>
inline void r16_tile(const R8Args& a, int64_t r, int64_t i) {
  const BlockQ4G32R8* w0 = a.w + (r / 8) * a.nb;
  const BlockQ4G32R8* w1 = w0 + a.nb;
  const ActBlock* x[C];
  for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
  __m512 acc[C];
  for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const int64_t near = 2 * a.nb * static_cast<int64_t>(sizeof(BlockQ4G32R8));  // bytes: the next tile
  for (int64_t b = 0; b < a.nb; ++b) {
    const BlockQ4G32R8& b0 = w0[b];
    const BlockQ4G32R8& b1 = w1[b];
    const char* n0 = reinterpret_cast<const char*>(&b0) + near;
    const char* n1 = reinterpret_cast<const char*>(&b1) + near;
    _mm_prefetch(n0, _MM_HINT_T0);
    _mm_prefetch(n0 + 72, _MM_HINT_T0);
    _mm_prefetch(n1, _MM_HINT_T0);
    _mm_prefetch(n1 + 72, _MM_HINT_T0);
    const char* f0 = reinterpret_cast<const char*>(&b0) + kFarPrefetchBytes;
    const char* f1 = reinterpret_cast<const char*>(&b1) + kFarPrefetchBytes;
    _mm_prefetch(f0, _MM_HINT_T1);
    _mm_prefetch(f0 + 72, _MM_HINT_T1);
    _mm_prefetch(f1, _MM_HINT_T1);
    _mm_prefetch(f1 + 72, _MM_HINT_T1);
    __m512i s[C];
    for (int c = 0; c < C; ++c) s[c] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m512i raw = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0.q + 32 * p))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1.q + 32 * p)), 1);
      const __m512i lo = _mm512_and_si512(raw, m4), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        s[c] = _mm512_dpbusd_epi32(s[c], lo, _mm512_set1_epi32(load_word(x[c][b].q + 4 * p)));
        s[c] = _mm512_dpbusd_epi32(s[c], hi, _mm512_set1_epi32(load_word(x[c][b].q + 16 + 4 * p)));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0.d))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1.d)), 1));
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[c]), _mm512_set1_ps(x[c][b].d), _mm512_set1_ps(x[c][b].s8));
      acc[c] = _mm512_fmadd_ps(dw, t, acc[c]);
    }
  }
  for (int c = 0; c < C; ++c) _mm512_storeu_ps(a.y + (i + c) * a.ldy + r, acc[c]);
}

// Decode (m == 1): the high nibbles are taken in place (byte & 0xF0 = 16 u): their sums come out 16 times
// too large and one exact arithmetic shift per block puts them right, instead of a shift per 32 bytes.
// |16 u a| sums stay far below 2^31. (Two 8-row groups per step ran 14 % faster from L2 but slower from
// DRAM: two interleaved weight streams per thread.)
//
// Prefetch lead (bytes ahead in the group's stream, into L1): 640 on the Zen 4 VM the kernel was written on;
// on an Intel Xeon VM (AVX-512 VNNI and AMX, 2 vCPUs) 640 left decode at 59 % of the read roofline, and
// 2304-6912 ran 1.12-1.21x faster (tg128 of pocket-0.3b, binaries alternated, 3 rounds; 0: 0.91x). Each
// vendor keeps the lead measured on it.
int64_t decode_prefetch_bytes() {
  static const int64_t lead = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid(0, a, b, c, d);
    const bool intel = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;  // "GenuineIntel"
    return intel ? int64_t{3456} : int64_t{640};
  }();
  return lead;
}

inline void r8_gemv(const R8Args& a, int64_t r, int64_t lead) {
  const BlockQ4G32R8* wg = a.w + (r / 8) * a.nb;
  const ActBlock* x = a.x;
  __m256 acc = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0f), mf0 = _mm256_set1_epi8(static_cast<char>(0xf0));
  for (int64_t b = 0; b < a.nb; ++b) {
    const char* pf = reinterpret_cast<const char*>(&wg[b]) + lead;
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
    const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_broadcast_ss(&x[b].d), _mm256_broadcast_ss(&x[b].s8));
    acc = _mm256_fmadd_ps(dw, t, acc);
  }
  _mm256_storeu_ps(a.y + r, acc);
}

// Batched tiles: 16 (or, for a last odd group, 8) weight rows x kColsR8 activation rows (the accumulators,
// the unpacked nibbles and constants fit the 32 registers AVX-512 gives).
constexpr int kColsR8 = 8;
constexpr int64_t kWideTileRows = 4;  // activation rows from which the 16-row tile is used

}  // namespace

void matmul_q4g32r8(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                    int64_t r1) {
  const R8Args a{y, ldy, reinterpret_cast<const BlockQ4G32R8*>(w), x, quant::act_blocks(n)};
  if (m == 1) {
    const int64_t lead = decode_prefetch_bytes();
    for (int64_t r = r0; r < r1; r += 8) r8_gemv(a, r, lead);
    return;
  }
  // Weight rows in blocks of about kWeightBlockBytes (L2), activation tiles of near-equal width inside
  // (tile_loop.h: m = 5 is one tile of 5, m = 9 is 5 + 4).
  const int64_t row_bytes = a.nb * static_cast<int64_t>(sizeof(BlockQ4G32R8)) / 8;
  int64_t block = kWeightBlockBytes / (16 * row_bytes) * 16;
  if (block < 16) block = 16;
  // 2-3 rows are still bound by the weight stream, which one 8-row stream per thread reads best (the
  // 16-row tile's two streams ran 7-9 % slower there); from 4 rows on the multiply pipes bind.
  const bool wide = m >= kWideTileRows;
  for (int64_t rb = r0; rb < r1; rb += block) {
    const int64_t re = rb + block < r1 ? rb + block : r1;
    near_equal_col_tiles<kColsR8>(m, [&]<int C>(int64_t i) {
      int64_t r = rb;
      if (wide) {
        for (; r + 16 <= re; r += 16) r16_tile<C>(a, r, i);
      }
      for (; r < re; r += 8) r8_tile<C>(a, r, i);
    });
  }
}

}  // namespace pocket::kernels::avx512_vnni
