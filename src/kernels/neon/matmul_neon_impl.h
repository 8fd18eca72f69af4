// NEON quantised matmul bodies, shared by matmul_neon.cc (widening multiplies) and matmul_neon_dotprod.cc
// (SDOT). Include only from those two files, after <arm_neon.h>, inside an anonymous namespace, with a
// policy `Dot` defined: `static int32x4_t Dot::acc(int32x4_t acc, int8x16_t a, int8x16_t b)` adding the
// 16 products into 4 int32 lanes. Each file thus gets its own copy compiled with its own flags (no ODR mix).

using quant::ActBlock;

inline float h2f(uint16_t h) {
  __fp16 v;
  __builtin_memcpy(&v, &h, 2);
  return static_cast<float>(v);
}

struct QArgs {
  float* y;
  int64_t ldy;
  const uint8_t* w;
  const ActBlock* x;
  int64_t nb;         // activation blocks per row
  int64_t row_bytes;  // weight bytes per row
};

// Weight streams prefetch the same offset kPrefetchRows rows ahead (as avx2/matmul_avx2.cc, where it doubled
// decode throughput from DRAM; untuned on ARM hardware). PRFM never faults, even past the end.
constexpr int64_t kPrefetchRows = 8;
inline void prefetch(const void* p, int64_t row_bytes) {
  __builtin_prefetch(static_cast<const char*>(p) + kPrefetchRows * row_bytes);
}

// int32 dot of 32 signed weights (w0: elements 0..15, w1: 16..31) with an activation block.
inline int32x4_t dot32(int8x16_t w0, int8x16_t w1, const ActBlock& a) {
  const int32x4_t z = vdupq_n_s32(0);
  return Dot::acc(Dot::acc(z, w0, vld1q_s8(a.q)), w1, vld1q_s8(a.q + 16));
}

template <int R, int C>
inline void store(const QArgs& a, int64_t r, int64_t i, float32x4_t (&acc)[R][C]) {
  for (int k = 0; k < R; ++k)
    for (int c = 0; c < C; ++c) a.y[(i + c) * a.ldy + r + k] = vaddvq_f32(acc[k][c]);
}

// Symmetric weights over 32-element blocks (Q8G32, Q4G32); WLoad splits a block into two signed halves.
template <typename Block, typename WLoad>
struct SymKernel {
  QArgs a;
  template <int R, int C>
  void tile(int64_t r, int64_t i) const {
    float32x4_t acc[R][C];
    for (int k = 0; k < R; ++k)
      for (int c = 0; c < C; ++c) acc[k][c] = vdupq_n_f32(0.0f);
    const Block* w[R];
    for (int k = 0; k < R; ++k) w[k] = reinterpret_cast<const Block*>(a.w + (r + k) * a.row_bytes);
    const ActBlock* x[C];
    for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
    for (int64_t b = 0; b < a.nb; ++b) {
      for (int k = 0; k < R; ++k) {
        prefetch(&w[k][b], a.row_bytes);
        int8x16_t w0, w1;
        WLoad::load(w[k][b], &w0, &w1);
        const float dw = h2f(w[k][b].d);
        for (int c = 0; c < C; ++c) {
          const float32x4_t p = vcvtq_f32_s32(dot32(w0, w1, x[c][b]));
          acc[k][c] = vfmaq_n_f32(acc[k][c], p, dw * x[c][b].d);
        }
      }
    }
    store<R, C>(a, r, i, acc);
  }
};

struct LoadQ8 {
  static void load(const quant::BlockQ8G32& b, int8x16_t* w0, int8x16_t* w1) {
    *w0 = vld1q_s8(b.q);
    *w1 = vld1q_s8(b.q + 16);
  }
};
struct LoadQ4 {
  static void load(const quant::BlockQ4G32& b, int8x16_t* w0, int8x16_t* w1) {
    const uint8x16_t x = vld1q_u8(b.q);
    const int8x16_t e8 = vdupq_n_s8(8);
    *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(x, vdupq_n_u8(0x0f))), e8);
    *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(x, 4)), e8);
  }
};

