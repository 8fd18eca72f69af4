// The probe: every thread sums its slice of 64-bit words (a read-only stream the compiler vectorises).
#include "core/bandwidth_probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "core/huge_pages.h"

namespace pocket {

namespace {

// The probe's buffer: huge-page-aligned anonymous memory (core/huge_pages.h), as the weights get with
// FileLoad::kRead (`--no-mmap`), so the roofline's denominator is the best streaming rate this machine
// gives and not one held back by 4 KiB pages (page walks, prefetchers that stop at page ends). Falls back to
// the heap if the mapping fails.
class ProbeBuffer {
 public:
  explicit ProbeBuffer(uint64_t bytes) {
    if (auto m = HugeBuffer::allocate(bytes)) {
      huge_ = std::move(*m);
      data_ = reinterpret_cast<uint64_t*>(huge_.data());
    } else {
      heap_.resize(bytes / sizeof(uint64_t));
      data_ = heap_.data();
    }
  }
  uint64_t* data() { return data_; }

 private:
  HugeBuffer huge_;
  std::vector<uint64_t> heap_;
  uint64_t* data_ = nullptr;
};

}  // namespace

BandwidthResult probe_read_bandwidth(ThreadPool& pool, uint64_t bytes, int passes) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(uint64_t));
  ProbeBuffer mem(static_cast<uint64_t>(n) * sizeof(uint64_t));
  uint64_t* buf = mem.data();
  // Touch every page from the threads that will read it.
  pool.run(n, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) buf[i] = static_cast<uint64_t>(i);
  }, 4096);
  std::vector<uint64_t> sums(static_cast<size_t>(pool.n_threads()) * 8, 0);
  BandwidthResult r;
  r.bytes = static_cast<uint64_t>(n) * sizeof(uint64_t);
  r.passes = passes;
  for (int p = 0; p < passes; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run(n, [&](int64_t b, int64_t e, int t) {
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      const uint64_t* x = buf;
      int64_t i = b;
      for (; i + 4 <= e; i += 4) {
        s0 += x[i];
        s1 += x[i + 1];
        s2 += x[i + 2];
        s3 += x[i + 3];
      }
      for (; i < e; ++i) s0 += x[i];
      sums[static_cast<size_t>(t) * 8] += s0 + s1 + s2 + s3;  // one cache line per thread
    }, 4096);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.gb_per_s = std::max(r.gb_per_s, static_cast<double>(r.bytes) / s / 1e9);
  }
  // Keep the sums observable so the loop is not removed.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  volatile uint64_t sink = 0;
  for (uint64_t v : sums) sink = sink + v;
  (void)sink;
  return r;
}

}  // namespace pocket
