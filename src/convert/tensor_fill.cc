// Float32 -> storage dtype conversion for writers.
#include "convert/tensor_fill.h"

#include <algorithm>
#include <cstring>

#include "core/half.h"
#include "format/package.h"
#include "kernels/ref/ops_ref.h"
#include "quant/quantize.h"

namespace pocket {

Status convert_f32(std::span<const float> src, DType t, uint64_t rows, uint64_t cols, std::span<uint8_t> out) {
  const uint64_t n = rows * cols;
  if (src.size() != n) return invalid_argument("[convert] source has " + std::to_string(src.size()) + " values, expected " + std::to_string(n));
  switch (t) {
    case DType::kF32:
      std::memcpy(out.data(), src.data(), n * 4);
      return Status::ok();
    case DType::kF16: {
      auto* o = reinterpret_cast<uint16_t*>(out.data());
      for (uint64_t i = 0; i < n; ++i) o[i] = f32_to_f16(src[i]);
      return Status::ok();
    }
    case DType::kBF16: {
      auto* o = reinterpret_cast<uint16_t*>(out.data());
      for (uint64_t i = 0; i < n; ++i) o[i] = f32_to_bf16(src[i]);
      return Status::ok();
    }
    default:
      if (quant::is_quantised(t)) {
        return quant::quantize_tensor(t, src.data(), static_cast<int64_t>(rows), static_cast<int64_t>(cols), out);
      }
      return unsupported("[convert] dtype " + std::string(dtype_name(t)) + " is not available for conversion");
  }
}

Status tensor_to_f32(const TensorInfo& t, std::vector<float>* out, int64_t max_rows) {
  const int64_t all = static_cast<int64_t>(t.rows()), cols = static_cast<int64_t>(t.cols());
  const int64_t rows = max_rows >= 0 ? std::min(all, max_rows) : all;
  out->resize(static_cast<size_t>(rows * cols));
  if (quant::is_quantised(t.dtype)) {
    for (int64_t r = 0; r < rows; ++r) {
      POCKET_RETURN_IF_ERROR(quant::dequantize_row(t.dtype, std::span<const uint8_t>(t.data, t.size), all, cols, r,
                                                   out->data() + r * cols));
    }
    return Status::ok();
  }
  const uint64_t rb = *row_bytes(t.dtype, static_cast<uint64_t>(cols));
  for (int64_t r = 0; r < rows; ++r) ref::row_to_f32(out->data() + r * cols, t.data + r * rb, t.dtype, cols);
  return Status::ok();
}

}  // namespace pocket
