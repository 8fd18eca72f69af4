// Scalar block quantisers and decoders (see quantize.h for the rules).
#include "quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"

namespace pocket::quant {
namespace {

// Copies the g elements of block b from x (zeros past n).
void load_group(float* buf, const float* x, int64_t n, int64_t b, int64_t g) {
  for (int64_t i = 0; i < g; ++i) {
    const int64_t k = b * g + i;
    buf[i] = k < n ? x[k] : 0.0f;
  }
}

int32_t round_clamp(float v, int32_t lo, int32_t hi) {
  const float r = std::nearbyint(v);
  if (!(r >= static_cast<float>(lo))) return lo;  // NaN goes to lo
  if (r > static_cast<float>(hi)) return hi;
  return static_cast<int32_t>(r);
}

// Symmetric 4-bit fit of g values: returns the f16 scale and writes u[i] = q[i] + 8.
uint16_t fit_q4_sym(const float* v, int64_t g, uint8_t* u) {
  float amax = 0.0f, vmax = 0.0f;
  for (int64_t i = 0; i < g; ++i) {
    if (std::fabs(v[i]) > amax) {
      amax = std::fabs(v[i]);
      vmax = v[i];
    }
  }
  const uint16_t dh = f32_to_f16(vmax / -8.0f);
  const float d = f16_to_f32(dh);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int64_t i = 0; i < g; ++i) u[i] = static_cast<uint8_t>(round_clamp(v[i] * id, -8, 7) + 8);
  return dh;
}

}  // namespace

bool is_quantised(DType t) {
  return t == DType::kQ8G32 || t == DType::kQ4G32 || t == DType::kQ4G64 || t == DType::kQ4G32A ||
         t == DType::kQ4G32R8;
}

void quantize_row_q8g32(BlockQ8G32* out, const float* x, int64_t n) {
  float v[32];
  for (int64_t b = 0; b < (n + 31) / 32; ++b) {
    load_group(v, x, n, b, 32);
    float amax = 0.0f;
    for (float f : v) amax = std::max(amax, std::fabs(f));
    const uint16_t dh = f32_to_f16(amax / 127.0f);
    const float d = f16_to_f32(dh);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = dh;
    for (int i = 0; i < 32; ++i) out[b].q[i] = static_cast<int8_t>(round_clamp(v[i] * id, -127, 127));
  }
}

void quantize_row_q4g32(BlockQ4G32* out, const float* x, int64_t n) {
  float v[32];
  uint8_t u[32];
  for (int64_t b = 0; b < (n + 31) / 32; ++b) {
    load_group(v, x, n, b, 32);
    out[b].d = fit_q4_sym(v, 32, u);
    for (int j = 0; j < 16; ++j) out[b].q[j] = static_cast<uint8_t>(u[j] | (u[j + 16] << 4));
  }
}

void quantize_row_q4g64(BlockQ4G64* out, const float* x, int64_t n) {
  float v[64];
  uint8_t u[64];
  for (int64_t b = 0; b < (n + 63) / 64; ++b) {
    load_group(v, x, n, b, 64);
    out[b].d = fit_q4_sym(v, 64, u);
    for (int j = 0; j < 32; ++j) out[b].q[j] = static_cast<uint8_t>(u[j] | (u[j + 32] << 4));
  }
}

void quantize_row_q4g32a(BlockQ4G32A* out, const float* x, int64_t n) {
  for (int64_t b = 0; b < (n + 31) / 32; ++b) {
    const int64_t k0 = b * 32, k1 = std::min<int64_t>(n, k0 + 32);
    float lo = x[k0], hi = x[k0];
    for (int64_t k = k0; k < k1; ++k) {
      lo = std::min(lo, x[k]);
      hi = std::max(hi, x[k]);
    }
    const uint16_t dh = f32_to_f16((hi - lo) / 15.0f);
    const uint16_t mh = f32_to_f16(lo);
    const float d = f16_to_f32(dh), m = f16_to_f32(mh);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t u[32] = {};
    for (int64_t k = k0; k < k1; ++k) u[k - k0] = static_cast<uint8_t>(round_clamp((x[k] - m) * id, 0, 15));
    out[b].d = dh;
    out[b].m = mh;
    for (int j = 0; j < 16; ++j) out[b].q[j] = static_cast<uint8_t>(u[j] | (u[j + 16] << 4));
  }
}

void dequantize_row_q8g32(float* out, const BlockQ8G32* in, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] = f16_to_f32(in[k / 32].d) * static_cast<float>(in[k / 32].q[k % 32]);
}

