// PackageWriter: lays sections out 64-byte aligned, streams tensor data, then patches checksums.
#include "format/package_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_set>

#include <xxhash.h>

#include "core/checked_math.h"
#include "core/checksum.h"
#include "format/package.h"

namespace pocket {

namespace {

template <typename T>
void put(std::vector<uint8_t>* out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

struct FileCloser {
  void operator()(FILE* f) const {
    if (f) std::fclose(f);
  }
};

}  // namespace

Status PackageWriter::add_tensor(std::string name, DType dtype, std::vector<uint64_t> shape, FillFn fill) {
  if (!is_valid_tensor_name(name)) {
    return invalid_argument("[writer] tensor name '" + name + "' is not 1.." + std::to_string(kMaxTensorName) +
                            " bytes of UTF-8 without NUL");
  }
  if (tensors_.size() >= kMaxTensors) {
    return invalid_argument("[writer] more than " + std::to_string(kMaxTensors) + " tensors");
  }
  if (shape.empty() || shape.size() > kMaxDims) return invalid_argument("[writer] tensor '" + name + "' needs 1..4 dims");
  for (uint64_t d : shape) {
    if (d == 0 || d > kMaxDim) return invalid_argument("[writer] tensor '" + name + "' has a dimension out of range");
  }
  auto size = tensor_bytes(dtype, shape);
  if (!size) return invalid_argument("[writer] tensor '" + name + "' size overflows or dtype unknown");
  for (const auto& e : tensors_) {
    if (e.name == name) return invalid_argument("[writer] duplicate tensor '" + name + "'");
  }
  tensors_.push_back({std::move(name), dtype, std::move(shape), *size, std::move(fill)});
  return Status::ok();
}

Status PackageWriter::add_tensor(std::string name, DType dtype, std::vector<uint64_t> shape,
                                 std::span<const uint8_t> bytes) {
  auto size = tensor_bytes(dtype, shape);
  if (size && *size != bytes.size()) {
    return invalid_argument("[writer] tensor '" + name + "' given " + std::to_string(bytes.size()) +
                            " bytes, its shape needs " + std::to_string(*size));
  }
  auto copy = std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
  return add_tensor(std::move(name), dtype, std::move(shape), [copy](std::span<uint8_t> out) {
    std::memcpy(out.data(), copy->data(), copy->size());
    return Status::ok();
  });
}

Status PackageWriter::write(const std::string& path) const {
  // Tensor directory first: its size fixes the layout.
  std::vector<uint8_t> dir;
  put<uint32_t>(&dir, static_cast<uint32_t>(tensors_.size()));
  put<uint32_t>(&dir, 0);
  uint64_t data_size = 0;
  std::vector<uint64_t> offsets;
  for (const auto& t : tensors_) {
    // Sizes are bounded per tensor; their sum could still wrap.
    auto aligned = checked_add(data_size, kTensorAlignment - 1);
    if (!aligned || !checked_add(*aligned / kTensorAlignment * kTensorAlignment, t.size)) {
      return invalid_argument("[writer] tensor data of '" + path + "' exceeds 2^64 bytes");
    }
    data_size = align_up(data_size, kTensorAlignment);
    offsets.push_back(data_size);
    put<uint32_t>(&dir, static_cast<uint32_t>(t.name.size()));
    dir.insert(dir.end(), t.name.begin(), t.name.end());
    put<uint32_t>(&dir, static_cast<uint32_t>(t.dtype));
    put<uint32_t>(&dir, static_cast<uint32_t>(Layout::kRowMajor));
    put<uint32_t>(&dir, static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) put<uint64_t>(&dir, d);
    put<uint64_t>(&dir, data_size);
    put<uint64_t>(&dir, t.size);
    data_size += t.size;
  }

  struct Sec {
    uint32_t kind, flags;
    const uint8_t* data;
    uint64_t size;
    uint64_t offset = 0, checksum = 0;
  };
  std::vector<Sec> secs = {
      {1, 0, reinterpret_cast<const uint8_t*>(descriptor_.data()), descriptor_.size()},
      {2, 0, reinterpret_cast<const uint8_t*>(config_.data()), config_.size()},
      {3, 0, tokenizer_.data(), tokenizer_.size()},
      {4, 0, dir.data(), dir.size()},
      {5, kSectionLazyChecksum, nullptr, data_size},
  };
  // Sections 1-4 compressed where that saves at least one 64-byte block (align_up(stored) < align_up(size)).
  if (zstd_level_ < 0 || zstd_level_ > max_zstd_level()) {
    return invalid_argument("[writer] zstd level " + std::to_string(zstd_level_) + " outside 1.." +
                            std::to_string(max_zstd_level()) + " (0: no compression)");
  }
  std::vector<uint8_t> stored[4];  // compressed forms, alive until the sections are written
  if (zstd_level_ != 0) {
    for (size_t i = 0; i < 4; ++i) {
      Sec& s = secs[i];
      if (s.size == 0 || s.size > kMaxDecodedSectionBytes) continue;
      POCKET_ASSIGN_OR_RETURN(stored[i], encode_zstd_section({s.data, s.size}, zstd_level_));
      if (align_up(stored[i].size(), kTensorAlignment) < align_up(s.size, kTensorAlignment)) {
        s.flags |= kSectionZstd;
        s.data = stored[i].data();
        s.size = stored[i].size();
      }
    }
  }
  uint64_t pos = kHeaderSize + secs.size() * kSectionEntrySize;
  for (auto& s : secs) {
    pos = align_up(pos, kTensorAlignment);
    s.offset = pos;
    auto end = checked_add(pos, s.size);
    if (!end || *end > UINT64_MAX - kTensorAlignment) {
      return invalid_argument("[writer] package '" + path + "' would exceed 2^64 bytes");
    }
    pos = *end;
    // Every section but the streamed tensor data; an empty one too (its data() may be null, its checksum is
    // still XXH3 of no bytes, not 0).
    if (s.kind != static_cast<uint32_t>(SectionKind::kTensorData)) s.checksum = checksum64(s.data, s.size);
  }
  const uint64_t file_size = pos;

  const std::string tmp = path + ".tmp";
  std::unique_ptr<FILE, FileCloser> f(std::fopen(tmp.c_str(), "wb"));
  if (!f) return io_error("[writer] cannot create '" + tmp + "': " + std::strerror(errno));
  auto fail = [&](const std::string& what) {
    f.reset();
    std::remove(tmp.c_str());
    return io_error("[writer] " + what + " '" + path + "': " + std::strerror(errno));
  };
  static const uint8_t kZeros[64] = {};
  uint64_t written = 0;
  auto write_bytes = [&](const void* p, uint64_t n) {
    if (n > 0 && std::fwrite(p, 1, n, f.get()) != n) return false;
    written += n;
    return true;
  };
  auto pad_to = [&](uint64_t target) {
    while (written < target) {
      if (!write_bytes(kZeros, std::min<uint64_t>(64, target - written))) return false;
    }
    return true;
  };

  // Placeholder header and table; rewritten once the tensor data checksum is known.
  std::vector<uint8_t> head(kHeaderSize + secs.size() * kSectionEntrySize, 0);
  if (!write_bytes(head.data(), head.size())) return fail("cannot write");
  for (size_t i = 0; i + 1 < secs.size(); ++i) {
    if (!pad_to(secs[i].offset) || !write_bytes(secs[i].data, secs[i].size)) return fail("cannot write");
  }
  // Tensor data, streamed tensor by tensor.
  Sec& data_sec = secs.back();
  if (!pad_to(data_sec.offset)) return fail("cannot write");
  XXH3_state_t* state = XXH3_createState();
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state_guard(state, &XXH3_freeState);
  XXH3_64bits_reset(state);
  std::vector<uint8_t> buf;
  uint64_t data_pos = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    if (offsets[i] > data_pos) {
      const uint64_t pad = offsets[i] - data_pos;
      XXH3_64bits_update(state, kZeros, pad);
      if (!write_bytes(kZeros, pad)) return fail("cannot write");
      data_pos += pad;
    }
    buf.assign(t.size, 0);
    Status st = t.fill(std::span<uint8_t>(buf));
    if (!st.is_ok()) {
      f.reset();
      std::remove(tmp.c_str());
      return st;
    }
    XXH3_64bits_update(state, buf.data(), buf.size());
    if (!write_bytes(buf.data(), buf.size())) return fail("cannot write");
    data_pos += t.size;
  }
  data_sec.checksum = XXH3_64bits_digest(state);

