// AVX2 matmuls. Quantised: per (weight block, activation block) pair one maddubs (u8 x s8 -> s16 pairs), one
// madd (-> s32), a convert and an FMA with the product of the two scales. Signed weights use the sign trick
// maddubs(|w|, sign(a, w)); |w| and w are prepared once per weight block and reused for C activation rows.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx2/avx2.h"
#include "kernels/tile_loop.h"

namespace pocket::kernels::avx2 {
namespace {

using quant::ActBlock;
using quant::BlockQ4G32;
using quant::BlockQ4G32A;
using quant::BlockQ4G64;
using quant::BlockQ8G32;
using quant::BlockQ4G32R8;

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256 bcast_f16(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(*h)));  // broadcast the half, convert 8 lanes
}

// 16 nibble bytes (byte j: element j low, j + 16 high) -> 32 bytes u[0..31] in element order.
inline __m256i unpack_nib16(const uint8_t* p) {
  const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256i s = _mm256_srlv_epi64(x, _mm256_set_epi64x(4, 4, 0, 0));
  return _mm256_and_si256(s, _mm256_set1_epi8(0x0f));
}

// sum of products of 32 unsigned (u) and 32 signed (s) bytes, as 8 float lanes (exact: |sum| < 2^24).
inline __m256 dot_us(__m256i u, __m256i s) {
  const __m256i p16 = _mm256_maddubs_epi16(u, s);  // pairs: |.| <= 2 * 255 * 127 fits s16 with no saturation
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

inline __m256i load_act(const ActBlock& a) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q)); }

struct QArgs {
  float* y;
  int64_t ldy;
  const uint8_t* w;
  const ActBlock* x;
  int64_t n;
  int64_t nb;         // activation blocks per row
  int64_t row_bytes;  // weight bytes per row
};

template <int R, int C>
inline void store(const QArgs& a, int64_t r, int64_t i, __m256 (&acc)[R][C]) {
  for (int k = 0; k < R; ++k) {
    for (int c = 0; c < C; ++c) a.y[(i + c) * a.ldy + r + k] = hsum(acc[k][c]);
  }
}

// Decode streams weights from DRAM with much arithmetic per cache line; the hardware prefetcher alone leaves
// the core waiting (measured: 2.2 GB/s vs 6.3 GB/s plain reads on a loaded machine). Each (row, block)
// prefetches the same offset kPrefetchRows rows ahead, i.e. a tile or two in the future.
constexpr int64_t kPrefetchRows = 8;
inline void prefetch(const void* p, int64_t row_bytes) {
  _mm_prefetch(static_cast<const char*>(p) + kPrefetchRows * row_bytes, _MM_HINT_T0);
}

// Symmetric signed weights (Q8G32, Q4G32) over 32-element blocks: WLoad gives the signed bytes of a block.
template <typename Block, typename WLoad>
struct SymKernel {
  QArgs a;
  WLoad wload;
  template <int R, int C>
  void tile(int64_t r, int64_t i) const {
    __m256 acc[R][C];
    for (int k = 0; k < R; ++k)
      for (int c = 0; c < C; ++c) acc[k][c] = _mm256_setzero_ps();
    const ActBlock* x[C];
    for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
    const Block* w[R];
    for (int k = 0; k < R; ++k) w[k] = reinterpret_cast<const Block*>(a.w + (r + k) * a.row_bytes);
    for (int64_t b = 0; b < a.nb; ++b) {
#pragma GCC unroll 8
      for (int k = 0; k < R; ++k) {
        prefetch(&w[k][b], a.row_bytes);
        const __m256i ws = wload(w[k][b]);
        const __m256i wa = _mm256_sign_epi8(ws, ws);
        const __m256 dw = bcast_f16(&w[k][b].d);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
          const __m256i as = _mm256_sign_epi8(load_act(x[c][b]), ws);
          const __m256 dd = _mm256_mul_ps(dw, _mm256_broadcast_ss(&x[c][b].d));
          acc[k][c] = _mm256_fmadd_ps(dot_us(wa, as), dd, acc[k][c]);
        }
      }
    }
    store<R, C>(a, r, i, acc);
  }
};

struct LoadQ8 {
  __m256i operator()(const BlockQ8G32& b) const { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.q)); }
};
struct LoadQ4 {
  __m256i operator()(const BlockQ4G32& b) const {
    return _mm256_sub_epi8(unpack_nib16(b.q), _mm256_set1_epi8(8));
  }
};

