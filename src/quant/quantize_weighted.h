// Importance-aware block quantisers (`pocket quantize --imatrix`): per block, the scale (and for Q4G32A the
// minimum) that minimises sum_k imp[k] * (x[k] - dequant(q[k]))^2 over a small candidate set, instead of the
// plain quantiser's absmax / min-max fit. imp[k] is the mean square of the activation that multiplies
// column k (quant/importance.h), so the objective approximates the matmul's output error on that data.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "format/dtype.h"
#include "quant/blocks.h"

namespace pocket::quant {

// Candidates per block, every scale rounded to f16 before the q are re-rounded and the error evaluated:
//  Q8G32:        d0 * (1 + t/40), t = -10..10, d0 = absmax / 127.
//  Q4G32/Q4G64:  the same steps around both v / -8 (the plain choice) and v / 7 (v the largest-magnitude
//                element, mapped to +7 instead of -8).
//  Q4G32A:       d0 * (1 + t/40) with m = min or m centring the grid on [min, max].
// Then the best candidate's least-squares refit (weighted, q held fixed) is tried too. The plain
// quantiser's block (t = 0) is always a candidate and wins ties, so for any imp the weighted error is never
// above the plain one, and with imp all zero in a block the block is bit-identical to the plain one.
// `imp` has n entries, each >= 0. Elements past n in the last block are zeros of weight 0.
void quantize_row_q8g32_weighted(BlockQ8G32* out, const float* x, const float* imp, int64_t n);
void quantize_row_q4g32_weighted(BlockQ4G32* out, const float* x, const float* imp, int64_t n);
void quantize_row_q4g64_weighted(BlockQ4G64* out, const float* x, const float* imp, int64_t n);
void quantize_row_q4g32a_weighted(BlockQ4G32A* out, const float* x, const float* imp, int64_t n);

// quantize_tensor with per-column importance `importance` ([cols], the same for every row). The weights used
// are imp + 1e-3 * mean(imp), so a column never seen active in calibration still counts a little. Empty
// importance, importance that is all zero, or a non-block dst → exactly quantize_tensor. Q4G32R8 is
// quantised as row-major Q4G32 and then interleaved, as quantize_tensor does.
[[nodiscard]] Status quantize_tensor_weighted(DType dst, const float* src, int64_t rows, int64_t cols,
                                              std::span<const float> importance, std::span<uint8_t> out);

}  // namespace pocket::quant