  // Final header and table.
  std::vector<uint8_t> table;
  for (const auto& s : secs) {
    put<uint32_t>(&table, s.kind);
    put<uint32_t>(&table, s.flags);
    put<uint64_t>(&table, s.offset);
    put<uint64_t>(&table, s.size);
    put<uint64_t>(&table, s.checksum);
  }
  std::vector<uint8_t> header;
  header.insert(header.end(), kPackageMagic, kPackageMagic + 8);
  put<uint32_t>(&header, kPackageVersion);
  put<uint32_t>(&header, kHeaderSize);
  put<uint64_t>(&header, file_size);
  put<uint32_t>(&header, static_cast<uint32_t>(secs.size()));
  put<uint32_t>(&header, 0);
  put<uint64_t>(&header, checksum64(table.data(), table.size()));
  put<uint64_t>(&header, checksum64(header.data(), 40));
  header.resize(kHeaderSize, 0);
  if (std::fseek(f.get(), 0, SEEK_SET) != 0 || std::fwrite(header.data(), 1, header.size(), f.get()) != header.size() ||
      std::fwrite(table.data(), 1, table.size(), f.get()) != table.size()) {
    return fail("cannot write header of");
  }
  if (std::fflush(f.get()) != 0) return fail("cannot flush");
  f.reset();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return io_error("[writer] cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace pocket
