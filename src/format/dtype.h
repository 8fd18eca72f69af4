// Tensor element types of the .pocket package and the byte size each implies for a shape.
// Block types (quantised) store each row as ceil(cols / group) blocks; the last block of a row is padded
// when cols is not a multiple of the group, so rows stay independently addressable.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace pocket {

// Values are part of the file format: never renumber. 0..15 plain element types, 16.. block types.
enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  // Block types (quant/ defines the block layouts). Reserved numbers, slotted in without a format break.
  kQ8G32 = 16,   // int8 x 32 + f16 scale (34 bytes per block)
  kQ4G32 = 17,   // int4 x 32 + f16 scale (18 bytes per block), symmetric
  kQ4G64 = 18,   // int4 x 64 + f16 scale (34 bytes per block), symmetric
  kQ4G32A = 19,  // int4 x 32 + f16 scale + f16 min (20 bytes per block), asymmetric
  // Q4G32 with 8 consecutive rows interleaved block by block (quant/blocks.h BlockQ4G32R8: 144 bytes per 8
  // blocks), the layout the batched kernels read. Same bytes per row as Q4G32; the row count of the tensor
  // must be a multiple of 8, and single rows are not contiguous (never used for embedding tables).
  kQ4G32R8 = 20,
};

// How a tensor's bytes are arranged. Values are part of the file format.
enum class Layout : uint32_t {
  kRowMajor = 0,  // rows one after another, each row's elements (or blocks) in order
  // 1.. reserved for kernel-specific interleavings written at conversion time (e.g. 4 or 8 rows interleaved
  // block by block); a reader that does not know a layout rejects the tensor by name.
};

struct DTypeInfo {
  std::string_view name;
  uint32_t block_elems;  // elements per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
};

// nullopt for a value this build does not know.
std::optional<DTypeInfo> dtype_info(uint32_t dtype);
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of one row of `cols` elements, or nullopt on overflow / unknown type.
std::optional<uint64_t> row_bytes(DType t, uint64_t cols);
// Bytes of a tensor of this shape (outermost dimension first; the last dimension is the row), or nullopt.
std::optional<uint64_t> tensor_bytes(DType t, std::span<const uint64_t> shape);

}  // namespace pocket