// Decode (m == 1) for symmetric Q4: the unsigned nibbles go straight into maddubs (u in [0, 15] needs no
// sign trick), and the +8 offset is removed in int16 by subtracting c16 = maddubs(8, a) = 8 * (a_2j + a_2j+1),
// computed once per activation block for all R rows: sum (u - 8) a = sum u a - 8 sum a. Per (row, block):
// 10 vector ops instead of 13. |maddubs(u, a)| <= 2 * 15 * 127 and |c16| <= 2032, so int16 never overflows.
struct Q4Gemv {
  QArgs a;
  bool g64;  // Q4G64 (one weight block per two activation blocks) or Q4G32
  template <int R, int C>
  void tile(int64_t r, int64_t i) const {
    static_assert(C == 1, "decode kernel");
    __m256 acc[R];
    for (int k = 0; k < R; ++k) acc[k] = _mm256_setzero_ps();
    const ActBlock* x = a.x + i * a.nb;
    const uint8_t* w[R];
    for (int k = 0; k < R; ++k) w[k] = a.w + (r + k) * a.row_bytes;
    const __m256i e8 = _mm256_set1_epi8(8), ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);
    auto pair = [&](__m256 acc_k, __m256i u, const ActBlock& xa, __m256i q, __m256i c16, __m256 dw) {
      const __m256i p = _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(u, q), c16), ones);
      return _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dw, _mm256_broadcast_ss(&xa.d)), acc_k);
    };
    if (!g64) {
      for (int64_t b = 0; b < a.nb; ++b) {
        const __m256i q = load_act(x[b]);
        const __m256i c16 = _mm256_maddubs_epi16(e8, q);
#pragma GCC unroll 8
        for (int k = 0; k < R; ++k) {
          const auto* blk = reinterpret_cast<const BlockQ4G32*>(w[k]) + b;
          prefetch(blk, a.row_bytes);
          acc[k] = pair(acc[k], unpack_nib16(blk->q), x[b], q, c16, bcast_f16(&blk->d));
        }
      }
    } else {
      const int64_t nw = (a.nb + 1) / 2;
      for (int64_t b = 0; b < nw; ++b) {
        const bool full = 2 * b + 1 < a.nb;
        const __m256i q0 = load_act(x[2 * b]);
        const __m256i c0 = _mm256_maddubs_epi16(e8, q0);
        const __m256i q1 = full ? load_act(x[2 * b + 1]) : _mm256_setzero_si256();
        const __m256i c1 = _mm256_maddubs_epi16(e8, q1);
        const ActBlock& x1 = full ? x[2 * b + 1] : x[2 * b];  // q1 = 0 makes the second half add 0
#pragma GCC unroll 8
        for (int k = 0; k < R; ++k) {
          const auto* blk = reinterpret_cast<const BlockQ4G64*>(w[k]) + b;
          prefetch(blk, a.row_bytes);
          const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->q));
          const __m256 dw = bcast_f16(&blk->d);
          acc[k] = pair(acc[k], _mm256_and_si256(raw, m4), x[2 * b], q0, c0, dw);
          acc[k] = pair(acc[k], _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), x1, q1, c1, dw);
        }
      }
    }
    for (int k = 0; k < R; ++k) a.y[i * a.ldy + r + k] = hsum(acc[k]);
  }
};

// Q4G64: one weight block spans two activation blocks with their own scales.
struct Q4G64Kernel {
  QArgs a;
  template <int R, int C>
  void tile(int64_t r, int64_t i) const {
    __m256 acc[R][C];
    for (int k = 0; k < R; ++k)
      for (int c = 0; c < C; ++c) acc[k][c] = _mm256_setzero_ps();
    const ActBlock* x[C];
    for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
    const BlockQ4G64* w[R];
    for (int k = 0; k < R; ++k) w[k] = reinterpret_cast<const BlockQ4G64*>(a.w + (r + k) * a.row_bytes);
    const __m256i m4 = _mm256_set1_epi8(0x0f), e8 = _mm256_set1_epi8(8);
    const int64_t nw = a.nb / 2;  // full weight blocks whose two halves both have activation blocks
    auto half = [&](int k, __m256i ws, __m256 dw, int64_t ab) {
      const __m256i wa = _mm256_sign_epi8(ws, ws);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const __m256i as = _mm256_sign_epi8(load_act(x[c][ab]), ws);
        const __m256 dd = _mm256_mul_ps(dw, _mm256_broadcast_ss(&x[c][ab].d));
        acc[k][c] = _mm256_fmadd_ps(dot_us(wa, as), dd, acc[k][c]);
      }
    };
    for (int64_t b = 0; b < nw; ++b) {
#pragma GCC unroll 8
      for (int k = 0; k < R; ++k) {
        prefetch(&w[k][b], a.row_bytes);
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[k][b].q));
        const __m256 dw = bcast_f16(&w[k][b].d);
        half(k, _mm256_sub_epi8(_mm256_and_si256(raw, m4), e8), dw, 2 * b);
        half(k, _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), e8), dw, 2 * b + 1);
      }
    }
    if (a.nb % 2 != 0) {  // a last weight block whose upper half is past the end of the row
      for (int k = 0; k < R; ++k) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[k][nw].q));
        half(k, _mm256_sub_epi8(_mm256_and_si256(raw, m4), e8), bcast_f16(&w[k][nw].d), 2 * nw);
      }
    }
    store<R, C>(a, r, i, acc);
  }
};

