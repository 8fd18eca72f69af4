// Export: trained weights (NamedTensor, the runtime's names and layouts) + hyper-parameters + tokenizer +
// inference config -> a .pocket package that `pocket run` loads. Matrices may be F32, F16 or quantised
// through src/quant (Q8G32, Q4G32, Q4G64, Q4G32A); norms and biases always stay F32, as the runtime requires.
#pragma once

#include <string>
#include <vector>

#include "run/named_tensor.h"
#include "core/status.h"
#include "format/dtype.h"
#include "model/hparams.h"

namespace pocket {
class PackageWriter;
}

namespace pocket::train {

struct ExportOptions {
  DType matrix_type = DType::kF32;
  std::string chat_template = "chatml";  // "none" for a model without one
  int64_t context_length = 0;            // 0: n_ctx_train
};

// Checks every runtime tensor is present with the shape `h` implies (and nothing else) before writing.
Status export_package(const HParams& h, const std::vector<NamedTensor>& weights, const std::vector<uint8_t>& tokenizer,
                      const ExportOptions& opts, const std::string& path);

// The tensor names and shapes the runtime binds for `h`, in file order.
std::vector<std::pair<std::string, std::vector<int64_t>>> runtime_tensor_shapes(const HParams& h);

// Adds `weights` to `w` in the order of `want`: each named tensor present once with its shape and size, nothing
// else; matrices stored as `matrix_type` (q4_g32 in the kernels' 8-row interleaved layout, as `pocket
// quantize` writes it), vectors f32. `tag` prefixes the errors ("[export]"). The model and drafter exporters.
Status add_checked_tensors(PackageWriter& w, const std::vector<NamedTensor>& weights,
                           const std::vector<std::pair<std::string, std::vector<int64_t>>>& want, DType matrix_type,
                           const std::string& tag);

}  // namespace pocket::train
