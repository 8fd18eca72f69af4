// Streaming UTF-8 decoder; see stream_decoder.h.
#include "tokenizer/stream_decoder.h"

#include "tokenizer/utf8.h"

namespace pocket {

Utf8StreamDecoder::Utf8StreamDecoder(size_t reserve_bytes) { out_.reserve(reserve_bytes < 16 ? 16 : reserve_bytes); }

void Utf8StreamDecoder::push(uint8_t b) {
  if (n_pending_ > 0) {
    if (b >= lo_ && b <= hi_) {
      pending_[n_pending_++] = b;
      lo_ = 0x80;
      hi_ = 0xBF;
      if (n_pending_ == need_) {
        out_.append(reinterpret_cast<const char*>(pending_), n_pending_);
        n_pending_ = 0;
      }
      return;
    }
    out_.append(kReplacementUtf8);  // the held-back prefix is one maximal subpart; `b` starts afresh
    n_pending_ = 0;
  }
  if (b < 0x80) {
    out_.push_back(static_cast<char>(b));
    return;
  }
  need_ = utf8_sequence_length(b);
  if (need_ == 0) {
    out_.append(kReplacementUtf8);
    return;
  }
  pending_[0] = b;
  n_pending_ = 1;
  utf8_second_byte_range(b, &lo_, &hi_);
}

std::string_view Utf8StreamDecoder::feed(std::string_view bytes) {
  out_.clear();  // keeps the capacity
  if (bytes.size() * 3 + 8 > out_.capacity()) out_.reserve(bytes.size() * 3 + 8);  // only for huge pieces
  for (char c : bytes) push(static_cast<uint8_t>(c));
  return out_;
}

std::string_view Utf8StreamDecoder::flush() {
  out_.clear();
  if (n_pending_ > 0) out_.append(kReplacementUtf8);
  n_pending_ = 0;
  return out_;
}

}  // namespace pocket
