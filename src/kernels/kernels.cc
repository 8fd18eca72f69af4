// Row-range entry points over the active kernel table, and the ThreadPool wrappers that split them.
#include "kernels/kernels.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace pocket::kernels {

bool matmul_supports(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kQ8G32:
    case DType::kQ4G32:
    case DType::kQ4G64:
    case DType::kQ4G32A:
    case DType::kQ4G32R8:
      return true;
    default:
      return false;
  }
}

void matmul(float* y, int64_t ldy, const MatrixView& w, const float* x, const ActBlock* xq, int64_t m,
            int64_t r0, int64_t r1) {
  const KernelTable& k = active();
  const int64_t n = w.cols;
  switch (w.dtype) {
    case DType::kF32: return k.matmul_f32(y, ldy, w.data, x, m, n, r0, r1);
    case DType::kF16: return k.matmul_f16(y, ldy, w.data, x, m, n, r0, r1);
    case DType::kQ8G32: return k.matmul_q8g32(y, ldy, w.data, xq, m, n, r0, r1);
    case DType::kQ4G32: return k.matmul_q4g32(y, ldy, w.data, xq, m, n, r0, r1);
    case DType::kQ4G64: return k.matmul_q4g64(y, ldy, w.data, xq, m, n, r0, r1);
    case DType::kQ4G32A: return k.matmul_q4g32a(y, ldy, w.data, xq, m, n, r0, r1);
    case DType::kQ4G32R8: return k.matmul_q4g32r8(y, ldy, w.data, xq, m, n, r0, r1);
    default: assert(false && "matmul: unsupported weight dtype (check matmul_supports)"); return;
  }
}

void quantize_act_rows(ActBlock* out, const float* x, int64_t n, int64_t r0, int64_t r1) {
  const KernelTable& k = active();
  const int64_t nb = quant::act_blocks(n);
  for (int64_t r = r0; r < r1; ++r) k.quantize_act(out + r * nb, x + r * n, n);
}

void quantize_act_residual_rows(ActBlock* hi, ActBlock* lo, const float* x, int64_t n, int64_t r0, int64_t r1) {
  const KernelTable& k = active();
  const int64_t nb = quant::act_blocks(n);
  for (int64_t r = r0; r < r1; ++r) {
    ActBlock* h = hi + r * nb;
    ActBlock* l = lo + r * nb;
    const float* xr = x + r * n;
    k.quantize_act(h, xr, n);
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t k0 = b * quant::kActGroup, len = std::min<int64_t>(quant::kActGroup, n - k0);
      float res[quant::kActGroup];
      for (int64_t i = 0; i < len; ++i) res[i] = xr[k0 + i] - h[b].d * static_cast<float>(h[b].q[i]);
      k.quantize_act(l + b, res, len);
    }
  }
}

namespace {
// Weight rows per grain: a multiple of every tile height so threads never split a register tile, and large
// enough that the per-slice overhead is negligible.
constexpr int64_t kRowGrain = 16;
}  // namespace

void matmul(ThreadPool& pool, float* y, const MatrixView& w, const float* x, const Scratch& scratch, int64_t m) {
  matmul_shared(pool, &y, &w, 1, x, scratch, m);  // one matrix: the same quantisation and row split
}

void matmul_shared(ThreadPool& pool, float* const* ys, const MatrixView* ws, int count, const float* x,
                   const Scratch& scratch, int64_t m) {
  assert(count >= 1 && count <= kMaxShared);
  const bool quantised = ws[0].dtype != DType::kF32 && ws[0].dtype != DType::kF16;
  bool residual = false;
  for (int j = 0; j < count; ++j) residual = residual || residual_activations(ws[j].dtype);
  ActBlock* const xq = scratch.xq;
  const int64_t n = ws[0].cols;
  if (residual) {
    // Rows [0, m) hold the int8 activations every matrix reads; rows [m, 2m) their residuals.
    assert(scratch.tiles != nullptr);
    ActBlock* lo = xq + m * quant::act_blocks(n);
    pool.run(m, [&](int64_t b, int64_t e, int) { quantize_act_residual_rows(xq, lo, x, n, b, e); });
  } else if (quantised) {
    pool.run(m, [&](int64_t b, int64_t e, int) { quantize_act_rows(xq, x, n, b, e); });
  }
  // The matrices' rows laid end to end, each starting on a grain boundary, so that a chunk of the joint
  // range maps to grain-aligned row ranges of each matrix it touches (Q4G32R8 needs multiples of 8).
  int64_t off[kMaxShared + 1] = {0};
  for (int j = 0; j < count; ++j) off[j + 1] = off[j] + (ws[j].rows + kRowGrain - 1) / kRowGrain * kRowGrain;
  pool.run(off[count], [&](int64_t b, int64_t e, int t) {
    for (int j = 0; j < count; ++j) {
      const int64_t lo = std::max(b, off[j]) - off[j], hi = std::min(e, off[j] + ws[j].rows) - off[j];
      if (lo >= hi) continue;
      if (!residual_activations(ws[j].dtype)) {
        matmul(ys[j], ws[j].rows, ws[j], x, xq, m, lo, hi);
        continue;
      }
      // Both halves as 2m rows of one kernel call per tile, into this thread's tile; then summed into Y.
      float* tile = scratch.tiles + t * residual_tile_floats(m);
      for (int64_t r0 = lo; r0 < hi; r0 += kResidualTileRows) {
        const int64_t r1 = std::min(hi, r0 + kResidualTileRows);
        matmul(tile - r0, kResidualTileRows, ws[j], x, xq, 2 * m, r0, r1);
        for (int64_t i = 0; i < m; ++i) {
          const float* a = tile + i * kResidualTileRows;
          const float* c = tile + (m + i) * kResidualTileRows;
          float* out = ys[j] + i * ws[j].rows;
          for (int64_t r = r0; r < r1; ++r) out[r] = a[r - r0] + c[r - r0];
        }
      }
    }
  }, kRowGrain);
}

