// Reference batched matmul: each thread takes a slice of weight rows, converts each row to f32 once and
// dots it with every activation row.
#include "model/matmul.h"

#include "kernels/kernels.h"
#include "kernels/ref/ops_ref.h"
#include "quant/quantize.h"

namespace pocket {

void weight_row_to_f32(float* out, const WeightRef& W, int64_t r) {
  const uint64_t rb = *row_bytes(W.dtype, static_cast<uint64_t>(W.cols));
  if (quant::is_quantised(W.dtype)) {
    // The row is in bounds (checked by the caller), so the only failure mode is an unknown dtype, which
    // binding already refused.
    (void)quant::dequantize_row(W.dtype, std::span<const uint8_t>(W.data, rb * static_cast<uint64_t>(W.rows)), W.rows,
                                W.cols, r, out);
    return;
  }
  ref::row_to_f32(out, W.data + r * rb, W.dtype, W.cols);
}

void matmul(ThreadPool& pool, float* Y, const float* X, int64_t M, const WeightRef& W, const MatmulScratch& s) {
  const int64_t n = W.cols, rows = W.rows;
  if (W.dtype != DType::kF32 && W.dtype != DType::kBF16 && kernels::matmul_supports(W.dtype)) {
    kernels::MatrixView view{W.data, W.dtype, W.rows, W.cols};
    kernels::matmul(pool, Y, view, X, kernels::Scratch{s.xq, s.tiles}, M);
    return;
  }
  float* row_buf = s.row_buf;
  const int64_t row_buf_stride = s.row_buf_stride;
  if (M == 1 && W.dtype != DType::kF32) {
    pool.run(rows, [&](int64_t r0, int64_t r1, int) { ref::matvec_rows(Y, W.data, W.dtype, X, n, r0, r1); }, 4);
    return;
  }
  pool.run(
      rows,
      [&](int64_t r0, int64_t r1, int t) {
        float* buf = row_buf + t * row_buf_stride;
        for (int64_t r = r0; r < r1; ++r) {
          const float* wr;
          if (W.dtype == DType::kF32) {
            wr = W.f32() + r * n;
          } else {
            weight_row_to_f32(buf, W, r);
            wr = buf;
          }
          for (int64_t m = 0; m < M; ++m) Y[m * rows + r] = ref::dot_f32(wr, X + m * n, n);
        }
      },
      4);
}

void matmul_shared(ThreadPool& pool, std::initializer_list<MatmulOut> outs, const float* X, int64_t M,
                   const MatmulScratch& s) {
  bool fused = outs.size() >= 2 && outs.size() <= static_cast<size_t>(kernels::kMaxShared);
  for (const MatmulOut& o : outs) {
    fused = fused && quant::is_quantised(o.w->dtype) && kernels::matmul_supports(o.w->dtype) &&
            o.w->cols == outs.begin()->w->cols;
  }
  if (!fused) {
    for (const MatmulOut& o : outs) matmul(pool, o.y, X, M, *o.w, s);
    return;
  }
  float* ys[kernels::kMaxShared];
  kernels::MatrixView ws[kernels::kMaxShared];
  int count = 0;
  for (const MatmulOut& o : outs) {
    ys[count] = o.y;
    ws[count++] = kernels::MatrixView{o.w->data, o.w->dtype, o.w->rows, o.w->cols};
  }
  kernels::matmul_shared(pool, ys, ws, count, X, kernels::Scratch{s.xq, s.tiles}, M);
}

}  // namespace pocket
