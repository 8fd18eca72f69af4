// Hand-laid .pocket v1 images for tests and fuzzers: builds a valid package in memory byte by byte from the
// spec in format/package.h (independently of PackageWriter; only zstd frames come from the shared codec),
// records where each field sits so a test can patch it, and reseal() recomputes the checksums so the
// reader's structural checks, not its checksums, fire.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "core/checksum.h"
#include "format/dtype.h"
#include "format/package.h"
#include "format/section_compression.h"

namespace pocket::testing {

inline void put_u32(std::span<uint8_t> b, uint64_t pos, uint32_t v) { std::memcpy(b.data() + pos, &v, 4); }
inline void put_u64(std::span<uint8_t> b, uint64_t pos, uint64_t v) { std::memcpy(b.data() + pos, &v, 8); }
inline uint32_t get_u32(std::span<const uint8_t> b, uint64_t pos) {
  uint32_t v;
  std::memcpy(&v, b.data() + pos, 4);
  return v;
}
inline uint64_t get_u64(std::span<const uint8_t> b, uint64_t pos) {
  uint64_t v;
  std::memcpy(&v, b.data() + pos, 8);
  return v;
}

// Header field positions (package.h).
inline constexpr uint64_t kVersionPos = 8, kHeaderSizePos = 12, kFileSizePos = 16, kNSectionsPos = 24,
                          kHeaderFlagsPos = 28, kTableChecksumPos = 32, kHeaderChecksumPos = 40, kReservedPos = 48;
// Absolute position of a field of section-table entry `i`.
inline uint64_t entry_pos(uint32_t i) { return kHeaderSize + uint64_t{i} * kSectionEntrySize; }
inline constexpr uint64_t kEntryKind = 0, kEntryFlags = 4, kEntryOffset = 8, kEntrySize = 16, kEntryChecksum = 24;

// Recomputes, in this order, the checksum of every section the table locates inside `bytes`, the table
// checksum and the header checksum. Tolerates any garbage: fields that point outside are left alone.
inline void reseal(std::span<uint8_t> bytes) {
  if (bytes.size() < kHeaderSize) return;
  const uint64_t n_sections = get_u32(bytes, kNSectionsPos);
  const uint64_t avail = (bytes.size() - kHeaderSize) / kSectionEntrySize;
  const uint64_t n = std::min(n_sections, avail);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t e = kHeaderSize + i * kSectionEntrySize;
    const uint64_t off = get_u64(bytes, e + kEntryOffset), size = get_u64(bytes, e + kEntrySize);
    if (range_within(off, size, bytes.size())) put_u64(bytes, e + kEntryChecksum, checksum64(bytes.data() + off, size));
  }
  if (n == n_sections) {
    put_u64(bytes, kTableChecksumPos, checksum64(bytes.data() + kHeaderSize, n * kSectionEntrySize));
  }
  put_u64(bytes, kHeaderChecksumPos, checksum64(bytes.data(), 40));
}

struct RawTensor {
  std::string name;
  uint32_t dtype = 0;
  uint32_t layout = 0;
  std::vector<uint64_t> dims;
  std::optional<uint64_t> offset;  // default: packed in order, 64-byte aligned
  std::optional<uint64_t> size;    // default: tensor_bytes(dtype, dims), 0 when that is undefined
};

struct RawSection {
  uint32_t kind = 0;
  uint32_t flags = 0;
  std::vector<uint8_t> bytes;
};

// Absolute file positions of the fields of one tensor-directory entry.
struct TensorFieldPos {
  uint64_t name_len = 0, name = 0, dtype = 0, layout = 0, n_dims = 0, dims = 0, offset = 0, size = 0;
};

struct PackageImage {
  std::vector<uint8_t> bytes;
  std::vector<RawSection> sections;   // in table order, as laid out (bytes are copies)
  std::vector<uint64_t> offsets;      // absolute offset of each section, in table order
  uint64_t n_tensors_pos = 0;         // absolute position of the directory's n_tensors
  std::vector<TensorFieldPos> tensor_pos;

  std::span<uint8_t> span() { return bytes; }
  // Table index of the first section of `kind`, or -1.
  int index_of(SectionKind kind) const {
    for (size_t i = 0; i < sections.size(); ++i) {
      if (sections[i].kind == static_cast<uint32_t>(kind)) return static_cast<int>(i);
    }
    return -1;
  }
  uint64_t offset_of(SectionKind kind) const { return offsets[static_cast<size_t>(index_of(kind))]; }
  uint64_t size_of(SectionKind kind) const { return sections[static_cast<size_t>(index_of(kind))].bytes.size(); }
};