// Q4G32A: x = d u + m with u >= 0, so maddubs(u, a) needs no sign trick; the min contributes m * s_a per
// block, accumulated in a second pass over the scales (cheap: one scalar FMA per block pair).
struct Q4G32AKernel {
  QArgs a;
  template <int R, int C>
  void tile(int64_t r, int64_t i) const {
    __m256 acc[R][C];
    for (int k = 0; k < R; ++k)
      for (int c = 0; c < C; ++c) acc[k][c] = _mm256_setzero_ps();
    const ActBlock* x[C];
    for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
    const BlockQ4G32A* w[R];
    for (int k = 0; k < R; ++k) w[k] = reinterpret_cast<const BlockQ4G32A*>(a.w + (r + k) * a.row_bytes);
    for (int64_t b = 0; b < a.nb; ++b) {
#pragma GCC unroll 8
      for (int k = 0; k < R; ++k) {
        prefetch(&w[k][b], a.row_bytes);
        const __m256i u = unpack_nib16(w[k][b].q);
        const __m256 dw = bcast_f16(&w[k][b].d);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
          const __m256 dd = _mm256_mul_ps(dw, _mm256_broadcast_ss(&x[c][b].d));
          acc[k][c] = _mm256_fmadd_ps(dot_us(u, load_act(x[c][b])), dd, acc[k][c]);
        }
      }
    }
    for (int k = 0; k < R; ++k) {
      for (int c = 0; c < C; ++c) {
        float corr = 0.0f;
        for (int64_t b = 0; b < a.nb; ++b) corr += _cvtsh_ss(w[k][b].m) * x[c][b].s;
        a.y[(i + c) * a.ldy + r + k] = hsum(acc[k][c]) + corr;
      }
    }
  }
};

// Q4G32R8: 8 weight rows at once, one 32-bit lane per row. For each 4-element chunk of a block, one
// maddubs of the 8 rows' unsigned nibbles (u in [0, 15]) against the activation's 4 bytes broadcast to every
// lane gives each row's partial dot in int16 pairs; the 8 chunks of a block are summed in int16
// (|sum| <= 8 * 2 * 15 * 127 = 30480 < 32767, exact), widened once by madd, and the block's contribution
// to the 8 rows is dw[8] * (da * sum - 8 s) with s = da * sum(q): two FMAs for 8 rows, no horizontal sums.
// The result of a tile is one 8-float store per activation row.
struct Q4R8Kernel {
  QArgs a;
  template <int C>
  void tile(int64_t r, int64_t i) const {
    const auto* wg = reinterpret_cast<const BlockQ4G32R8*>(a.w) + (r / 8) * a.nb;
    const ActBlock* x[C];
    for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
    __m256 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < a.nb; ++b) {
      const BlockQ4G32R8& blk = wg[b];
      const char* pf = reinterpret_cast<const char*>(&blk) + 640;  // ~4 blocks ahead, both lines of a block
      _mm_prefetch(pf, _MM_HINT_T0);
      _mm_prefetch(pf + 72, _MM_HINT_T0);
      __m256i s16[C];
      for (int c = 0; c < C; ++c) s16[c] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.q + 32 * p));
        const __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
          int32_t al, ah;
          std::memcpy(&al, x[c][b].q + 4 * p, 4);
          std::memcpy(&ah, x[c][b].q + 16 + 4 * p, 4);
          s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(al)));
          s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(ah)));
        }
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(s16[c], ones));
        const __m256 t = _mm256_fmadd_ps(dot, _mm256_broadcast_ss(&x[c][b].d), _mm256_broadcast_ss(&x[c][b].s8));
        acc[c] = _mm256_fmadd_ps(dw, t, acc[c]);
      }
    }
    for (int c = 0; c < C; ++c) _mm256_storeu_ps(a.y + (i + c) * a.ldy + r, acc[c]);
  }
};

