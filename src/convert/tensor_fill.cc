// Float32 -> storage dtype conversion for writers.
#include "convert/tensor_fill.h"

#include <cstring>

#include "core/half.h"
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

}  // namespace pocket
