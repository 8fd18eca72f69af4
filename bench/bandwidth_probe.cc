// Memory read-bandwidth probe: streams a buffer far larger than the last-level cache with 1 and N threads
// and prints the median GB/s of several passes (the decode roofline of PERFORMANCE.md).
// Usage: pocket_bandwidth_probe [--mb 1024] [--threads N] [--reps 7]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace {

// Sum of the 64-bit words in [p, p + n): eight independent accumulators so the loads are not serialised.
uint64_t read_sum(const uint64_t* p, size_t n) {
  uint64_t a[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) a[k] += p[i + k];
  }
  for (; i < n; ++i) a[0] += p[i];
  uint64_t s = 0;
  for (uint64_t v : a) s += v;
  return s;
}

double pass_gbps(const uint64_t* buf, size_t words, int threads, uint64_t* sink) {
  std::vector<std::thread> ts;
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      const size_t b = words * t / threads, e = words * (t + 1) / threads;
      sums[t] = read_sum(buf + b, e - b);
    });
  }
  for (auto& th : ts) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (uint64_t v : sums) *sink += v;
  return static_cast<double>(words * 8) / s / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mb = 1024;
  int max_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int reps = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mb") == 0) mb = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--threads") == 0) max_threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
  }
  const size_t words = mb * 1024 * 1024 / 8;
  std::unique_ptr<uint64_t[]> buf(new uint64_t[words]);
  for (size_t i = 0; i < words; ++i) buf[i] = i;  // touch every page so no pass measures page faults
  uint64_t sink = 0;
  std::printf("buffer %zu MiB, %d passes per thread count (median, min, max GB/s = 1e9 bytes/s)\n", mb, reps);
  for (int threads = 1; threads <= max_threads; threads = threads < max_threads ? std::min(threads * 2, max_threads) : threads + 1) {
    std::vector<double> r;
    pass_gbps(buf.get(), words, threads, &sink);  // warm-up
    for (int k = 0; k < reps; ++k) r.push_back(pass_gbps(buf.get(), words, threads, &sink));
    std::sort(r.begin(), r.end());
    std::printf("threads %d: read %.2f GB/s (min %.2f, max %.2f)\n", threads, r[r.size() / 2], r.front(), r.back());
  }
  std::fprintf(stderr, "(checksum %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}
