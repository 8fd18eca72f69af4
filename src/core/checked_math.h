// Overflow-checked size arithmetic for everything that comes from a file or a caller.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace pocket {

// a + b, or nullopt if it wraps.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a * b, or nullopt if it wraps.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of all dims, or nullopt if it wraps.
inline std::optional<uint64_t> checked_product(std::span<const uint64_t> dims) {
  uint64_t p = 1;
  for (uint64_t d : dims) {
    auto r = checked_mul(p, d);
    if (!r) return std::nullopt;
    p = *r;
  }
  return p;
}

// True when [offset, offset + size) lies inside [0, limit) without wrapping.
inline bool range_within(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace pocket
