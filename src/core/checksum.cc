// XXH3-64 from Debian's libxxhash.
#include "core/checksum.h"

#include <xxhash.h>

namespace pocket {
uint64_t checksum64(const void* data, size_t size) { return XXH3_64bits(data, size); }
}  // namespace pocket
