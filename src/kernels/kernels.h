// pocket's compute kernels: one dispatch table, chosen once at start from the CPU's features, with scalar
// (ref/), AVX2+FMA+F16C (avx2/) and NEON (neon/) implementations. Every kernel works on a range of rows or
// tasks so a ThreadPool can split it without allocating; the wrappers at the bottom do that split.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/thread_pool.h"
#include "format/dtype.h"
#include "quant/blocks.h"

namespace pocket::kernels {

using quant::ActBlock;

// A weight matrix as stored in the package: [rows, cols], row-major, each row ceil(cols / G) blocks for a
// block type (Layout::kRowMajor).
struct MatrixView {
  const uint8_t* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
};

enum class RopeStyle { kInterleaved, kNeox };

// One layer's attention over an f16 KV cache (see KernelTable::attention).
struct AttentionShape {
  int64_t m = 1;          // query rows, at positions pos0 .. pos0 + m - 1
  int64_t pos0 = 0;       // position of the first query row; the cache holds positions 0 .. pos0 + m - 1
  int64_t n_heads = 1;
  int64_t n_kv_heads = 1;  // n_heads is a multiple of it (GQA); head h reads kv head h / (n_heads / n_kv_heads)
  int64_t head_dim = 64;   // at most kMaxHeadDim
  float scale = 0.125f;    // usually 1 / sqrt(head_dim)
  // The cache's layout, in elements: key/value head h of position j at k + h * head_stride + j * pos_stride.
  // 0 means the interleaved layout [n_ctx][n_kv_heads][head_dim] (pos_stride = n_kv_heads * head_dim,
  // head_stride = head_dim); the model's cache is head-major [n_kv_heads][n_ctx][head_dim] (pos_stride =
  // head_dim, head_stride = n_ctx * head_dim), so a kv head's walk is one contiguous run.
  int64_t pos_stride = 0;
  int64_t head_stride = 0;
};
inline int64_t kv_pos_stride(const AttentionShape& s) {
  return s.pos_stride != 0 ? s.pos_stride : s.n_kv_heads * s.head_dim;
}
inline int64_t kv_head_stride(const AttentionShape& s) { return s.head_stride != 0 ? s.head_stride : s.head_dim; }
inline constexpr int64_t kMaxHeadDim = 256;
inline constexpr int64_t kMaxGroup = 16;  // n_heads / n_kv_heads
inline constexpr int64_t kAttentionRows = 16;  // rows of one kv head per attention call from the pool wrapper

// Quantised weights x int8 activations: Y[i, r] = sum_k W[r, k] * X[i, k] for i in [0, m), r in [r0, r1).
// w: [rows, n] blocks; x: [m, act_blocks(n)] ActBlocks; y[i * ldy + r]. Each weight block is read from
// memory once for all m rows (weight-row tiles outside, activation rows inside).
using MatmulQFn = void (*)(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n,
                           int64_t r0, int64_t r1);
// Float weights (F32 or F16) x float activations x: [m, n] f32, same shapes otherwise.
using MatmulFFn = void (*)(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n,
                           int64_t r0, int64_t r1);

struct KernelTable {
  std::string_view name;  // "ref", "avx2", "neon", "neon-dotprod"
  MatmulQFn matmul_q8g32 = nullptr;
  MatmulQFn matmul_q4g32 = nullptr;
  MatmulQFn matmul_q4g64 = nullptr;
  MatmulQFn matmul_q4g32a = nullptr;
  // Q4G32R8 (8-row interleaved Q4G32): r0 and r1 are multiples of 8.
  MatmulQFn matmul_q4g32r8 = nullptr;
  MatmulFFn matmul_f32 = nullptr;
  MatmulFFn matmul_f16 = nullptr;
  // One row of n floats -> act_blocks(n) ActBlocks, bit-identical to quant::quantize_act_row_ref.
  void (*quantize_act)(ActBlock* out, const float* x, int64_t n) = nullptr;
  // out = x / sqrt(mean(x^2) + eps) * w over one row; out may alias x.
  void (*rmsnorm)(float* out, const float* x, const float* w, int64_t n, float eps) = nullptr;
  void (*softmax)(float* x, int64_t n) = nullptr;  // in place, one row
  // Rotates every head of one row [n_heads, head_dim] by the angles of its position: pair i by the angle
  // whose cosine and sine are cs[i] and sn[i], i < head_dim / 2 (rope_angles).
  void (*rope)(float* x, int64_t n_heads, int64_t head_dim, const float* cs, const float* sn,
               RopeStyle style) = nullptr;
  void (*swiglu)(float* gate, const float* up, int64_t n) = nullptr;  // gate = silu(gate) * up
  // out[i] = f32_to_f16(in[i]) (core/half.h: round to nearest even, overflow to infinity, subnormals kept),
  // bit for bit for every non-NaN input; NaN stays NaN. The KV cache write.
  void (*f32_to_f16)(uint16_t* out, const float* in, int64_t n) = nullptr;
  // Causal GQA attention, flash style (online softmax over key tiles; no [m, n_ctx] score matrix).
  // q: [m, n_heads, head_dim] f32; k, v: [n_ctx, n_kv_heads, head_dim] f16 (n_ctx >= pos0 + m);
  // out: [m, n_heads, head_dim] f32. Tasks t in [t0, t1) of n_kv_heads * m, kv head major: kv head t / m and
  // row t % m, with all the query heads that share the kv head. A range of consecutive rows of one kv head
  // may share each converted key/value tile among its rows; every row's result is bitwise the same however
  // the tasks are split (a decode step's row equals the same row of a verify batch).
  void (*attention)(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
                    int64_t t0, int64_t t1) = nullptr;
};

// The table for this CPU, chosen on first use (thread-safe) and fixed for the process.
const KernelTable& active();
// Every table this build and CPU can run, best last ("ref" first); for tests and benchmarks.
int n_available();
const KernelTable& available(int i);

// --- Row-range entry points over the active table ---------------------------------------------------------

// True when matmul supports this weight dtype (F32, F16, Q8G32, Q4G32, Q4G64, Q4G32A, Q4G32R8).
bool matmul_supports(DType t);
// Y[m, ldy] rows r0..r1 of W·X. Quantised dtypes read xq (act_blocks(n) per row), float dtypes read x.
void matmul(float* y, int64_t ldy, const MatrixView& w, const float* x, const ActBlock* xq, int64_t m,
            int64_t r0, int64_t r1);
void quantize_act_rows(ActBlock* out, const float* x, int64_t n, int64_t r0, int64_t r1);

// One activation row as int8 twice over: hi = quantize_act(x), lo = quantize_act(x - hi) block by block (the
// residual each 32-group's rounding left), so x ~= hi.d * hi.q + lo.d * lo.q to ~2^-15 of each group's
// absmax instead of ~2^-8.
void quantize_act_residual_rows(ActBlock* hi, ActBlock* lo, const float* x, int64_t n, int64_t r0, int64_t r1);

// --- Convenience wrappers that split over a ThreadPool ----------------------------------------------------

// Q8G32 weights run against 16-bit-precise activations: X is quantised with its int8 residual
// (quantize_act_residual_rows), both halves go through the same int8 kernel as 2m activation rows (each
// weight block is still read once) and the two products are summed. Q8 is the accuracy policy, and int8
// activations were the larger part of its error (stories260K, KL to F32 over the reference sequences:
// 6.6e-4 with int8 activations, 3.4e-4 with the residual; the greedy texts become F32's). Decode stays
// bound by the weight stream; the integer work doubles. Q4 weights keep plain int8 activations: their own
// rounding error is ~8x larger, so the residual would buy nothing.
inline bool residual_activations(DType t) { return t == DType::kQ8G32; }
// Weight rows per residual tile: the two products of a tile are summed from a per-thread buffer.
inline constexpr int64_t kResidualTileRows = 64;

// The scratch the wrappers below need for m activation rows of width n. `tiles` is unused (may be null)
// unless a matrix has residual_activations(); then it holds pool.n_threads() * residual_tile_floats(m).
struct Scratch {
  ActBlock* xq = nullptr;  // act_scratch_blocks(residual, m, n) blocks (unused for float W)
  float* tiles = nullptr;
};
inline int64_t act_scratch_blocks(bool residual, int64_t m, int64_t n) {
  return (residual ? 2 : 1) * m * quant::act_blocks(n);
}
inline int64_t residual_tile_floats(int64_t m) { return 2 * m * kResidualTileRows; }

// Y[m, w.rows] = X[m, w.cols] · W^T.
void matmul(ThreadPool& pool, float* y, const MatrixView& w, const float* x, const Scratch& scratch, int64_t m);

// Several matrices applied to the same X (q/k/v, gate/up): ys[j][m, ws[j].rows] = X · ws[j]^T, with one
// activation quantisation and one pool run over all their rows (a decode step has ~200 runs; each costs a
// hand-off and a tail where one thread waits). Every ws[j] has X's width and is of the same kind (all
// quantised, or all float); count <= kMaxShared.
inline constexpr int kMaxShared = 4;
void matmul_shared(ThreadPool& pool, float* const* ys, const MatrixView* ws, int count, const float* x,
                   const Scratch& scratch, int64_t m);
// x: [m, n] in place / out: [m, n].
void rmsnorm(ThreadPool& pool, float* out, const float* x, const float* w, int64_t m, int64_t n, float eps);
void softmax(ThreadPool& pool, float* x, int64_t m, int64_t n);
void swiglu(ThreadPool& pool, float* gate, const float* up, int64_t m, int64_t n);
// The KV cache write: rows [m, n_heads, head_dim] of floats to a head-major f16 cache, row i of head h at
// out + h * head_stride + i * head_dim (KernelTable::f32_to_f16), split over the pool when large.
void to_f16_heads(ThreadPool& pool, uint16_t* out, int64_t head_stride, const float* in, int64_t m,
                  int64_t n_heads, int64_t head_dim);
// The rotary angles of position pos, with the reference's formula (ref::rope_neox): for i < head_dim / 2,
// angle_i = pos * (1 / theta^(2i / head_dim)) in float, cs[i] = cos(angle_i), sn[i] = sin(angle_i). A forward
// pass computes them once per row and every layer's q and k reuse them (per layer and head they were 3 libm
// calls per pair: ~0.3 ms of an 8-row pass of pocket-0.3b).
void rope_angles(float* cs, float* sn, int64_t head_dim, int64_t pos, float theta);
// x: [m, n_heads, head_dim]; row i rotated by the angles cs/sn + i * (head_dim / 2) (rope_angles).
void rope(ThreadPool& pool, float* x, int64_t m, int64_t n_heads, int64_t head_dim, const float* cs,
          const float* sn, RopeStyle style);
void attention(ThreadPool& pool, float* out, const float* q, const uint16_t* k, const uint16_t* v,
               const AttentionShape& s);

}  // namespace pocket::kernels
