// Bounds-checked little-endian cursor over untrusted bytes. Every read reports failure instead of
// running past the end; callers turn that into an error naming what they were reading.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace pocket {

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t position() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  bool at_end() const { return pos_ == bytes_.size(); }

  template <typename T>
  bool read(T* out) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));  // little-endian hosts only (checked at build)
    pos_ += sizeof(T);
    return true;
  }
  bool read_bytes(uint64_t n, std::span<const uint8_t>* out) {
    if (remaining() < n) return false;
    *out = bytes_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  bool read_string(uint64_t n, std::string_view* out) {
    std::span<const uint8_t> s;
    if (!read_bytes(n, &s)) return false;
    *out = std::string_view(reinterpret_cast<const char*>(s.data()), s.size());
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "pocket's file formats assume a little-endian host");

}  // namespace pocket
