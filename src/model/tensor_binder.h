// Binds a package's tensors to WeightRefs by name, checking shape and dtype, and remembers which it bound so
// a loader can refuse tensors it does not know. Shared by Model (model.cc) and the block drafter's loader.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/package.h"
#include "model/hparams.h"
#include "model/model.h"

namespace pocket {

// The dtypes a weight matrix may have (the matmul paths support every one).
bool is_matrix_dtype(DType t);
std::string shape_str(const std::vector<uint64_t>& s);  // "[8192, 192]"

class TensorBinder {
 public:
  // tag: the error prefix ("[model]"); shape_source: what dictates shapes ("the hyper-parameters").
  TensorBinder(const Package& pkg, std::string tag, std::string shape_source)
      : pkg_(pkg), tag_(std::move(tag)), shape_source_(std::move(shape_source)) {}

  // A matrix takes any matrix dtype; anything else (norms, biases, vectors) must be f32. A missing tensor
  // that is not required leaves *out empty.
  Status bind(const std::string& name, const std::vector<int64_t>& shape, bool matrix, bool required,
              WeightRef* out);
  // One Llama block's tensors (blk.<l>.*), biases and q/k norms as h says.
  Status bind_layer(int64_t layer, const HParams& h, LayerWeights* out);
  // The first tensor of the package that was not bound, or nullptr.
  const TensorInfo* first_unbound() const;

 private:
  const Package& pkg_;
  std::string tag_, shape_source_;
  std::set<std::string> used_;
};

}  // namespace pocket