struct Q4G64Kernel {
  QArgs a;
  template <int R, int C>
  void tile(int64_t r, int64_t i) const {
    float32x4_t acc[R][C];
    for (int k = 0; k < R; ++k)
      for (int c = 0; c < C; ++c) acc[k][c] = vdupq_n_f32(0.0f);
    const quant::BlockQ4G64* w[R];
    for (int k = 0; k < R; ++k) w[k] = reinterpret_cast<const quant::BlockQ4G64*>(a.w + (r + k) * a.row_bytes);
    const ActBlock* x[C];
    for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    const int8x16_t e8 = vdupq_n_s8(8);
    for (int64_t ab = 0; ab < a.nb; ab += 2) {
      const int64_t b = ab / 2;
      const bool full = ab + 1 < a.nb;
      for (int k = 0; k < R; ++k) {
        prefetch(&w[k][b], a.row_bytes);
        const uint8x16_t x0 = vld1q_u8(w[k][b].q), x1 = vld1q_u8(w[k][b].q + 16);
        const float dw = h2f(w[k][b].d);
        const int8x16_t lo0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(x0, m4)), e8);
        const int8x16_t lo1 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(x1, m4)), e8);
        const int8x16_t hi0 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(x0, 4)), e8);
        const int8x16_t hi1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(x1, 4)), e8);
        for (int c = 0; c < C; ++c) {
          acc[k][c] = vfmaq_n_f32(acc[k][c], vcvtq_f32_s32(dot32(lo0, lo1, x[c][ab])), dw * x[c][ab].d);
          if (full) {
            acc[k][c] = vfmaq_n_f32(acc[k][c], vcvtq_f32_s32(dot32(hi0, hi1, x[c][ab + 1])), dw * x[c][ab + 1].d);
          }
        }
      }
    }
    store<R, C>(a, r, i, acc);
  }
};

// Q4G32A: unsigned u in [0, 15] is also a valid signed byte; the min adds m * s_a per block.
struct Q4G32AKernel {
  QArgs a;
  template <int R, int C>
  void tile(int64_t r, int64_t i) const {
    float32x4_t acc[R][C];
    float corr[R][C] = {};
    for (int k = 0; k < R; ++k)
      for (int c = 0; c < C; ++c) acc[k][c] = vdupq_n_f32(0.0f);
    const quant::BlockQ4G32A* w[R];
    for (int k = 0; k < R; ++k) w[k] = reinterpret_cast<const quant::BlockQ4G32A*>(a.w + (r + k) * a.row_bytes);
    const ActBlock* x[C];
    for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
    for (int64_t b = 0; b < a.nb; ++b) {
      for (int k = 0; k < R; ++k) {
        const uint8x16_t q = vld1q_u8(w[k][b].q);
        const int8x16_t u0 = vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0f)));
        const int8x16_t u1 = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
        const float dw = h2f(w[k][b].d), mw = h2f(w[k][b].m);
        for (int c = 0; c < C; ++c) {
          acc[k][c] = vfmaq_n_f32(acc[k][c], vcvtq_f32_s32(dot32(u0, u1, x[c][b])), dw * x[c][b].d);
          corr[k][c] += mw * x[c][b].s;
        }
      }
    }
    for (int k = 0; k < R; ++k)
      for (int c = 0; c < C; ++c) a.y[(i + c) * a.ldy + r + k] = vaddvq_f32(acc[k][c]) + corr[k][c];
  }
};

// 32 registers: decode 4 weight rows x 1 activation row; prefill 4 x 4 (16 accumulators).
constexpr int kRowsDecode = 4, kRowsPrefill = 4, kColsPrefill = 4;

