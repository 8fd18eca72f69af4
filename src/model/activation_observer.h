// ActivationObserver: an optional hook through which a Transformer reports the inputs of every weight matrix
// (used by `pocket imatrix` to gather activation statistics for importance-aware quantisation).
// Off by default; with no observer set the forward pass only tests one null pointer per matrix.
#pragma once

#include <cstdint>

#include "model/model.h"

namespace pocket {

class ActivationObserver {
 public:
  virtual ~ActivationObserver() = default;
  // `x` holds `rows` row-major activation rows of `w.cols` floats: the input that multiplies weight matrix
  // `w` (column k of W meets x[., k]). Called on the thread that runs forward(), before the matmul.
  virtual void observe(const WeightRef& w, const float* x, int64_t rows) = 0;
};

}  // namespace pocket
