// safetensors reader: the header JSON and tensor table of one .safetensors file, validated against the file
// before any tensor byte is touched (RELIABILITY.md 1-7); tensor data stays in the caller's bytes or the map.
//
// Layout: u64 header_len (little-endian), then header_len bytes of UTF-8 JSON, then the byte buffer.
//   header = { "__metadata__": {string: string} (optional),
//              NAME: {"dtype": "F32"|"F16"|"BF16"|..., "shape": [u64...], "data_offsets": [begin, end]} ... }
//   Offsets are relative to the buffer (the byte after the header). The rules enforced here are the format's
//   own: header_len <= 100 MB and inside the file; the header is a JSON object (padding spaces allowed at
//   its end); names are unique; end - begin == product(shape) * element size; tensors cover the buffer
//   exactly (no overlap, no hole, nothing after the last one); at most kSafetensorsMaxDims dimensions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"

namespace pocket {

inline constexpr uint64_t kSafetensorsMaxHeader = 100u << 20;  // the format's own limit (100 MB)
inline constexpr uint32_t kSafetensorsMaxDims = 8;
inline constexpr uint64_t kSafetensorsMaxTensors = 1u << 20;

// Element types a safetensors file may declare. Only F32, F16 and BF16 can be imported; the others are
// recognised so that the error can name them.
enum class StDType : uint32_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool, kF8E4M3, kF8E5M2, kOther };

const char* st_dtype_name(StDType t);

struct StTensor {
  std::string name;
  StDType dtype = StDType::kF32;
  std::string dtype_text;         // as written in the header ("F32", "I8", ...)
  std::vector<uint64_t> shape;    // outermost first (row-major, like PyTorch)
  std::span<const uint8_t> data;  // exactly n_elements * element size bytes
  uint64_t n_elements = 0;
};

class SafetensorsFile {
 public:
  // Parses bytes the caller keeps alive as long as the object. `name` appears in every error.
  static Expected<SafetensorsFile> parse(std::span<const uint8_t> bytes, const std::string& name);
  // Maps and parses a file; the mapping is owned by the returned object.
  static Expected<SafetensorsFile> open(const std::string& path);

  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;

  const std::string& name() const { return name_; }
  const std::vector<StTensor>& tensors() const { return tensors_; }  // in header order
  const StTensor* find(std::string_view name) const;
  const std::unordered_map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  MappedFile file_;
  std::string name_;
  std::vector<StTensor> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
  std::unordered_map<std::string, std::string> metadata_;
};

// Reads row-major element `i..i+n` of a F32/F16/BF16 tensor as float32 into out[0..n).
void st_read_f32(const StTensor& t, uint64_t first, uint64_t n, float* out);

}  // namespace pocket
