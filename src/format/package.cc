// Package: mapping and validation of a .pocket file. Every count, size and offset is checked before use.
#include "format/package.h"

#include <algorithm>
#include <cstring>

#include "core/checked_math.h"
#include "core/checksum.h"
#include "format/byte_reader.h"
#include "format/section_compression.h"

namespace pocket {

namespace {

std::string where(const std::string& name) { return ": " + name; }

// Index of the first byte that does not continue well-formed UTF-8 (no overlongs, no surrogates, nothing
// past U+10FFFF), or bytes.size() when all of it is well formed. NUL is well formed.
uint64_t first_invalid_utf8(std::span<const uint8_t> bytes) {
  uint64_t i = 0;
  const uint64_t n = bytes.size();
  while (i < n) {
    const uint8_t b = bytes[i];
    uint64_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (b < 0x80) {
      len = 1;
    } else if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;  // overlong
      if (b == 0xED) hi = 0x9F;  // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;  // overlong
      if (b == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
      return i;
    }
    if (len > n - i) return i;
    for (uint64_t k = 1; k < len; ++k) {
      const uint8_t c = bytes[i + k];
      if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return i;
    }
    i += len;
  }
  return n;
}

}  // namespace

bool is_valid_tensor_name(std::string_view name) {
  const std::span<const uint8_t> b(reinterpret_cast<const uint8_t*>(name.data()), name.size());
  return !name.empty() && name.size() <= kMaxTensorName && name.find('\0') == std::string_view::npos &&
         first_invalid_utf8(b) == b.size();
}

const char* section_kind_name(uint32_t kind) {
  switch (static_cast<SectionKind>(kind)) {
    case SectionKind::kDescriptor: return "descriptor";
    case SectionKind::kInferenceConfig: return "inference config";
    case SectionKind::kTokenizer: return "tokenizer";
    case SectionKind::kTensorDirectory: return "tensor directory";
    case SectionKind::kTensorData: return "tensor data";
  }
  return "unknown";
}

uint64_t TensorInfo::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // validated not to overflow at open
  return n;
}

uint64_t TensorInfo::rows() const {
  uint64_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
  return n;
}

Expected<Package> Package::open(const std::string& path, const OpenOptions& opts) {
  POCKET_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path, opts.load));
  Package pkg;
  pkg.file_ = std::move(file);
  pkg.bytes_ = pkg.file_.bytes();
  pkg.path_ = path;
  return parse(std::move(pkg), opts);
}

Expected<Package> Package::from_bytes(std::span<const uint8_t> bytes, std::string name, const OpenOptions& opts) {
  Package pkg;
  pkg.bytes_ = bytes;
  pkg.path_ = std::move(name);
  return parse(std::move(pkg), opts);
}

