// map_huge_aligned: over-allocate by one huge page, align, advise.
#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace pocket {

Expected<HugePageMapping> map_huge_aligned(uint64_t bytes) {
  HugePageMapping m;
  m.len = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes + kHugePageBytes;  // room to align
  void* raw = mmap(nullptr, m.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return out_of_memory("[memory] cannot map " + std::to_string(bytes >> 20) + " MiB: " + std::strerror(errno));
  }
  m.map = raw;
  m.data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + kHugePageBytes - 1) / kHugePageBytes *
                                      kHugePageBytes);
  advise_huge_pages(m.data, bytes);
  return m;
}

Expected<HugeBuffer> HugeBuffer::allocate(uint64_t bytes) {
  auto m = map_huge_aligned(bytes);
  if (!m.has_value()) return m.status();
  HugeBuffer b;
  b.m_ = *m;
  b.bytes_ = bytes;
  return b;
}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& o) noexcept {
  if (this != &o) {
    if (m_.map != nullptr) munmap(m_.map, m_.len);
    m_ = o.m_;
    bytes_ = o.bytes_;
    o.m_ = {};
    o.bytes_ = 0;
  }
  return *this;
}

HugeBuffer::~HugeBuffer() {
  if (m_.map != nullptr) munmap(m_.map, m_.len);
}

void advise_huge_pages(void* p, uint64_t bytes) {
#ifdef MADV_HUGEPAGE
  if (bytes >= kHugePageBytes) (void)madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
}

}  // namespace pocket
