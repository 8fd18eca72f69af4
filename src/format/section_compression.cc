// zstd section encoding and bounded decoding (see section_compression.h for the byte layout).
#include "format/section_compression.h"

#include <zstd.h>

#include <cstring>
#include <new>

#include "core/checked_math.h"

namespace pocket {

namespace {

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

int max_zstd_level() { return ZSTD_maxCLevel(); }

Expected<std::vector<uint8_t>> encode_zstd_section(std::span<const uint8_t> content, int level) {
  if (level < 1 || level > ZSTD_maxCLevel()) {
    return invalid_argument("[format] zstd level " + std::to_string(level) + " outside 1.." +
                            std::to_string(ZSTD_maxCLevel()));
  }
  if (content.size() > kMaxDecodedSectionBytes) {
    return invalid_argument("[format] a section of " + std::to_string(content.size()) +
                            " bytes is over the compressed-section limit of " + std::to_string(kMaxDecodedSectionBytes));
  }
  std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx(ZSTD_createCCtx());
  if (!cctx) return out_of_memory("[format] cannot create a zstd compression context");
  // The content size goes into the frame header (ZSTD_compress2 knows it); the reader requires it.
  if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1))) {
    return Status(ErrorCode::kInternal, "[format] zstd refused its compression parameters");
  }
  std::vector<uint8_t> out(kZstdSizePrefixBytes + ZSTD_compressBound(content.size()));
  const uint64_t decoded_size = content.size();
  std::memcpy(out.data(), &decoded_size, sizeof(decoded_size));
  static const uint8_t kNothing = 0;  // zstd wants a valid pointer even for no bytes
  const size_t n = ZSTD_compress2(cctx.get(), out.data() + kZstdSizePrefixBytes, out.size() - kZstdSizePrefixBytes,
                                  content.empty() ? &kNothing : content.data(), content.size());
  if (ZSTD_isError(n)) {
    return Status(ErrorCode::kInternal, std::string("[format] zstd compression failed: ") + ZSTD_getErrorName(n));
  }
  out.resize(kZstdSizePrefixBytes + n);
  return out;
}

Expected<DecodedSection> decode_zstd_section(std::span<const uint8_t> stored, const std::string& label,
                                             const std::string& file) {
  auto fail = [&](const std::string& what) { return corrupt_file("[format] " + label + " " + what + ": " + file); };
  if (stored.size() < kZstdSizePrefixBytes) {
    return fail("is compressed but has " + std::to_string(stored.size()) + " bytes, fewer than its 8-byte size prefix");
  }
  uint64_t decoded_size = 0;
  std::memcpy(&decoded_size, stored.data(), sizeof(decoded_size));
  const std::span<const uint8_t> frame = stored.subspan(kZstdSizePrefixBytes);
  // Both bounds before anything is allocated or decoded.
  if (decoded_size > kMaxDecodedSectionBytes) {
    return fail("declares " + std::to_string(decoded_size) + " decoded bytes, over the limit of " +
                std::to_string(kMaxDecodedSectionBytes));
  }
  const auto most = checked_mul(frame.size(), kZstdMaxExpansion);
  if (most && decoded_size > *most) {
    return fail("declares " + std::to_string(decoded_size) + " decoded bytes, more than its " +
                std::to_string(frame.size()) + "-byte zstd frame can hold");
  }
  uint32_t magic = 0;
  if (frame.size() >= sizeof(magic)) std::memcpy(&magic, frame.data(), sizeof(magic));
  if (magic != ZSTD_MAGICNUMBER) return fail("does not hold a zstd frame after its size prefix");
  const size_t frame_size = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_size)) {
    return fail(std::string("has a damaged or truncated zstd frame (") + ZSTD_getErrorName(frame_size) + ")");
  }
  if (frame_size != frame.size()) {
    return fail("has " + std::to_string(frame.size() - frame_size) + " bytes after its zstd frame");
  }
  const unsigned long long content_size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content_size == ZSTD_CONTENTSIZE_ERROR) return fail("has a damaged zstd frame header");
  if (content_size == ZSTD_CONTENTSIZE_UNKNOWN) return fail("has a zstd frame that does not record its content size");
  if (content_size != decoded_size) {
    return fail("declares " + std::to_string(decoded_size) + " decoded bytes but its zstd frame holds " +
                std::to_string(content_size));
  }
  std::unique_ptr<uint8_t[]> out(new (std::nothrow) uint8_t[decoded_size == 0 ? 1 : decoded_size]);
  if (!out) {
    return out_of_memory("[format] cannot allocate " + std::to_string(decoded_size) + " bytes to decode " + label +
                         ": " + file);
  }
  std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx(ZSTD_createDCtx());
  if (!dctx) return out_of_memory("[format] cannot create a zstd decompression context: " + file);
  const size_t n = ZSTD_decompressDCtx(dctx.get(), out.get(), decoded_size, frame.data(), frame.size());
  if (ZSTD_isError(n)) return fail(std::string("has corrupt zstd data (") + ZSTD_getErrorName(n) + ")");
  if (n != decoded_size) {
    return fail("decodes to " + std::to_string(n) + " bytes but declares " + std::to_string(decoded_size));
  }
  return DecodedSection(std::move(out), decoded_size);
}

}  // namespace pocket
