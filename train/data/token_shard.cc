// Token shard reading (mmap + validation of every field) and writing; the layout is in token_shard.h.
#include "data/token_shard.h"

#include <cstdio>
#include <cstring>
#include <filesystem>


namespace pocket::train {

namespace {

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

Status bad(const std::string& path, const std::string& what) {
  return corrupt_file("[shard] " + what + ": " + path);
}

uint64_t pad8(uint64_t n) { return (n + 7) / 8 * 8; }

}  // namespace

Expected<TokenShard> TokenShard::open(const std::string& path) {
  TokenShard s;
  POCKET_ASSIGN_OR_RETURN(s.file_, MappedFile::open(path));
  const uint8_t* p = s.file_.data();
  const uint64_t size = s.file_.size();
  if (size < kShardHeaderBytes) return bad(path, "file of " + std::to_string(size) + " bytes is shorter than the 48-byte header");
  if (std::memcmp(p, kShardMagic, 8) != 0) return bad(path, "not a token shard (bad magic)");
  const uint32_t version = load<uint32_t>(p + 8), flags = load<uint32_t>(p + 12);
  if (version != kShardVersion) return bad(path, "version " + std::to_string(version) + " (this build reads 1)");
  if ((flags & ~1u) != 0) return bad(path, "unknown flags " + std::to_string(flags));
  s.n_vocab_ = load<uint32_t>(p + 16);
  s.n_tokens_ = load<uint64_t>(p + 24);
  s.n_docs_ = load<uint64_t>(p + 32);
  if (s.n_vocab_ == 0) return bad(path, "n_vocab is 0");
  if (load<uint32_t>(p + 20) != 0 || load<uint64_t>(p + 40) != 0) return bad(path, "reserved header fields are not 0");
  if (s.n_docs_ == 0 && s.n_tokens_ != 0) return bad(path, "tokens without documents");
  // Every size below is bounded by the file size before it is multiplied, so nothing can overflow.
  if (s.n_docs_ > size / 8 || s.n_tokens_ > size / 4) return bad(path, "counts exceed the file size");
  const uint64_t offsets_bytes = (s.n_docs_ + 1) * 8, token_bytes = s.n_tokens_ * 4;
  const uint64_t mask_bytes = (flags & 1u) ? pad8(s.n_tokens_) : 0;
  const uint64_t want = kShardHeaderBytes + offsets_bytes + token_bytes + mask_bytes;
  if (want != size) {
    return bad(path, "header implies " + std::to_string(want) + " bytes but the file has " + std::to_string(size));
  }
  s.offsets_ = reinterpret_cast<const uint64_t*>(p + kShardHeaderBytes);
  s.tokens_ = reinterpret_cast<const int32_t*>(p + kShardHeaderBytes + offsets_bytes);
  if (flags & 1u) s.mask_ = p + kShardHeaderBytes + offsets_bytes + token_bytes;
  if (s.offsets_[0] != 0) return bad(path, "doc_offsets[0] is not 0");
  for (uint64_t i = 0; i < s.n_docs_; ++i) {
    if (s.offsets_[i + 1] < s.offsets_[i]) return bad(path, "doc_offsets decrease at document " + std::to_string(i));
  }
  if (s.offsets_[s.n_docs_] != s.n_tokens_) return bad(path, "the last doc offset is not n_tokens");
  for (uint64_t i = 0; i < s.n_tokens_; ++i) {
    const int32_t t = s.tokens_[i];
    if (t < 0 || static_cast<uint32_t>(t) >= s.n_vocab_) {
      return bad(path, "token " + std::to_string(i) + " has id " + std::to_string(t) + ", outside 0.." +
                           std::to_string(s.n_vocab_ - 1));
    }
  }
  return s;
}

std::span<const int32_t> TokenShard::doc(uint64_t i) const {
  return {tokens_ + offsets_[i], static_cast<size_t>(offsets_[i + 1] - offsets_[i])};
}

std::span<const uint8_t> TokenShard::doc_mask(uint64_t i) const {
  if (mask_ == nullptr) return {};
  return {mask_ + offsets_[i], static_cast<size_t>(offsets_[i + 1] - offsets_[i])};
}

Status TokenShardWriter::add_document(std::span<const int32_t> tokens, std::span<const uint8_t> mask) {
  if (!mask.empty() && mask.size() != tokens.size()) {
    return invalid_argument("[shard] a document's mask has " + std::to_string(mask.size()) + " entries for " +
                            std::to_string(tokens.size()) + " tokens");
  }
  for (int32_t t : tokens) {
    if (t < 0 || static_cast<uint32_t>(t) >= n_vocab_) {
      return invalid_argument("[shard] token id " + std::to_string(t) + " is outside the vocabulary of " +
                              std::to_string(n_vocab_));
    }
  }
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  if (with_mask_) {
    if (mask.empty()) mask_.insert(mask_.end(), tokens.size(), 1);
    else mask_.insert(mask_.end(), mask.begin(), mask.end());
  }
  offsets_.push_back(tokens_.size());
  return Status::ok();
}

Status TokenShardWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return io_error("[shard] cannot create " + tmp);
  uint8_t header[kShardHeaderBytes] = {};
  std::memcpy(header, kShardMagic, 8);
  const uint32_t version = kShardVersion, flags = with_mask_ ? 1u : 0u;
  const uint64_t n_tokens = tokens_.size(), n_docs = offsets_.size() - 1;
  std::memcpy(header + 8, &version, 4);
  std::memcpy(header + 12, &flags, 4);
  std::memcpy(header + 16, &n_vocab_, 4);
  std::memcpy(header + 24, &n_tokens, 8);
  std::memcpy(header + 32, &n_docs, 8);
  bool ok = std::fwrite(header, 1, sizeof header, f) == sizeof header;
  ok = ok && std::fwrite(offsets_.data(), 8, offsets_.size(), f) == offsets_.size();
  ok = ok && std::fwrite(tokens_.data(), 4, tokens_.size(), f) == tokens_.size();
  if (with_mask_) {
    std::vector<uint8_t> m = mask_;
    m.resize(pad8(m.size()), 0);
    ok = ok && std::fwrite(m.data(), 1, m.size(), f) == m.size();
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return io_error("[shard] short write to " + tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return io_error("[shard] cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::ok();
}

}  // namespace pocket::train
