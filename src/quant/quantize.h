// Scalar quantise / dequantise for every block format, and the int8 activation quantiser's reference.
// Round-to-nearest everywhere; the rules (scale choice, padding) are documented per format below and in
// docs/kernels.md. These are the ground truth the kernels and `pocket quantize` use.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "format/dtype.h"
#include "quant/blocks.h"

namespace pocket::quant {

// True for the block types this layer can quantise (Q8G32, Q4G32, Q4G64, Q4G32A).
bool is_quantised(DType t);

// One row of `n` floats into ceil(n / G) blocks at `out`. Elements past n in the last block are treated as
// zeros (symmetric types then store q = 0; Q4G32A stores u = 0 and takes min/max over the real elements).
//  Q8G32: d = f16(absmax / 127), q = clamp(round(x / d), -127, 127).
//  Q4G32/Q4G64: v = the element of largest |x|; d = f16(v / -8), q = clamp(round(x / d), -8, 7), u = q + 8.
//  Q4G32A: d = f16((max - min) / 15), m = f16(min), u = clamp(round((x - m) / d), 0, 15).
// The scale is rounded to f16 before the q are computed, so decoding uses exactly the scale that was fitted.
// Error per element <= d / 2, except that symmetric Q4 reaches only +7 steps on the side opposite the
// largest-magnitude element: elements there beyond 7.5 steps clip, with error <= one step.
void quantize_row_q8g32(BlockQ8G32* out, const float* x, int64_t n);
void quantize_row_q4g32(BlockQ4G32* out, const float* x, int64_t n);
void quantize_row_q4g64(BlockQ4G64* out, const float* x, int64_t n);
void quantize_row_q4g32a(BlockQ4G32A* out, const float* x, int64_t n);

void dequantize_row_q8g32(float* out, const BlockQ8G32* in, int64_t n);
void dequantize_row_q4g32(float* out, const BlockQ4G32* in, int64_t n);
void dequantize_row_q4g64(float* out, const BlockQ4G64* in, int64_t n);
void dequantize_row_q4g32a(float* out, const BlockQ4G32A* in, int64_t n);

// Activation row -> act_blocks(n) ActBlocks: d = absmax / 127, q = nearbyint(x * (127 / absmax)) (ties to
// even, the rounding the SIMD conversions use), s = float(sum q) * d. The SIMD versions in kernels/ match
// this bit for bit.
void quantize_act_row_ref(ActBlock* out, const float* x, int64_t n);

// Q4G32 <-> Q4G32R8 (blocks.h). interleave_r8: `src` holds a row-major Q4G32 [rows, cols] tensor, rows a
// multiple of 8; `dst` the same number of bytes. r8_row: row `row` of a Q4G32R8 tensor as ceil(cols / 32)
// row-major Q4G32 blocks (a lossless byte permutation both ways).
void interleave_r8(uint8_t* dst, const uint8_t* src, int64_t rows, int64_t cols);
void r8_row(BlockQ4G32* out, const uint8_t* src, int64_t cols, int64_t row);

// Quantises a row-major [rows, cols] float matrix into `dst` (a block type, or F32/F16/BF16 for a plain
// conversion). `out` must hold exactly tensor_bytes(dst, {rows, cols}) bytes.
[[nodiscard]] Status quantize_tensor(DType dst, const float* src, int64_t rows, int64_t cols,
                                     std::span<uint8_t> out);

// Decodes row `row` of a row-major [rows, cols] tensor of dtype `t` stored in `data` into out[0..cols).
[[nodiscard]] Status dequantize_row(DType t, std::span<const uint8_t> data, int64_t rows, int64_t cols,
                                    int64_t row, float* out);

}  // namespace pocket::quant