Expected<Package> Package::parse(Package pkg, const OpenOptions& opts) {
  const std::string& name = pkg.path_;
  const auto bytes = pkg.bytes_;
  if (bytes.empty()) return corrupt_file("[format] empty file, not a .pocket package" + where(name));
  // A short prefix of the magic is a truncated header; anything else is another kind of file.
  if (std::memcmp(bytes.data(), kPackageMagic, std::min<size_t>(bytes.size(), 8)) != 0) {
    return corrupt_file("[format] bad magic: not a .pocket package" + where(name));
  }
  if (bytes.size() < kHeaderSize) {
    return corrupt_file("[format] header truncated: file has " + std::to_string(bytes.size()) +
                        " bytes, the header needs 64" + where(name));
  }
  ByteReader r(bytes.subspan(8, kHeaderSize - 8));
  uint32_t version = 0, header_size = 0, n_sections = 0, flags = 0;
  uint64_t file_size = 0, table_checksum = 0, header_checksum = 0, reserved[2] = {};
  (void)r.read(&version);
  (void)r.read(&header_size);
  (void)r.read(&file_size);
  (void)r.read(&n_sections);
  (void)r.read(&flags);
  (void)r.read(&table_checksum);
  (void)r.read(&header_checksum);
  (void)r.read(&reserved[0]);
  (void)r.read(&reserved[1]);
  if (version == 0) {
    return corrupt_file("[format] package version 0 does not exist: the file is corrupt" + where(name));
  }
  // Every version keeps the magic, the version at 8 and this checksum of [0, 40) at 40 (docs/format.md,
  // "Versioning"), so a damaged version field reads as corruption, not as a newer package.
  if (checksum64(bytes.data(), 40) != header_checksum) {
    return corrupt_file("[format] header checksum mismatch: the file is corrupt" + where(name));
  }
  if (version > kPackageVersion) {
    return unsupported("[format] package version " + std::to_string(version) + " is not supported (this build reads version " +
                       std::to_string(kPackageVersion) + ")" + where(name));
  }
  if (header_size != kHeaderSize) {
    return corrupt_file("[format] header_size is " + std::to_string(header_size) + ", expected 64" + where(name));
  }
  if (flags != 0) return unsupported("[format] unknown header flags " + std::to_string(flags) + where(name));
  if (reserved[0] != 0 || reserved[1] != 0) {
    return corrupt_file("[format] header bytes 48..63 are reserved and must be zero" + where(name));
  }
  if (n_sections == 0 || n_sections > kMaxSections) {
    return corrupt_file("[format] section count " + std::to_string(n_sections) + " outside 1.." +
                        std::to_string(kMaxSections) + where(name));
  }
  const uint64_t table_end = kHeaderSize + uint64_t{n_sections} * kSectionEntrySize;
  if (table_end > bytes.size()) {
    return corrupt_file("[format] section table truncated: file has " + std::to_string(bytes.size()) +
                        " bytes, the table of " + std::to_string(n_sections) + " sections ends at byte " +
                        std::to_string(table_end) + where(name));
  }
  if (checksum64(bytes.data() + kHeaderSize, table_end - kHeaderSize) != table_checksum) {
    return corrupt_file("[format] section table checksum mismatch: the file is corrupt" + where(name));
  }

  std::vector<SectionEntry> entries(n_sections);  // at most kMaxSections
  ByteReader t(bytes.subspan(kHeaderSize, table_end - kHeaderSize));
  for (auto& e : entries) {
    (void)t.read(&e.kind);
    (void)t.read(&e.flags);
    (void)t.read(&e.offset);
    (void)t.read(&e.size);
    (void)t.read(&e.checksum);
    e.decoded_size = (e.flags & kSectionZstd) != 0 ? 0 : e.size;  // set when decoded, below
  }
  if (file_size != bytes.size()) {
    if (bytes.size() > file_size) {
      return corrupt_file("[format] file is " + std::to_string(bytes.size()) + " bytes but its header says " +
                          std::to_string(file_size) + ": " + std::to_string(bytes.size() - file_size) +
                          " bytes appended" + where(name));
    }
    // Truncated: name the first section (in file order) that the end of the file cuts.
    std::string cut = "after its last section";
    uint64_t cut_offset = UINT64_MAX;
    for (uint32_t i = 0; i < n_sections; ++i) {
      const auto& e = entries[i];
      if (!range_within(e.offset, e.size, bytes.size()) && e.offset < cut_offset) {
        cut_offset = e.offset;
        cut = "in section " + std::to_string(i) + " (" + section_kind_name(e.kind) + ") [" + std::to_string(e.offset) +
              ", +" + std::to_string(e.size) + ")";
      }
    }
    return corrupt_file("[format] file truncated " + cut + ": it has " + std::to_string(bytes.size()) +
                        " bytes, its header says " + std::to_string(file_size) + where(name));
  }

  for (uint32_t i = 0; i < n_sections; ++i) {
    const SectionEntry& e = entries[i];
    const std::string label = "section " + std::to_string(i) + " (" + section_kind_name(e.kind) + ")";
    if ((e.flags & ~(kSectionOptional | kSectionLazyChecksum | kSectionZstd)) != 0) {
      return unsupported("[format] " + label + " has unknown flags" + where(name));
    }
    if ((e.flags & kSectionZstd) != 0) {
      // Tensor data is mapped and used in place; a compressed section is decoded, hence checked, at open.
      if (e.kind == static_cast<uint32_t>(SectionKind::kTensorData)) {
        return corrupt_file("[format] " + label + " is marked ZSTD, but tensor data is never compressed" + where(name));
      }
      if ((e.flags & kSectionLazyChecksum) != 0) {
        return corrupt_file("[format] " + label + " is marked both ZSTD and LAZY_CHECKSUM" + where(name));
      }
    }
    if (e.offset % kTensorAlignment != 0 || e.offset < table_end) {
      return corrupt_file("[format] " + label + " offset " + std::to_string(e.offset) +
                          " is not 64-byte aligned after the section table" + where(name));
    }
    if (!range_within(e.offset, e.size, bytes.size())) {
      return corrupt_file("[format] " + label + " [" + std::to_string(e.offset) + ", +" + std::to_string(e.size) +
                          ") runs past the end of the file (" + std::to_string(bytes.size()) + " bytes)" + where(name));
    }
    const bool known = e.kind >= 1 && e.kind <= 5;
    if (!known && (e.flags & kSectionOptional) == 0) {
      return unsupported("[format] " + label + " has kind " + std::to_string(e.kind) +
                         ", unknown to this build and not optional" + where(name));
    }
    if (known) {
      if (pkg.section_index_[e.kind] >= 0) {
        return corrupt_file("[format] duplicate " + std::string(section_kind_name(e.kind)) + " section" + where(name));
      }
      pkg.section_index_[e.kind] = static_cast<int>(i);
    }
  }
  pkg.sections_ = std::move(entries);
  // No two sections overlap.
  std::vector<SectionEntry> sorted = pkg.sections_;
  std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i - 1].offset + sorted[i - 1].size > sorted[i].offset) {
      return corrupt_file(std::string("[format] sections ") + section_kind_name(sorted[i - 1].kind) + " and " +
                          section_kind_name(sorted[i].kind) + " overlap" + where(name));
    }
  }
  for (uint32_t k = 1; k <= 5; ++k) {
    if (pkg.section_index_[k] < 0) {
      return corrupt_file(std::string("[format] required section '") + section_kind_name(k) + "' is missing" + where(name));
    }
  }
  for (const auto& e : pkg.sections_) {
    const bool lazy = (e.flags & kSectionLazyChecksum) != 0;
    if (lazy && !opts.verify_tensor_data) continue;
    if (checksum64(bytes.data() + e.offset, e.size) != e.checksum) {
      return corrupt_file(std::string("[format] checksum mismatch in the ") + section_kind_name(e.kind) +
                          " section: the file is corrupt" + where(name));
    }
  }
  // Compressed sections of the kinds this build reads, decoded once (an optional section it skips is not).
  for (uint32_t i = 0; i < n_sections; ++i) {
    SectionEntry& e = pkg.sections_[i];
    if ((e.flags & kSectionZstd) == 0 || e.kind < 1 || e.kind > 4) continue;
    const std::string label = "section " + std::to_string(i) + " (" + section_kind_name(e.kind) + ")";
    POCKET_ASSIGN_OR_RETURN(pkg.decoded_[e.kind], decode_zstd_section(bytes.subspan(e.offset, e.size), label, name));
    e.decoded_size = pkg.decoded_[e.kind].size();
  }
  for (SectionKind k : {SectionKind::kDescriptor, SectionKind::kInferenceConfig}) {
    const auto text = pkg.section_bytes(k);
    const uint64_t bad = first_invalid_utf8(text);
    if (bad != text.size()) {
      return corrupt_file(std::string("[format] the ") + section_kind_name(static_cast<uint32_t>(k)) +
                          " section is not valid UTF-8 (byte " + std::to_string(bad) + " of the section)" + where(name));
    }
  }
  pkg.version_ = version;
  POCKET_RETURN_IF_ERROR(pkg.parse_directory());
  return pkg;
}

