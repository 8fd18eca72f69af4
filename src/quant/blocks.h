// Byte layouts of pocket's quantised blocks (weights in the package, int8 activations at run time).
// Sizes are normative (format/dtype.h); every struct is packed to exactly those bytes, little-endian.
#pragma once

#include <cstdint>

namespace pocket::quant {

// Q8G32: x[i] = d * q[i], q in [-127, 127]. 34 bytes.
struct BlockQ8G32 {
  uint16_t d;  // f16 scale = absmax / 127
  int8_t q[32];
};

// Q4G32: x[i] = d * (u[i] - 8), u in [0, 15]. 18 bytes.
// Nibble order: byte j (0..15) holds element j in its low nibble and element j + 16 in its high nibble, so
// one 16-byte load gives elements 0..15 by masking and 16..31 by shifting (cheap on AVX2 and NEON).
struct BlockQ4G32 {
  uint16_t d;  // f16 scale = v / -8 where v is the element of largest magnitude (v maps to q = -8 exactly)
  uint8_t q[16];
};

// Q4G64: x[i] = d * (u[i] - 8). 34 bytes. Byte j (0..31): element j low nibble, element j + 32 high nibble,
// so one 32-byte load gives elements 0..31 (mask) and 32..63 (shift).
struct BlockQ4G64 {
  uint16_t d;
  uint8_t q[32];
};

// Q4G32A: x[i] = d * u[i] + m, u in [0, 15]. 20 bytes. Nibble order as BlockQ4G32.
struct BlockQ4G32A {
  uint16_t d;  // f16 (max - min) / 15
  uint16_t m;  // f16 min
  uint8_t q[16];
};

// Q4G32R8: 8 rows r0..r0+7 of Q4G32 interleaved block by block, for kernels that compute 8 rows at once
// (one 32-bit lane per row). Block b of the group: the 8 rows' f16 scales, then 128 bytes where byte
// 32 * p + 4 * r + j (p in 0..3, r in 0..7, j in 0..3) is byte 4 * p + j of row r's BlockQ4G32 q: low nibble
// u of element 4p + j, high nibble u of element 16 + 4p + j. A group of 8 rows of nb blocks is nb of these
// in order; the tensor is its groups in order. 144 bytes = 8 x 18: the same size as Q4G32.
struct BlockQ4G32R8 {
  uint16_t d[8];
  uint8_t q[128];
};
inline constexpr int64_t kR8Rows = 8;

// Activations quantised for the integer dot products: x[i] ~= d * q[i], q in [-127, 127].
// s = d * sum(q) lets the kernels fold the +8 offset of Q4 and the min of Q4G32A into one multiply-add
// per block; s8 = -8 s (exact) is that offset term ready to add, so a batched kernel broadcasts it from
// memory instead of multiplying per block and row (the multiply would share the ports of the dot
// products). Elements past the end of a row are q = 0. 44 bytes; never stored in a file.
struct ActBlock {
  float d;   // absmax / 127 (0 for an all-zero block)
  float s;   // d * sum(q), computed as float(sum) * d
  float s8;  // -8 * s
  int8_t q[32];
};

inline constexpr int64_t kActGroup = 32;  // elements per ActBlock

static_assert(sizeof(BlockQ8G32) == 34);
static_assert(sizeof(BlockQ4G32) == 18);
static_assert(sizeof(BlockQ4G64) == 34);
static_assert(sizeof(BlockQ4G32A) == 20);
static_assert(sizeof(BlockQ4G32R8) == 144);
static_assert(sizeof(ActBlock) == 44);
static_assert(alignof(BlockQ8G32) == 2 && alignof(BlockQ4G32A) == 2);

// Activation blocks for a row of n elements.
inline constexpr int64_t act_blocks(int64_t n) { return (n + kActGroup - 1) / kActGroup; }

}  // namespace pocket::quant
