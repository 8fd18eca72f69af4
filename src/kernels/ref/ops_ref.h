// Scalar float32 reference operators: the ground truth every ISA kernel is tested against, and the
// operators of the portable reference runtime. Plain loops, no intrinsics.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/dtype.h"

namespace pocket::ref {

// out[i] = x[i] / rms(x) * w[i]; rms(x) = sqrt(mean(x^2) + eps). out may alias x.
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps);

// y[r] = dot(W[r, :], x) for rows [r0, r1) of a row-major [rows, n] matrix in dtype `t` (f32/f16/bf16).
void matvec_rows(float* y, const uint8_t* w, DType t, const float* x, int64_t n, int64_t r0, int64_t r1);

// Converts one row of `n` elements of dtype `t` to float32.
void row_to_f32(float* out, const uint8_t* row, DType t, int64_t n);

// In-place softmax over x[0..n).
void softmax(float* x, int64_t n);

// Rotary position embedding over one head of `head_dim` values at position `pos`.
// Interleaved pairs (x[2i], x[2i+1]) as llama2.c and Meta's Llama use; neox rotates (x[i], x[i + d/2]).
void rope_interleaved(float* x, int64_t head_dim, int64_t pos, float theta);
void rope_neox(float* x, int64_t head_dim, int64_t pos, float theta);

// gate[i] = silu(gate[i]) * up[i].
void swiglu(float* gate, const float* up, int64_t n);

float dot_f32(const float* a, const float* b, int64_t n);

}  // namespace pocket::ref
