// Memory read-bandwidth probe: streams a buffer much larger than the last-level cache with the thread
// pool and reports the best of a few passes, the denominator of the decode roofline (PERFORMANCE.md).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace pocket {

struct BandwidthResult {
  double gb_per_s = 0.0;  // 1e9 bytes per second
  uint64_t bytes = 0;     // buffer size streamed per pass
  int passes = 0;
};

BandwidthResult probe_read_bandwidth(ThreadPool& pool, uint64_t bytes = 512ull << 20, int passes = 5);

}  // namespace pocket
