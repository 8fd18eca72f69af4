// Y = X · W^T for a batch of M activation rows against one weight matrix, split across the thread pool by
// weight rows so each weight row is read once for all M activation rows.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "core/thread_pool.h"
#include "model/model.h"
#include "quant/blocks.h"

namespace pocket {

struct MatmulScratch {
  float* row_buf = nullptr;        // [n_threads][row_buf_stride] dequantised weight rows (reference path)
  int64_t row_buf_stride = 0;
  quant::ActBlock* xq = nullptr;   // kernels::act_scratch_blocks() int8 activation blocks (quantised path)
  float* tiles = nullptr;          // kernels::Scratch::tiles (Q8G32 weights' residual activations)
};

// Y: [M, W.rows], X: [M, W.cols]. F32 and BF16 weights run the scalar float32 reference (the exact
// llama2.c summation order); F16 and block types run the dispatched kernels (kernels/kernels.h).
void matmul(ThreadPool& pool, float* Y, const float* X, int64_t M, const WeightRef& W, const MatmulScratch& s);

// Y_j = X · W_j^T for matrices that share their input (q/k/v; gate/up): one activation quantisation and one
// pool run when every W_j runs on the quantised kernels with the same width, otherwise matmul() for each.
struct MatmulOut {
  float* y;
  const WeightRef* w;
};
void matmul_shared(ThreadPool& pool, std::initializer_list<MatmulOut> outs, const float* X, int64_t M,
                   const MatmulScratch& s);

// Copies row `r` of W into out[W.cols] as float32 (embedding look-up); any dtype, block types included.
void weight_row_to_f32(float* out, const WeightRef& W, int64_t r);

}  // namespace pocket
