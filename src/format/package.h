// The .pocket package, version 1: reader. The byte-level specification below is normative; docs/format.md
// repeats it with rationale. A writer that follows it is in package_writer.h.
//
// All integers are little-endian. Offsets are absolute (from the first byte of the file) unless stated.
//
// Header (64 bytes, offset 0)
//   0  u8[8]  magic            "POCKET\r\n" (50 4F 43 4B 45 54 0D 0A)
//   8  u32    version          1 (0 is invalid: corrupt; a later version is reported as unsupported)
//   12 u32    header_size      64 (the section table starts here)
//   16 u64    file_size        total bytes of the file (a truncated copy is detected at once)
//   24 u32    n_sections       1..64
//   28 u32    flags            0 (reserved; a reader rejects unknown bits)
//   32 u64    table_checksum   XXH3-64 (seed 0) of the section table's n_sections * 32 bytes
//   40 u64    header_checksum  XXH3-64 (seed 0) of bytes [0, 40)
//   48 u8[16] reserved         zero (checked)
//   Every version keeps the magic at 0, the version at 8 and header_checksum (of [0, 40)) at 40, so a reader
//   checks the header checksum before judging the version: a damaged version field reads as corruption.
//
// Section table (offset 64, n_sections entries of 32 bytes)
//   0  u32 kind       1 descriptor, 2 inference config, 3 tokenizer, 4 tensor directory, 5 tensor data;
//                     other values are reserved for later versions (e.g. a drafter's link to its target)
//   4  u32 flags      bit 0 OPTIONAL: a reader that does not know `kind` may skip the section;
//                     bit 1 LAZY_CHECKSUM: the checksum is verified on demand (`pocket verify`), not at open
//                     (set on tensor data so that opening stays a map, not a read of every page);
//                     bit 2 ZSTD: the stored bytes are `u64 decoded_size` + one zstd frame of the content
//                     (format/section_compression.h); never on tensor data, never with LAZY_CHECKSUM;
//                     the reader decodes it once, at open, into memory the Package owns
//   8  u64 offset     multiple of 64, >= 64 + 32 * n_sections
//   16 u64 size       stored bytes; offset + size <= file_size; sections never overlap
//   24 u64 checksum   XXH3-64 (seed 0) of the section's stored bytes (compressed ones: before decoding)
//   Kinds 1-5 must each appear exactly once. An unknown kind without OPTIONAL is rejected as unsupported.
//   Everything below describes a section's content: its stored bytes, or what they decode to under ZSTD.
//
// Section 1, descriptor: UTF-8 JSON object, the architecture ("graph") — see model/hparams.h for the keys.
// Section 2, inference config: UTF-8 JSON object — context length, sampling defaults, stop tokens, chat
//   template name (see model/inference_config.h).
//   The reader checks that sections 1 and 2 are well-formed UTF-8; the JSON itself is parsed by model/.
// Section 3, tokenizer: binary, specified in tokenizer/tokenizer_io.h.
// Section 4, tensor directory:
//   u32 n_tensors (0..1,048,576), u32 reserved (0, checked), then n_tensors entries:
//     u32 name_len (1..512), u8 name[name_len] (UTF-8, no NUL, unique),
//     u32 dtype (format/dtype.h: 0 f32, 1 f16, 2 bf16, 16.. block types),
//     u32 layout (format/dtype.h: 0 row-major, 1.. kernel interleavings),
//     u32 n_dims (1..4), u64 dims[n_dims] (outermost first; the last dimension is the row; each 1..2^40),
//     u64 offset (relative to the start of section 5, multiple of 64),
//     u64 size (exactly the bytes the dtype implies for the shape: rows * ceil(cols/block) * block_bytes)
//   The directory must be consumed exactly (no trailing bytes). Tensors lie inside section 5 and do not
//   overlap.
// Section 5, tensor data: the bytes the directory points into; its offset is a multiple of 64, so every
//   tensor is 64-byte aligned in the file and in memory.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "format/dtype.h"
#include "format/section_compression.h"