// Float weights: 8 columns per step, tail columns scalar.
template <typename WLoad>
struct FloatKernel {
  float* y;
  int64_t ldy;
  const uint8_t* w;
  const float* x;
  int64_t n;
  int64_t elem_bytes;
  WLoad wload;
  template <int R, int C>
  void tile(int64_t r, int64_t i) const {
    __m256 acc[R][C];
    for (int k = 0; k < R; ++k)
      for (int c = 0; c < C; ++c) acc[k][c] = _mm256_setzero_ps();
    const uint8_t* wr[R];
    for (int k = 0; k < R; ++k) wr[k] = w + (r + k) * n * elem_bytes;
    const int64_t n8 = n / 8 * 8;
    for (int64_t e = 0; e < n8; e += 8) {
#pragma GCC unroll 8
      for (int k = 0; k < R; ++k) {
        if (e % 32 == 0) prefetch(wr[k] + e * elem_bytes, n * elem_bytes);  // one per 64-128 bytes
        const __m256 wv = wload.vec(wr[k], e);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[k][c] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + (i + c) * n + e), acc[k][c]);
      }
    }
    for (int k = 0; k < R; ++k) {
      for (int c = 0; c < C; ++c) {
        float s = hsum(acc[k][c]);
        for (int64_t e = n8; e < n; ++e) s += wload.one(wr[k], e) * x[(i + c) * n + e];
        y[(i + c) * ldy + r + k] = s;
      }
    }
  }
};

struct LoadF32 {
  __m256 vec(const uint8_t* p, int64_t e) const { return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + e); }
  float one(const uint8_t* p, int64_t e) const { return reinterpret_cast<const float*>(p)[e]; }
};
struct LoadF16 {
  __m256 vec(const uint8_t* p, int64_t e) const {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(p) + e)));
  }
  float one(const uint8_t* p, int64_t e) const { return _cvtsh_ss(reinterpret_cast<const uint16_t*>(p)[e]); }
};

// Tile shapes: decode (m == 1) takes 4 weight rows against one activation row; prefill 2 weight rows x 4
// activation rows (8 accumulators + the prepared weight block + scratch fit the 16 ymm registers).
constexpr int kRowsDecode = 4, kRowsPrefill = 2, kColsPrefill = 4;
constexpr int kColsR8 = 4;  // Q4G32R8: 8 weight rows x 4 activation rows

QArgs qargs(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t n, int64_t group,
            int64_t block_bytes) {
  return QArgs{y, ldy, w, x, n, quant::act_blocks(n), (n + group - 1) / group * block_bytes};
}

}  // namespace

void matmul_q8g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1) {
  const SymKernel<BlockQ8G32, LoadQ8> k{qargs(y, ldy, w, x, n, 32, 34), {}};
  matmul_tiles<kRowsDecode, kRowsPrefill, kColsPrefill>(k, m, r0, r1, k.a.row_bytes);
}

void matmul_q4g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1) {
  if (m == 1) return tile_loop<kRowsDecode, 1>(Q4Gemv{qargs(y, ldy, w, x, n, 32, 18), false}, m, r0, r1);
  const SymKernel<BlockQ4G32, LoadQ4> k{qargs(y, ldy, w, x, n, 32, 18), {}};
  matmul_tiles<kRowsDecode, kRowsPrefill, kColsPrefill>(k, m, r0, r1, k.a.row_bytes);
}

void matmul_q4g32r8(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                    int64_t r1) {
  const Q4R8Kernel k{qargs(y, ldy, w, x, n, 32, 18)};
  if (m == 1) {
    for (int64_t r = r0; r < r1; r += 8) k.tile<1>(r, 0);
    return;
  }
  const int64_t block = std::max<int64_t>(8, kWeightBlockBytes / (8 * k.a.row_bytes) * 8);
  for (int64_t rb = r0; rb < r1; rb += block) {
    const int64_t re = std::min(r1, rb + block);
    near_equal_col_tiles<kColsR8>(m, [&]<int C>(int64_t i) {
      for (int64_t r = rb; r < re; r += 8) k.tile<C>(r, i);
    });
  }
}

void matmul_q4g64(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1) {
  if (m == 1) return tile_loop<kRowsDecode, 1>(Q4Gemv{qargs(y, ldy, w, x, n, 64, 34), true}, m, r0, r1);
  const Q4G64Kernel k{qargs(y, ldy, w, x, n, 64, 34)};
  matmul_tiles<kRowsDecode, kRowsPrefill, kColsPrefill>(k, m, r0, r1, k.a.row_bytes);
}

void matmul_q4g32a(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                   int64_t r1) {
  const Q4G32AKernel k{qargs(y, ldy, w, x, n, 32, 20)};
  matmul_tiles<kRowsDecode, kRowsPrefill, kColsPrefill>(k, m, r0, r1, k.a.row_bytes);
}

void matmul_f32(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1) {
  const FloatKernel<LoadF32> k{y, ldy, w, x, n, 4, {}};
  matmul_tiles<kRowsDecode, kRowsPrefill, kColsPrefill>(k, m, r0, r1, n * 4);
}

void matmul_f16(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1) {
  const FloatKernel<LoadF16> k{y, ldy, w, x, n, 2, {}};
  matmul_tiles<kRowsDecode, kRowsPrefill, kColsPrefill>(k, m, r0, r1, n * 2);
}

}  // namespace pocket::kernels::avx2