void dequantize_row_q4g32(float* out, const BlockQ4G32* in, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const BlockQ4G32& b = in[k / 32];
    const int i = static_cast<int>(k % 32);
    const int u = i < 16 ? (b.q[i] & 0xf) : (b.q[i - 16] >> 4);
    out[k] = f16_to_f32(b.d) * static_cast<float>(u - 8);
  }
}

void dequantize_row_q4g64(float* out, const BlockQ4G64* in, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const BlockQ4G64& b = in[k / 64];
    const int i = static_cast<int>(k % 64);
    const int u = i < 32 ? (b.q[i] & 0xf) : (b.q[i - 32] >> 4);
    out[k] = f16_to_f32(b.d) * static_cast<float>(u - 8);
  }
}

void dequantize_row_q4g32a(float* out, const BlockQ4G32A* in, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const BlockQ4G32A& b = in[k / 32];
    const int i = static_cast<int>(k % 32);
    const int u = i < 16 ? (b.q[i] & 0xf) : (b.q[i - 16] >> 4);
    out[k] = f16_to_f32(b.d) * static_cast<float>(u) + f16_to_f32(b.m);
  }
}

void quantize_act_row_ref(ActBlock* out, const float* x, int64_t n) {
  for (int64_t b = 0; b < act_blocks(n); ++b) {
    const int64_t k0 = b * kActGroup, k1 = std::min<int64_t>(n, k0 + kActGroup);
    float amax = 0.0f;
    for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(x[k]));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    ActBlock& a = out[b];
    a.d = amax / 127.0f;
    int32_t sum = 0;
    for (int64_t i = 0; i < kActGroup; ++i) {
      const int64_t k = k0 + i;
      // |x * id| <= 127 up to one rounding, so no clamp is needed (the SIMD versions do not clamp either).
      const int32_t q = k < k1 ? static_cast<int32_t>(std::nearbyint(x[k] * id)) : 0;
      a.q[i] = static_cast<int8_t>(q);
      sum += q;
    }
    a.s = static_cast<float>(sum) * a.d;
    a.s8 = -8.0f * a.s;
  }
}

void interleave_r8(uint8_t* dst, const uint8_t* src, int64_t rows, int64_t cols) {
  const int64_t nb = (cols + 31) / 32;
  const int64_t rb = nb * static_cast<int64_t>(sizeof(BlockQ4G32));
  for (int64_t g = 0; g < rows / kR8Rows; ++g) {
    auto* out = reinterpret_cast<BlockQ4G32R8*>(dst) + g * nb;
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t r = 0; r < kR8Rows; ++r) {
        BlockQ4G32 in;
        std::memcpy(&in, src + (g * kR8Rows + r) * rb + b * static_cast<int64_t>(sizeof(BlockQ4G32)), sizeof in);
        out[b].d[r] = in.d;
        for (int p = 0; p < 4; ++p) std::memcpy(out[b].q + 32 * p + 4 * r, in.q + 4 * p, 4);
      }
    }
  }
}

void r8_row(BlockQ4G32* out, const uint8_t* src, int64_t cols, int64_t row) {
  const int64_t nb = (cols + 31) / 32;
  const auto* g = reinterpret_cast<const BlockQ4G32R8*>(src) + (row / kR8Rows) * nb;
  const int64_t r = row % kR8Rows;
  for (int64_t b = 0; b < nb; ++b) {
    BlockQ4G32 o;
    std::memcpy(&o.d, &g[b].d[r], 2);
    for (int p = 0; p < 4; ++p) std::memcpy(o.q + 4 * p, g[b].q + 32 * p + 4 * r, 4);
    std::memcpy(out + b, &o, sizeof o);
  }
}

