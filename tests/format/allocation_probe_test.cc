// The replacement operators new/delete behind allocation_probe.h, and a check that the probe sees
// allocations (so that "memory stays flat" assertions elsewhere mean something).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "allocation_probe.h"

#ifndef POCKET_TEST_ASAN
// GCC cannot tell that these replace the global operators, and warns that malloc'd memory meets free.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
namespace {
void* probed_alloc(size_t n) {
  using pocket::testing::g_probe_armed;
  using pocket::testing::g_probe_largest;
  if (g_probe_armed.load(std::memory_order_relaxed)) {
    size_t prev = g_probe_largest.load(std::memory_order_relaxed);
    while (n > prev && !g_probe_largest.compare_exchange_weak(prev, n)) {
    }
  }
  return std::malloc(n == 0 ? 1 : n);
}
}  // namespace
void* operator new(size_t n) {
  if (void* p = probed_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  if (void* p = probed_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept { return probed_alloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return probed_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#endif

namespace pocket {
namespace {

TEST(AllocationProbe, SeesAllocations) {
#ifdef POCKET_TEST_ASAN
  GTEST_SKIP() << "the probe is off under AddressSanitizer";
#else
  testing::AllocationProbe probe;
  std::vector<uint8_t> v(1 << 20);
  EXPECT_GE(probe.largest(), v.size());
  // The nothrow array form too: the zstd decoder allocates its output with it.
  std::unique_ptr<uint8_t[]> p(new (std::nothrow) uint8_t[3 << 20]);
  EXPECT_GE(probe.largest(), size_t{3} << 20);
#endif
}

}  // namespace
}  // namespace pocket