Status Package::parse_directory() {
  const std::string& name = path_;
  const auto dir = section_bytes(SectionKind::kTensorDirectory);
  const auto data = section_bytes(SectionKind::kTensorData);
  ByteReader r(dir);
  uint32_t n_tensors = 0, reserved = 0;
  if (!r.read(&n_tensors) || !r.read(&reserved)) {
    return corrupt_file("[format] tensor directory truncated before its count" + where(name));
  }
  if (reserved != 0) {
    return corrupt_file("[format] tensor directory reserved field is " + std::to_string(reserved) +
                        ", must be zero" + where(name));
  }
  if (n_tensors > kMaxTensors) {
    return corrupt_file("[format] tensor count " + std::to_string(n_tensors) + " exceeds the limit " +
                        std::to_string(kMaxTensors) + where(name));
  }
  // Each entry takes at least 4+1+4+4+4+8+8+8 = 41 bytes: refuse counts the section cannot hold before
  // reserving anything.
  if (uint64_t{n_tensors} * 41 > r.remaining()) {
    return corrupt_file("[format] tensor directory claims " + std::to_string(n_tensors) +
                        " tensors but holds only " + std::to_string(r.remaining()) + " bytes" + where(name));
  }
  tensors_.reserve(n_tensors);
  for (uint32_t i = 0; i < n_tensors; ++i) {
    const std::string idx = "tensor #" + std::to_string(i);
    uint32_t name_len = 0;
    if (!r.read(&name_len)) return corrupt_file("[format] " + idx + " truncated at its name length" + where(name));
    if (name_len == 0 || name_len > kMaxTensorName) {
      return corrupt_file("[format] " + idx + " name length " + std::to_string(name_len) + " outside 1.." +
                          std::to_string(kMaxTensorName) + where(name));
    }
    std::string_view tname;
    if (!r.read_string(name_len, &tname)) return corrupt_file("[format] " + idx + " truncated in its name" + where(name));
    if (tname.find('\0') != std::string_view::npos) {
      return corrupt_file("[format] " + idx + " name contains a NUL byte" + where(name));
    }
    if (!is_valid_tensor_name(tname)) {
      return corrupt_file("[format] " + idx + " name is not valid UTF-8" + where(name));
    }
    TensorInfo ti;
    ti.name = std::string(tname);
    const std::string label = "tensor '" + ti.name + "'";
    uint32_t dtype = 0, layout = 0, n_dims = 0;
    if (!r.read(&dtype) || !r.read(&layout) || !r.read(&n_dims)) {
      return corrupt_file("[format] " + label + " entry truncated" + where(name));
    }
    if (!dtype_info(dtype)) {
      return unsupported("[format] " + label + " has unknown dtype " + std::to_string(dtype) + where(name));
    }
    if (layout != static_cast<uint32_t>(Layout::kRowMajor)) {
      return unsupported("[format] " + label + " has unknown layout " + std::to_string(layout) + where(name));
    }
    if (n_dims == 0 || n_dims > kMaxDims) {
      return corrupt_file("[format] " + label + " has " + std::to_string(n_dims) + " dimensions (1.." +
                          std::to_string(kMaxDims) + " allowed)" + where(name));
    }
    ti.dtype = static_cast<DType>(dtype);
    ti.layout = static_cast<Layout>(layout);
    ti.shape.resize(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (!r.read(&ti.shape[d])) return corrupt_file("[format] " + label + " truncated in its shape" + where(name));
      if (ti.shape[d] == 0 || ti.shape[d] > kMaxDim) {
        return corrupt_file("[format] " + label + " dimension " + std::to_string(d) + " is " +
                            std::to_string(ti.shape[d]) + " (1..2^40 allowed)" + where(name));
      }
    }
    if (!r.read(&ti.offset) || !r.read(&ti.size)) {
      return corrupt_file("[format] " + label + " truncated at its offset/size" + where(name));
    }
    if (ti.dtype == DType::kQ4G32R8 && (ti.shape.size() != 2 || ti.shape[0] % 8 != 0)) {
      return corrupt_file("[format] " + label + " is q4_g32r8 but not a matrix of whole 8-row groups" + where(name));
    }
    auto expected = tensor_bytes(ti.dtype, ti.shape);
    if (!expected || !checked_product(ti.shape)) {
      return corrupt_file("[format] " + label + " shape size overflows" + where(name));
    }
    if (*expected != ti.size) {
      return corrupt_file("[format] " + label + " has " + std::to_string(ti.size) + " bytes but its dtype " +
                          std::string(dtype_name(ti.dtype)) + " and shape need " + std::to_string(*expected) + where(name));
    }
    if (ti.offset % kTensorAlignment != 0) {
      return corrupt_file("[format] " + label + " offset " + std::to_string(ti.offset) + " is not 64-byte aligned" + where(name));
    }
    if (!range_within(ti.offset, ti.size, data.size())) {
      return corrupt_file("[format] " + label + " [" + std::to_string(ti.offset) + ", +" + std::to_string(ti.size) +
                          ") runs past the end of the tensor data (" + std::to_string(data.size()) + " bytes)" + where(name));
    }
    if (by_name_.count(ti.name) != 0) return corrupt_file("[format] duplicate " + label + where(name));
    ti.data = data.data() + ti.offset;
    by_name_.emplace(ti.name, tensors_.size());
    tensors_.push_back(std::move(ti));
  }
  if (!r.at_end()) {
    return corrupt_file("[format] tensor directory has " + std::to_string(r.remaining()) + " trailing bytes" + where(name));
  }
  std::vector<const TensorInfo*> sorted;
  for (const auto& t : tensors_) sorted.push_back(&t);
  // Stable, so that tensors at the same offset are reported in directory order.
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i - 1]->offset + sorted[i - 1]->size > sorted[i]->offset) {
      return corrupt_file("[format] tensors '" + sorted[i - 1]->name + "' and '" + sorted[i]->name + "' overlap" + where(name));
    }
  }
  return Status::ok();
}

std::span<const uint8_t> Package::section_bytes(SectionKind kind) const {
  const int i = section_index_[static_cast<uint32_t>(kind)];
  if (i < 0) return {};
  const auto& e = sections_[static_cast<size_t>(i)];
  if ((e.flags & kSectionZstd) != 0) return decoded_[static_cast<uint32_t>(kind)].bytes();
  return bytes_.subspan(e.offset, e.size);
}

std::string_view Package::section_text(SectionKind kind) const {
  auto b = section_bytes(kind);
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

const TensorInfo* Package::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Status Package::verify_checksums() const {
  for (const auto& e : sections_) {
    if (checksum64(bytes_.data() + e.offset, e.size) != e.checksum) {
      return corrupt_file(std::string("[format] checksum mismatch in the ") + section_kind_name(e.kind) +
                          " section: the file is corrupt" + where(path_));
    }
  }
  return Status::ok();
}

}  // namespace pocket
