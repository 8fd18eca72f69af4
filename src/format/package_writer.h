// Writes a .pocket package (version 1, see package.h). The file is written to `path.tmp` and renamed
// into place only when complete, so an interrupted or failed write never leaves a half package behind.
// Every package writer in pocket (synth, quantize, the importers, pocket-train's export) goes through it, so
// all of them compress the small sections by default.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/dtype.h"
#include "format/section_compression.h"

namespace pocket {

class PackageWriter {
 public:
  // Fills the tensor's bytes (exactly tensor_bytes(dtype, shape) of them).
  using FillFn = std::function<Status(std::span<uint8_t>)>;

  void set_descriptor(std::string json) { descriptor_ = std::move(json); }
  void set_inference_config(std::string json) { config_ = std::move(json); }
  void set_tokenizer(std::vector<uint8_t> bytes) { tokenizer_ = std::move(bytes); }
  // zstd level (1..22) for the descriptor, inference config, tokenizer and tensor directory, or 0 to store
  // them plain. A section is stored compressed (flag ZSTD) only when that makes it take fewer 64-byte blocks
  // of the file, so a small section stays plain. Tensor data is never compressed.
  void set_compression_level(int level) { zstd_level_ = level; }

  // Adds a tensor whose bytes are produced at write time (so multi-GB models never sit in memory whole).
  Status add_tensor(std::string name, DType dtype, std::vector<uint64_t> shape, FillFn fill);
  // Adds a tensor from bytes the caller provides (copied).
  Status add_tensor(std::string name, DType dtype, std::vector<uint64_t> shape, std::span<const uint8_t> bytes);

  Status write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<uint64_t> shape;
    uint64_t size;
    FillFn fill;
  };
  std::string descriptor_ = "{}";
  std::string config_ = "{}";
  std::vector<uint8_t> tokenizer_;
  int zstd_level_ = kDefaultZstdLevel;
  std::vector<Entry> tensors_;
};

}  // namespace pocket
