// Anonymous memory laid out for transparent huge pages: the --no-mmap copy of a package and the bandwidth
// probe's buffer, so the weights and the roofline's denominator stream through the same kind of pages.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace pocket {

inline constexpr uint64_t kHugePageBytes = 2ull << 20;

// A read-write anonymous mapping whose `data` starts on a 2 MiB boundary, with transparent huge pages
// requested (madvise, a hint) for the whole 2 MiB pages of its first `bytes`; the tail below 2 MiB stays in
// 4 KiB pages, so resident memory is `bytes` and not up to 2 MiB more (a huge page is allocated whole on its
// first touch). The caller owns it: munmap(map, len).
struct HugePageMapping {
  void* map = nullptr;
  uint64_t len = 0;
  uint8_t* data = nullptr;
};
Expected<HugePageMapping> map_huge_aligned(uint64_t bytes);

// Asks for transparent huge pages (MADV_HUGEPAGE, a hint) over the whole 2 MiB pages of [p, p + bytes); a
// range under 2 MiB is left alone. For anonymous memory and for file mappings (where the kernel then maps the
// page cache's 2 MiB folios with one entry each).
void advise_huge_pages(void* p, uint64_t bytes);

// An owned map_huge_aligned mapping of `bytes` (unmapped on destruction), zero-filled as anonymous memory
// is. The f16 KV cache lives in one: every attention pass streams the whole cache, and where transparent
// huge pages are madvise-only a std::vector stays in 4 KiB pages (a page walk every 4 KiB).
class HugeBuffer {
 public:
  HugeBuffer() = default;
  static Expected<HugeBuffer> allocate(uint64_t bytes);
  HugeBuffer(HugeBuffer&& o) noexcept : m_(o.m_), bytes_(o.bytes_) {
    o.m_ = {};
    o.bytes_ = 0;
  }
  HugeBuffer& operator=(HugeBuffer&& o) noexcept;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  ~HugeBuffer();

  uint8_t* data() const { return m_.data; }
  uint64_t size() const { return bytes_; }

 private:
  HugePageMapping m_;
  uint64_t bytes_ = 0;
};

}  // namespace pocket
