// /proc parsing for MemoryReading.
#include "core/process_memory.h"

#include <cstdio>
#include <cstring>

namespace pocket {

MemoryReading read_process_memory() {
  MemoryReading r;
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return r;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long kb = 0;
    if (std::sscanf(line, "VmRSS: %llu kB", &kb) == 1) r.rss_bytes = kb * 1024;
    if (std::sscanf(line, "VmHWM: %llu kB", &kb) == 1) r.peak_rss_bytes = kb * 1024;
  }
  std::fclose(f);
  return r;
}

MappingReading read_mapping(const void* addr) {
  MappingReading r;
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return r;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  char line[512];
  bool inside = false;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long lo = 0, hi = 0, kb = 0;
    char c = 0;
    // A mapping's first line: "lo-hi perms offset dev inode path"; field lines start with a capital letter.
    if (std::sscanf(line, "%llx-%llx %c", &lo, &hi, &c) == 3) {
      if (inside) break;  // past the mapping we wanted
      inside = a >= lo && a < hi;
      if (inside) r.mapping_bytes = hi - lo;
      continue;
    }
    if (!inside) continue;
    if (std::sscanf(line, "FilePmdMapped: %llu kB", &kb) == 1) r.huge_bytes += kb * 1024;
    if (std::sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) r.huge_bytes += kb * 1024;
    if (std::sscanf(line, "Rss: %llu kB", &kb) == 1) r.resident_bytes = kb * 1024;
    if (std::strncmp(line, "VmFlags:", 8) == 0) r.huge_pages_advised = std::strstr(line, " hg") != nullptr;
  }
  std::fclose(f);
  return r;
}

bool reset_peak_rss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace pocket
