// Resident-set readings of this process (Linux /proc/self/status), for peak-memory reports.
#pragma once

#include <cstdint>

namespace pocket {

struct MemoryReading {
  uint64_t rss_bytes = 0;       // VmRSS now
  uint64_t peak_rss_bytes = 0;  // VmHWM: the high-water mark since the process started (or the last reset)
};

MemoryReading read_process_memory();
// Resets the high-water mark to the current RSS (writes 5 to /proc/self/clear_refs); false if not allowed.
bool reset_peak_rss();

// The mapping of this process that holds `addr` (/proc/self/smaps): its size, its resident bytes, how many of
// them are mapped with 2 MiB pages (file pages mapped by one PMD entry, or anonymous transparent huge pages),
// and whether huge pages were asked for (MADV_HUGEPAGE: "hg" in VmFlags). All zero / false where /proc is
// unavailable or no mapping holds `addr`.
struct MappingReading {
  uint64_t mapping_bytes = 0;
  uint64_t resident_bytes = 0;
  uint64_t huge_bytes = 0;
  bool huge_pages_advised = false;
};
MappingReading read_mapping(const void* addr);

}  // namespace pocket
