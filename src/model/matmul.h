// Y = X · W^T for a batch of M activation rows against one weight matrix, split across the thread pool by
// weight rows so each weight row is read once for all M activation rows.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "model/model.h"

namespace pocket {

// Y: [M, W.rows], X: [M, W.cols], row_buf: [n_threads][W.cols] scratch.
void matmul(ThreadPool& pool, float* Y, const float* X, int64_t M, const WeightRef& W, float* row_buf,
            int64_t row_buf_stride);

// Copies row `r` of W into out[W.cols] as float32 (embedding look-up).
void weight_row_to_f32(float* out, const WeightRef& W, int64_t r);

}  // namespace pocket
