// Writing a weight matrix into any package dtype from a source that yields float32 rows, a chunk of rows at
// a time (so a 600 MB embedding never needs a float copy of itself); shared by the importers and exporter.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "core/status.h"
#include "format/dtype.h"

namespace pocket {

// Reads rows [first, first + n) of the source as float32 into out[0 .. n * cols).
using RowReader = std::function<Status(int64_t first, int64_t n, float* out)>;

// Fills `out` (exactly tensor_bytes(dst, {rows, cols})) with the [rows, cols] matrix `read` yields,
// converted or quantised (quant::quantize_tensor) to `dst`.
Status fill_rows(DType dst, int64_t rows, int64_t cols, const RowReader& read, std::span<uint8_t> out);

}  // namespace pocket
