// The package checksum: XXH3-64 (xxHash), seed 0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pocket {
uint64_t checksum64(const void* data, size_t size);
}  // namespace pocket