inline QArgs qargs(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t n, int64_t group,
                   int64_t block_bytes) {
  return QArgs{y, ldy, w, x, quant::act_blocks(n), (n + group - 1) / group * block_bytes};
}

template <typename K>
inline void run(const K& k, int64_t m, int64_t r0, int64_t r1) {
  matmul_tiles<kRowsDecode, kRowsPrefill, kColsPrefill>(k, m, r0, r1);
}

// Q4G32R8 (quant/blocks.h): 8 weight rows at once, rows 0-3 and 4-7 in two vectors with one int32 lane per
// row; each 4-element chunk of the activation is broadcast to every lane. Nibbles become signed (u - 8) so
// the block's integer dot is exact and scaled once per block by dw[row] * da.
struct Q4R8Kernel {
  QArgs a;
  template <int C>
  void tile(int64_t r, int64_t i) const {
    const auto* wg = reinterpret_cast<const quant::BlockQ4G32R8*>(a.w) + (r / 8) * a.nb;
    const ActBlock* x[C];
    for (int c = 0; c < C; ++c) x[c] = a.x + (i + c) * a.nb;
    float32x4_t acc0[C], acc1[C];
    for (int c = 0; c < C; ++c) acc0[c] = acc1[c] = vdupq_n_f32(0.0f);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    const int8x16_t e8 = vdupq_n_s8(8);
    for (int64_t b = 0; b < a.nb; ++b) {
      const quant::BlockQ4G32R8& blk = wg[b];
      __builtin_prefetch(reinterpret_cast<const char*>(&blk) + 640);
      int32x4_t s0[C], s1[C];
      for (int c = 0; c < C; ++c) s0[c] = s1[c] = vdupq_n_s32(0);
      for (int p = 0; p < 4; ++p) {
        const uint8x16_t r0 = vld1q_u8(blk.q + 32 * p), r1 = vld1q_u8(blk.q + 32 * p + 16);
        const int8x16_t lo0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(r0, m4)), e8);
        const int8x16_t hi0 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(r0, 4)), e8);
        const int8x16_t lo1 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(r1, m4)), e8);
        const int8x16_t hi1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(r1, 4)), e8);
        for (int c = 0; c < C; ++c) {
          int32_t al, ah;
          __builtin_memcpy(&al, x[c][b].q + 4 * p, 4);
          __builtin_memcpy(&ah, x[c][b].q + 16 + 4 * p, 4);
          const int8x16_t vl = vreinterpretq_s8_s32(vdupq_n_s32(al)), vh = vreinterpretq_s8_s32(vdupq_n_s32(ah));
          s0[c] = Dot::lanes4(Dot::lanes4(s0[c], lo0, vl), hi0, vh);
          s1[c] = Dot::lanes4(Dot::lanes4(s1[c], lo1, vl), hi1, vh);
        }
      }
      float dwf[8];
      for (int k = 0; k < 8; ++k) dwf[k] = h2f(blk.d[k]);
      const float32x4_t dw0 = vld1q_f32(dwf), dw1 = vld1q_f32(dwf + 4);
      for (int c = 0; c < C; ++c) {
        acc0[c] = vfmaq_f32(acc0[c], vcvtq_f32_s32(s0[c]), vmulq_n_f32(dw0, x[c][b].d));
        acc1[c] = vfmaq_f32(acc1[c], vcvtq_f32_s32(s1[c]), vmulq_n_f32(dw1, x[c][b].d));
      }
    }
    for (int c = 0; c < C; ++c) {
      vst1q_f32(a.y + (i + c) * a.ldy + r, acc0[c]);
      vst1q_f32(a.y + (i + c) * a.ldy + r + 4, acc1[c]);
    }
  }
};

inline void run_r8(const Q4R8Kernel& k, int64_t m, int64_t r0, int64_t r1) {
  near_equal_col_tiles<4>(m, [&]<int C>(int64_t i) {
    for (int64_t r = r0; r < r1; r += 8) k.tile<C>(r, i);
  });
}
