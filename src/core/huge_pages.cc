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

void advise_huge_pages(void* p, uint64_t bytes) {
#ifdef MADV_HUGEPAGE
  if (bytes >= kHugePageBytes) (void)madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
}

}  // namespace pocket
