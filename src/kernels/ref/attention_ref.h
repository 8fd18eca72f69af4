// Scalar reference attention (flash style over an f16 KV cache) and the row-wise RoPE the table exposes.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace pocket::kernels::ref {

// See KernelTable::attention.
void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1);
// See KernelTable::rope: ops_ref's rope_interleaved / rope_neox rotation of each head, with the angles given.
void rope_heads(float* x, int64_t n_heads, int64_t head_dim, const float* cs, const float* sn, RopeStyle style);

}  // namespace pocket::kernels::ref