// A small valid package; change the members, then build(). Tensor data bytes follow a fixed pattern.
struct PackageBuilder {
  std::string descriptor = R"({"family":"llama","n_layers":1})";
  std::string config = R"({"context_length":16})";
  std::vector<uint8_t> tokenizer = {1, 2, 3, 4, 5};
  std::vector<RawTensor> tensors = {
      {"tok_embeddings", 0, 0, {2, 3}, {}, {}},   // f32, 24 bytes
      {"norm", 1, 0, {10}, {}, {}},               // f16, 20 bytes
      {"blk.0.ffn_up", 17, 0, {2, 40}, {}, {}},   // q4_g32: 2 rows x 2 blocks x 18 bytes
  };
  std::vector<uint8_t> directory_suffix;   // bytes after the last directory entry
  std::vector<RawSection> extra_sections;  // laid out after the tensor data, in this order
  // Kinds among 1..4 stored zstd-compressed (flag ZSTD, format/section_compression.h). When the directory is
  // one of them, the image's n_tensors_pos and tensor_pos are left empty: its fields are not in the file.
  std::vector<uint32_t> zstd_kinds;

  PackageImage build() const {
    PackageImage img;
    // Directory and the packed layout of tensor data.
    std::vector<uint8_t> dir;
    auto app32 = [&](uint32_t v) { dir.resize(dir.size() + 4); put_u32(dir, dir.size() - 4, v); };
    auto app64 = [&](uint64_t v) { dir.resize(dir.size() + 8); put_u64(dir, dir.size() - 8, v); };
    app32(static_cast<uint32_t>(tensors.size()));
    app32(0);
    std::vector<TensorFieldPos> rel;  // relative to the directory for now
    uint64_t data_size = 0;
    for (const auto& t : tensors) {
      auto implied = tensor_bytes(static_cast<DType>(t.dtype), t.dims);
      // Tensors whose shape implies no sane size still get a little room so the file stays small.
      const uint64_t room = implied && *implied <= (1u << 20) ? *implied : 64;
      const uint64_t packed = align_up(data_size, kTensorAlignment);
      data_size = packed + room;
      TensorFieldPos p;
      p.name_len = dir.size();
      app32(static_cast<uint32_t>(t.name.size()));
      p.name = dir.size();
      dir.insert(dir.end(), t.name.begin(), t.name.end());
      p.dtype = dir.size();
      app32(t.dtype);
      p.layout = dir.size();
      app32(t.layout);
      p.n_dims = dir.size();
      app32(static_cast<uint32_t>(t.dims.size()));
      p.dims = dir.size();
      for (uint64_t d : t.dims) app64(d);
      p.offset = dir.size();
      app64(t.offset.value_or(packed));
      p.size = dir.size();
      app64(t.size.value_or(implied.value_or(0)));
      rel.push_back(p);
    }
    dir.insert(dir.end(), directory_suffix.begin(), directory_suffix.end());
    std::vector<uint8_t> data(data_size);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);

    img.sections = {
        {1, 0, {descriptor.begin(), descriptor.end()}},
        {2, 0, {config.begin(), config.end()}},
        {3, 0, tokenizer},
        {4, 0, dir},
        {5, kSectionLazyChecksum, data},
    };
    for (auto& s : img.sections) {
      if (std::find(zstd_kinds.begin(), zstd_kinds.end(), s.kind) == zstd_kinds.end()) continue;
      s.bytes = encode_zstd_section(s.bytes, kDefaultZstdLevel).value();
      s.flags |= kSectionZstd;
    }
    img.sections.insert(img.sections.end(), extra_sections.begin(), extra_sections.end());

    const uint32_t n_sections = static_cast<uint32_t>(img.sections.size());
    uint64_t pos = kHeaderSize + uint64_t{n_sections} * kSectionEntrySize;
    for (const auto& s : img.sections) {
      pos = align_up(pos, kTensorAlignment);
      img.offsets.push_back(pos);
      pos += s.bytes.size();
    }
    img.bytes.assign(pos, 0);
    std::span<uint8_t> b(img.bytes);
    std::memcpy(b.data(), kPackageMagic, 8);
    put_u32(b, kVersionPos, kPackageVersion);
    put_u32(b, kHeaderSizePos, kHeaderSize);
    put_u64(b, kFileSizePos, pos);
    put_u32(b, kNSectionsPos, n_sections);
    for (uint32_t i = 0; i < n_sections; ++i) {
      const auto& s = img.sections[i];
      put_u32(b, entry_pos(i) + kEntryKind, s.kind);
      put_u32(b, entry_pos(i) + kEntryFlags, s.flags);
      put_u64(b, entry_pos(i) + kEntryOffset, img.offsets[i]);
      put_u64(b, entry_pos(i) + kEntrySize, s.bytes.size());
      if (!s.bytes.empty()) std::memcpy(b.data() + img.offsets[i], s.bytes.data(), s.bytes.size());
    }
    const uint64_t dir_at = img.offsets[3];
    if ((img.sections[3].flags & kSectionZstd) != 0) {
      reseal(b);
      return img;
    }
    img.n_tensors_pos = dir_at;
    for (auto p : rel) {
      for (uint64_t* f : {&p.name_len, &p.name, &p.dtype, &p.layout, &p.n_dims, &p.dims, &p.offset, &p.size}) *f += dir_at;
      img.tensor_pos.push_back(p);
    }
    reseal(b);
    return img;
  }
};

}  // namespace pocket::testing
