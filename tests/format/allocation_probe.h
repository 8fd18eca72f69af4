// Allocation probe for the format tests: while armed, records the largest single operator-new request, to
// show that hostile counts and sizes are refused before anything is sized from them. The replacement
// operators new/delete that feed it live in allocation_probe_test.cc (a program has one replacement). Off
// under AddressSanitizer, which owns operator new there (and itself aborts on absurd allocations).
#pragma once

#include <atomic>
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define POCKET_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POCKET_TEST_ASAN 1
#endif
#endif

namespace pocket::testing {

inline std::atomic<bool> g_probe_armed{false};
inline std::atomic<size_t> g_probe_largest{0};

// While alive, records the largest single allocation. Not for concurrent use: tests arm one at a time.
class AllocationProbe {
 public:
  AllocationProbe() {
    g_probe_largest = 0;
    g_probe_armed = true;
  }
  ~AllocationProbe() { g_probe_armed = false; }
  AllocationProbe(const AllocationProbe&) = delete;
  AllocationProbe& operator=(const AllocationProbe&) = delete;
  size_t largest() const { return g_probe_largest; }
};

inline constexpr size_t kFlatMemory = 64 * 1024;  // far below anything sized from a hostile count

}  // namespace pocket::testing
