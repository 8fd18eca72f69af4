// Helpers shared by importers and synth: writing float32 data into a tensor of any plain dtype.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "format/dtype.h"

namespace pocket {

// Converts `src` (rows x cols float32 values) into `out` in dtype `t` (f32, f16, bf16, or a block type
// through quant::quantize_tensor).
Status convert_f32(std::span<const float> src, DType t, uint64_t rows, uint64_t cols, std::span<uint8_t> out);

}  // namespace pocket
