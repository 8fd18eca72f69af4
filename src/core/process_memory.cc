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

bool reset_peak_rss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace pocket
