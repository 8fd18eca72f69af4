// GGUF (versions 2 and 3) reader: header, metadata key/values and tensor infos, validated against the file
// (RELIABILITY.md items 1-6) without copying arrays: values point into the caller's bytes. Used to load
// vocabularies (tokenizer.ggml.*) and, later, to import GGUF models.
//
// Layout (little-endian):
//   u8[4] magic "GGUF"   u32 version (2 or 3)   u64 n_tensors   u64 n_kv
//   n_kv x { string key, u32 type, value }      string = u64 len + bytes (UTF-8, no NUL terminator)
//     types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string, 9 array (u32 elem type,
//            u64 count, elems; arrays of arrays are allowed by the spec and rejected here), 10 u64, 11 i64,
//            12 f64
//   n_tensors x { string name, u32 n_dims (1..4), u64 dims[n_dims] (innermost first), u32 ggml type,
//                 u64 offset (relative to the data section, a multiple of the alignment) }
//   padding to general.alignment (u32, default 32, a power of two), then the tensor data section.
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

enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

const char* gguf_type_name(GgufType t);

inline constexpr uint64_t kGgufMaxKv = 1u << 20;
inline constexpr uint64_t kGgufMaxTensors = 1u << 20;
inline constexpr uint64_t kGgufMaxStringBytes = 1u << 24;
inline constexpr uint32_t kGgufMaxDims = 4;

// One metadata value. Scalars are decoded; strings and arrays point into the file's bytes.
struct GgufValue {
  GgufType type = GgufType::kU8;
  GgufType elem_type = GgufType::kU8;  // arrays only
  uint64_t count = 0;                  // arrays only
  std::span<const uint8_t> raw;        // the value's encoded bytes (after the type field)
  union {
    uint64_t u;
    int64_t i;
    double f;
  } scalar = {0};
  std::string_view str;  // strings only

  bool is_integer() const;
  // Integer scalars as int64 (a u64 above INT64_MAX fails), bool as 0/1.
  bool as_int(int64_t* out) const;
};

struct GgufTensorInfo {
  std::string_view name;
  std::vector<uint64_t> dims;  // innermost first, as GGUF stores them
  uint32_t ggml_type = 0;
  uint64_t offset = 0;  // relative to data_offset()
  uint64_t n_bytes = 0; // implied by type and dims
};

// Bytes per block and elements per block of a ggml type; false for a type this reader does not know.
bool ggml_type_size(uint32_t type, uint64_t* block_bytes, uint64_t* block_elems, const char** name);

class GgufFile {
 public:
  // Parses bytes the caller keeps alive as long as the GgufFile. `name` appears in error messages.
  static Expected<GgufFile> parse(std::span<const uint8_t> bytes, const std::string& name);
  // Maps and parses a file; the mapping is owned by the returned object.
  static Expected<GgufFile> open(const std::string& path);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;

  uint32_t version() const { return version_; }
  const std::string& name() const { return name_; }
  const std::vector<std::string_view>& keys() const { return keys_; }  // in file order
  const GgufValue* find(std::string_view key) const;

  // Typed accessors: an error naming the key when it is missing or of another type.
  Expected<std::string_view> get_string(std::string_view key) const;
  Expected<int64_t> get_int(std::string_view key) const;
  Expected<bool> get_bool(std::string_view key) const;
  // Array accessors; the string views point into the file.
  Expected<std::vector<std::string_view>> get_string_array(std::string_view key) const;
  Expected<std::vector<float>> get_f32_array(std::string_view key) const;
  Expected<std::vector<int32_t>> get_i32_array(std::string_view key) const;  // i32 or u32 elements

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  GgufFile() = default;
  MappedFile file_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  std::vector<std::string_view> keys_;
  std::unordered_map<std::string_view, GgufValue> kv_;
  std::vector<GgufTensorInfo> tensors_;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
};

}  // namespace pocket
