// Size rules for each dtype.
#include "format/dtype.h"

#include "core/checked_math.h"

namespace pocket {

std::optional<DTypeInfo> dtype_info(uint32_t dtype) {
  switch (static_cast<DType>(dtype)) {
    case DType::kF32: return DTypeInfo{"f32", 1, 4};
    case DType::kF16: return DTypeInfo{"f16", 1, 2};
    case DType::kBF16: return DTypeInfo{"bf16", 1, 2};
    case DType::kQ8G32: return DTypeInfo{"q8_g32", 32, 34};
    case DType::kQ4G32: return DTypeInfo{"q4_g32", 32, 18};
    case DType::kQ4G64: return DTypeInfo{"q4_g64", 64, 34};
    case DType::kQ4G32A: return DTypeInfo{"q4_g32a", 32, 20};
    case DType::kQ4G32R8: return DTypeInfo{"q4_g32r8", 32, 18};
  }
  return std::nullopt;
}

std::string_view dtype_name(DType t) {
  auto info = dtype_info(static_cast<uint32_t>(t));
  return info ? info->name : std::string_view("unknown");
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (uint32_t v : {0u, 1u, 2u, 16u, 17u, 18u, 19u, 20u}) {
    if (dtype_info(v)->name == name) return static_cast<DType>(v);
  }
  return std::nullopt;
}

std::optional<uint64_t> row_bytes(DType t, uint64_t cols) {
  auto info = dtype_info(static_cast<uint32_t>(t));
  if (!info) return std::nullopt;
  const uint64_t blocks = cols / info->block_elems + (cols % info->block_elems != 0 ? 1 : 0);
  return checked_mul(blocks, info->block_bytes);
}

std::optional<uint64_t> tensor_bytes(DType t, std::span<const uint64_t> shape) {
  if (shape.empty()) return std::nullopt;
  auto rows = checked_product(shape.first(shape.size() - 1));
  auto rb = row_bytes(t, shape.back());
  if (!rows || !rb) return std::nullopt;
  if (t == DType::kQ4G32R8 && (shape.size() != 2 || *rows % 8 != 0)) return std::nullopt;  // whole 8-row groups
  return checked_mul(*rows, *rb);
}

}  // namespace pocket
