// zstd-compressed package sections (section flag ZSTD, docs/format.md "Compressed sections"): the writer's
// encoder and the reader's bounded decoder. Tensor data is never compressed: it is mapped in place.
//
// Stored bytes of a section with the ZSTD flag (the section table's `size` counts all of them, and its
// checksum covers all of them):
//   0  u64 decoded_size   bytes of the section's content; <= kMaxDecodedSectionBytes and
//                         <= kZstdMaxExpansion * (size - 8)
//   8  u8  frame[size-8]  exactly one zstd frame (RFC 8878; magic 28 B5 2F FD), nothing after it, whose
//                         header records Frame_Content_Size == decoded_size; it may carry a content checksum
//                         (the writer adds one), which the decoder then verifies
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace pocket {

inline constexpr uint64_t kZstdSizePrefixBytes = 8;
// A decoded section larger than this is refused before anything is allocated: far above any real
// descriptor, config, tokenizer (Qwen3's 151,669 tokens take ~5 MB) or tensor directory.
inline constexpr uint64_t kMaxDecodedSectionBytes = 256ull << 20;
// No zstd frame of n bytes decodes to more than 32,768 n bytes: a block regenerates at most 128 KiB and takes
// at least 4 bytes (a 3-byte block header and one RLE byte). A larger claim is corrupt by construction.
inline constexpr uint64_t kZstdMaxExpansion = 32768;
// The writer's default level: sections are small next to the weights, so the slowest, tightest level is cheap.
inline constexpr int kDefaultZstdLevel = 19;

// The highest zstd level this build's libzstd offers (22 for every release since 1.0).
int max_zstd_level();

// The stored form of `content` (size prefix + one zstd frame with its content checksum) at `level`
// (1..ZSTD_maxCLevel()). kInvalidArgument for a level out of range or content over kMaxDecodedSectionBytes.
Expected<std::vector<uint8_t>> encode_zstd_section(std::span<const uint8_t> content, int level);

// The decoded content of a section, owned. Its pages are not zero-filled first, so memory is committed only
// as the decoder writes it.
class DecodedSection {
 public:
  DecodedSection() = default;
  DecodedSection(std::unique_ptr<uint8_t[]> data, uint64_t size) : data_(std::move(data)), size_(size) {}
  std::span<const uint8_t> bytes() const { return {data_.get(), size_}; }
  uint64_t size() const { return size_; }

 private:
  std::unique_ptr<uint8_t[]> data_;
  uint64_t size_ = 0;
};

// Decodes the stored bytes of a ZSTD section. Every failure (too short, a decoded size over either bound,
// no zstd frame, a damaged or truncated frame, bytes after it, a size that disagrees) is kCorruptFile, with a
// message "[format] <label> ...: <file>" naming the section (`label`, e.g. "section 2 (tokenizer)") and the
// file; an allocation that fails is kOutOfMemory. The bounds are checked before anything is allocated.
Expected<DecodedSection> decode_zstd_section(std::span<const uint8_t> stored, const std::string& label,
                                             const std::string& file);

}  // namespace pocket