Status quantize_tensor(DType dst, const float* src, int64_t rows, int64_t cols, std::span<uint8_t> out) {
  if (dst == DType::kQ4G32R8) {
    if (rows % kR8Rows != 0) {
      return invalid_argument("[quant] quantize_tensor: q4_g32r8 needs a multiple of 8 rows, got " + std::to_string(rows));
    }
    std::vector<uint8_t> tmp(out.size());
    POCKET_RETURN_IF_ERROR(quantize_tensor(DType::kQ4G32, src, rows, cols, tmp));
    interleave_r8(out.data(), tmp.data(), rows, cols);
    return Status::ok();
  }
  if (rows < 0 || cols <= 0) {
    return invalid_argument("[quant] quantize_tensor: shape [" + std::to_string(rows) + ", " +
                            std::to_string(cols) + "] is not a matrix");
  }
  const uint64_t shape[2] = {static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)};
  const auto need = tensor_bytes(dst, shape);
  const auto rb = row_bytes(dst, static_cast<uint64_t>(cols));
  if (!need || !rb) return unsupported("[quant] quantize_tensor: unknown dtype " + std::to_string(static_cast<uint32_t>(dst)));
  if (out.size() != *need) {
    return invalid_argument("[quant] quantize_tensor: output holds " + std::to_string(out.size()) +
                            " bytes, " + std::string(dtype_name(dst)) + " [" + std::to_string(rows) + ", " +
                            std::to_string(cols) + "] needs " + std::to_string(*need));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = src + r * cols;
    uint8_t* o = out.data() + static_cast<uint64_t>(r) * *rb;
    switch (dst) {
      case DType::kF32: std::memcpy(o, x, static_cast<size_t>(cols) * 4); break;
      case DType::kF16:
        for (int64_t i = 0; i < cols; ++i) {
          const uint16_t h = f32_to_f16(x[i]);
          std::memcpy(o + 2 * i, &h, 2);
        }
        break;
      case DType::kBF16:
        for (int64_t i = 0; i < cols; ++i) {
          const uint16_t h = f32_to_bf16(x[i]);
          std::memcpy(o + 2 * i, &h, 2);
        }
        break;
      case DType::kQ8G32: quantize_row_q8g32(reinterpret_cast<BlockQ8G32*>(o), x, cols); break;
      case DType::kQ4G32: quantize_row_q4g32(reinterpret_cast<BlockQ4G32*>(o), x, cols); break;
      case DType::kQ4G64: quantize_row_q4g64(reinterpret_cast<BlockQ4G64*>(o), x, cols); break;
      case DType::kQ4G32A: quantize_row_q4g32a(reinterpret_cast<BlockQ4G32A*>(o), x, cols); break;
      case DType::kQ4G32R8: break;  // handled above
    }
  }
  return Status::ok();
}

Status dequantize_row(DType t, std::span<const uint8_t> data, int64_t rows, int64_t cols, int64_t row,
                      float* out) {
  const auto rb = row_bytes(t, static_cast<uint64_t>(cols));
  if (!rb || cols <= 0) return unsupported("[quant] dequantize_row: unknown dtype or empty row");
  if (row < 0 || row >= rows) {
    return invalid_argument("[quant] dequantize_row: row " + std::to_string(row) + " outside [0, " +
                            std::to_string(rows) + ")");
  }
  if (data.size() < static_cast<uint64_t>(rows) * *rb) {
    return invalid_argument("[quant] dequantize_row: " + std::to_string(data.size()) + " bytes, [" +
                            std::to_string(rows) + ", " + std::to_string(cols) + "] " +
                            std::string(dtype_name(t)) + " needs " + std::to_string(rows * *rb));
  }
  if (t == DType::kQ4G32R8) {
    if (rows % kR8Rows != 0) return invalid_argument("[quant] dequantize_row: q4_g32r8 needs a multiple of 8 rows");
    // Decoded in place (no allocation: embedding lookups call this once per token).
    const int64_t nb = (cols + 31) / 32, lane = row % kR8Rows;
    const auto* g = reinterpret_cast<const BlockQ4G32R8*>(data.data()) + (row / kR8Rows) * nb;
    for (int64_t k = 0; k < cols; ++k) {
      const BlockQ4G32R8& blk = g[k / 32];
      const int e = static_cast<int>(k % 32);
      const uint8_t byte = blk.q[32 * ((e % 16) / 4) + 4 * lane + e % 4];
      const int u = e < 16 ? (byte & 0xf) : (byte >> 4);
      out[k] = f16_to_f32(blk.d[lane]) * static_cast<float>(u - 8);
    }
    return Status::ok();
  }
  const uint8_t* p = data.data() + static_cast<uint64_t>(row) * *rb;
  switch (t) {
    case DType::kF32: std::memcpy(out, p, static_cast<size_t>(cols) * 4); break;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t i = 0; i < cols; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = t == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    case DType::kQ8G32: dequantize_row_q8g32(out, reinterpret_cast<const BlockQ8G32*>(p), cols); break;
    case DType::kQ4G32: dequantize_row_q4g32(out, reinterpret_cast<const BlockQ4G32*>(p), cols); break;
    case DType::kQ4G64: dequantize_row_q4g64(out, reinterpret_cast<const BlockQ4G64*>(p), cols); break;
    case DType::kQ4G32A: dequantize_row_q4g32a(out, reinterpret_cast<const BlockQ4G32A*>(p), cols); break;
    case DType::kQ4G32R8: break;  // handled above
  }
  return Status::ok();
}

}  // namespace pocket::quant