namespace pocket {

inline constexpr uint8_t kPackageMagic[8] = {'P', 'O', 'C', 'K', 'E', 'T', '\r', '\n'};
inline constexpr uint32_t kPackageVersion = 1;
inline constexpr uint32_t kHeaderSize = 64;
inline constexpr uint32_t kSectionEntrySize = 32;
inline constexpr uint32_t kMaxSections = 64;
inline constexpr uint32_t kMaxTensors = 1u << 20;
inline constexpr uint32_t kMaxTensorName = 512;
inline constexpr uint32_t kMaxDims = 4;
inline constexpr uint64_t kMaxDim = 1ull << 40;
inline constexpr uint64_t kTensorAlignment = 64;

enum class SectionKind : uint32_t {
  kDescriptor = 1,
  kInferenceConfig = 2,
  kTokenizer = 3,
  kTensorDirectory = 4,
  kTensorData = 5,
};
inline constexpr uint32_t kSectionOptional = 1u << 0;
inline constexpr uint32_t kSectionLazyChecksum = 1u << 1;
inline constexpr uint32_t kSectionZstd = 1u << 2;

const char* section_kind_name(uint32_t kind);

// True when `name` can name a tensor: 1..kMaxTensorName bytes of well-formed UTF-8 without NUL.
bool is_valid_tensor_name(std::string_view name);

struct SectionEntry {
  uint32_t kind = 0;
  uint32_t flags = 0;
  uint64_t offset = 0;
  uint64_t size = 0;      // stored bytes
  uint64_t checksum = 0;  // of the stored bytes
  // Bytes of the content: `size` for a plain section, the decoded size for a ZSTD one; 0 for a ZSTD section
  // of a kind this build skips (it is not decoded).
  uint64_t decoded_size = 0;
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Layout layout = Layout::kRowMajor;
  std::vector<uint64_t> shape;  // outermost first
  uint64_t offset = 0;          // within the tensor data section
  uint64_t size = 0;            // bytes
  const uint8_t* data = nullptr;  // into the mapping, 64-byte aligned

  uint64_t n_elements() const;
  uint64_t rows() const;  // product of all but the last dimension
  uint64_t cols() const { return shape.back(); }
};

struct OpenOptions {
  bool verify_tensor_data = false;  // also checksum section 5 (reads the whole file)
  FileLoad load = FileLoad::kMap;   // map the file, or read it into (huge-page) memory: core/mapped_file.h
};

// An opened, fully validated package. Immutable and safe to share between threads.
class Package {
 public:
  static Expected<Package> open(const std::string& path, const OpenOptions& opts = {});
  // Validates bytes that the caller keeps alive for the Package's lifetime (used by fuzzers and tests).
  // Tensor data is 64-byte aligned in memory only when `bytes.data()` is.
  static Expected<Package> from_bytes(std::span<const uint8_t> bytes, std::string name, const OpenOptions& opts = {});

  Package(Package&&) noexcept = default;
  Package& operator=(Package&&) noexcept = default;
  Package(const Package&) = delete;
  Package& operator=(const Package&) = delete;

  uint32_t version() const { return version_; }
  uint64_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }  // the whole file, as mapped or read
  const std::string& path() const { return path_; }
  const std::vector<SectionEntry>& sections() const { return sections_; }

  std::string_view descriptor_json() const { return section_text(SectionKind::kDescriptor); }
  std::string_view config_json() const { return section_text(SectionKind::kInferenceConfig); }
  std::span<const uint8_t> tokenizer_bytes() const { return section_bytes(SectionKind::kTokenizer); }
  // A section's content: decoded (and owned by the Package) when it is stored with ZSTD, otherwise the
  // mapped bytes.
  std::span<const uint8_t> section_bytes(SectionKind kind) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(std::string_view name) const;

  // Checksums every section, tensor data included. kCorruptFile naming the first bad section.
  Status verify_checksums() const;

 private:
  Package() = default;
  static Expected<Package> parse(Package pkg, const OpenOptions& opts);
  std::string_view section_text(SectionKind kind) const;
  Status parse_directory();

  MappedFile file_;
  std::span<const uint8_t> bytes_;
  std::string path_;
  uint32_t version_ = 0;
  std::vector<SectionEntry> sections_;
  int section_index_[6] = {-1, -1, -1, -1, -1, -1};  // by SectionKind
  DecodedSection decoded_[6];                        // by SectionKind: content of the ZSTD sections
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace pocket
