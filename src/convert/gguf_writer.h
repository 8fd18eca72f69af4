// GGUF version 3 writer (the layout is specified in gguf_reader.h): metadata key/values in insertion order,
// tensor infos, then the data section with every tensor aligned to 32 bytes. Written to `path.tmp` and
// renamed when complete. Used by the GGUF exporter and by tests that build GGUF files.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pocket {

class GgufWriter {
 public:
  using FillFn = std::function<Status(std::span<uint8_t>)>;
  static constexpr uint64_t kAlignment = 32;

  void add_u32(std::string_view key, uint32_t v);
  void add_i32(std::string_view key, int32_t v);
  void add_f32(std::string_view key, float v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);
  void add_string_array(std::string_view key, const std::vector<std::string>& v);
  void add_f32_array(std::string_view key, const std::vector<float>& v);
  void add_i32_array(std::string_view key, const std::vector<int32_t>& v);

  // dims are innermost first (GGUF order): a row-major [rows, cols] matrix is {cols, rows}.
  Status add_tensor(std::string name, std::vector<uint64_t> dims, uint32_t ggml_type, FillFn fill);

  Status write(const std::string& path) const;
  // The whole file in memory (tests and fuzz seeds).
  Expected<std::vector<uint8_t>> to_bytes() const;

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    uint64_t size;
    FillFn fill;
  };
  void begin_kv(std::string_view key, uint32_t type);
  Status emit(const std::function<Status(std::span<const uint8_t>)>& sink) const;

  std::vector<uint8_t> kv_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace pocket