namespace {
// Row-wise element jobs of fewer than about kInlineElements elements run on the calling thread: a pool
// hand-off (and the gap it leaves in a decode step's weight stream) costs more than the work. Rows per grain
// such that one grain holds at least that many elements; run() calls inline when there is one grain. 16384
// keeps a verify pass's 8-row RMSNorm and RoPE of q (8 x 1024) inline: pocket-0.3b at depth 1024 on the
// Intel Xeon VM, 8-row passes 0.06-0.22 ms faster than with 4096 (alternating in one process, 3 x 30 pairs);
// 32768, which also keeps the 8-row SwiGLU (8 x 2816) inline, was no faster.
constexpr int64_t kInlineElements = 16384;
int64_t row_grain(int64_t elements_per_row) {
  return std::max<int64_t>(1, kInlineElements / std::max<int64_t>(1, elements_per_row));
}
}  // namespace

void rmsnorm(ThreadPool& pool, float* out, const float* x, const float* w, int64_t m, int64_t n, float eps) {
  const auto fn = active().rmsnorm;
  pool.run(m, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) fn(out + i * n, x + i * n, w, n, eps);
  }, row_grain(n));
}

void softmax(ThreadPool& pool, float* x, int64_t m, int64_t n) {
  const auto fn = active().softmax;
  pool.run(m, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) fn(x + i * n, n);
  }, row_grain(n));
}

void swiglu(ThreadPool& pool, float* gate, const float* up, int64_t m, int64_t n) {
  const auto fn = active().swiglu;
  pool.run(m, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) fn(gate + i * n, up + i * n, n);
  }, row_grain(n));
}

void to_f16_heads(ThreadPool& pool, uint16_t* out, int64_t head_stride, const float* in, int64_t m,
                  int64_t n_heads, int64_t head_dim) {
  const auto fn = active().f32_to_f16;
  pool.run(m, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      for (int64_t h = 0; h < n_heads; ++h) {
        fn(out + h * head_stride + i * head_dim, in + (i * n_heads + h) * head_dim, head_dim);
      }
    }
  }, row_grain(n_heads * head_dim));
}

void rope_angles(float* cs, float* sn, int64_t head_dim, int64_t pos, float theta) {
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float freq = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
    const float angle = static_cast<float>(pos) * freq;
    cs[i] = std::cos(angle);
    sn[i] = std::sin(angle);
  }
}

void rope(ThreadPool& pool, float* x, int64_t m, int64_t n_heads, int64_t head_dim, const float* cs,
          const float* sn, RopeStyle style) {
  const auto fn = active().rope;
  assert(head_dim <= kMaxHeadDim && head_dim % 2 == 0);
  const int64_t stride = n_heads * head_dim, half = head_dim / 2;
  pool.run(m, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) fn(x + i * stride, n_heads, head_dim, cs + i * half, sn + i * half, style);
  }, row_grain(stride));
}

void attention(ThreadPool& pool, float* out, const float* q, const uint16_t* k, const uint16_t* v,
               const AttentionShape& s) {
  const auto fn = active().attention;
  assert(s.head_dim <= kMaxHeadDim && s.n_kv_heads > 0 && s.n_heads % s.n_kv_heads == 0 &&
         s.n_heads / s.n_kv_heads <= kMaxGroup);
  // Units of up to kAttentionRows consecutive rows of one kv head (the kernel converts each key/value tile
  // once for them). Causal rows grow in cost with their index, so the pool's contiguous slices are mapped
  // zig-zag onto row blocks (0, last, 1, last - 1, ...): every slice gets an even mix of short and long rows.
  const int64_t m = s.m, nkv = s.n_kv_heads;
  const int64_t nblk = (m + kAttentionRows - 1) / kAttentionRows;
  pool.run(nblk * nkv, [&](int64_t b, int64_t e, int) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t p = u / nkv, blk = p % 2 == 0 ? p / 2 : nblk - 1 - p / 2, kvh = u % nkv;
      const int64_t r0 = blk * kAttentionRows, r1 = std::min(m, r0 + kAttentionRows);
      fn(out, q, k, v, s, kvh * m + r0, kvh * m + r1);
    }
  });
}

}  // namespace pocket::kernels
