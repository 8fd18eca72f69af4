// Streaming UTF-8 decoder for generated tokens: feed each token's bytes, get back only complete, valid
// UTF-8. A partial multi-byte character is held back until it completes; an invalid sequence becomes U+FFFD
// by the same maximal-subpart rule as utf8.h, so streaming any split of a byte string prints exactly what
// sanitising it whole prints. One instance per stream; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pocket {

class Utf8StreamDecoder {
 public:
  // Reserves the output buffer once: feeds of up to reserve_bytes / 3 bytes never allocate.
  explicit Utf8StreamDecoder(size_t reserve_bytes = 4096);

  // The text completed by `bytes`; the view is valid until the next call on this decoder.
  std::string_view feed(std::string_view bytes);
  // At the end of a stream: a held-back incomplete character becomes U+FFFD. Leaves the decoder reset.
  std::string_view flush();
  void reset() { n_pending_ = 0; }
  // Bytes currently held back (0..3).
  size_t pending() const { return n_pending_; }

 private:
  void push(uint8_t b);

  std::string out_;
  uint8_t pending_[4] = {};
  size_t n_pending_ = 0;
  size_t need_ = 0;  // length of the sequence being collected
  uint8_t lo_ = 0x80, hi_ = 0xBF;  // allowed range of the next continuation byte
};

}  // namespace pocket
