// Helpers shared by importers and synth: writing float32 data into a tensor of any plain dtype.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "format/dtype.h"

namespace pocket {

struct TensorInfo;

// Converts `src` (rows x cols float32 values) into `out` in dtype `t` (f32, f16, bf16, or a block type
// through quant::quantize_tensor).
Status convert_f32(std::span<const float> src, DType t, uint64_t rows, uint64_t cols, std::span<uint8_t> out);

// Decodes a tensor of any stored dtype (plain or block-quantised, Q4G32R8 included) into float32: all of it,
// or its first `max_rows` rows when max_rows >= 0.
Status tensor_to_f32(const TensorInfo& t, std::vector<float>* out, int64_t max_rows = -1);

}  // namespace pocket
