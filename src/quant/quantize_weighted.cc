// Importance-weighted scale search for the block formats (see quantize_weighted.h).
#include "quant/quantize_weighted.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "quant/quantize.h"

namespace pocket::quant {
namespace {

constexpr int kSteps = 10;        // t = -kSteps..kSteps
constexpr float kStep = 1.0f / 40.0f;

int32_t round_clamp(float v, int32_t lo, int32_t hi) {  // as in quantize.cc: NaN goes to lo
  const float r = std::nearbyint(v);
  if (!(r >= static_cast<float>(lo))) return lo;
  if (r > static_cast<float>(hi)) return hi;
  return static_cast<int32_t>(r);
}

// Symmetric fit x ~= d * q, q in [lo, hi], of g elements with weights w. Returns the best f16 scale and
// writes its q; `d_plain` is the plain quantiser's unrounded scale, `d_alt` a second base (0: none).
uint16_t fit_sym(const float* v, const float* w, int g, int lo, int hi, float d_plain, float d_alt, int8_t* q_out) {
  int8_t q[64];
  auto eval = [&](uint16_t dh) {
    const float d = f16_to_f32(dh);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    double err = 0.0;
    for (int i = 0; i < g; ++i) {
      q[i] = static_cast<int8_t>(round_clamp(v[i] * id, lo, hi));
      const double e = static_cast<double>(v[i]) - static_cast<double>(d * static_cast<float>(q[i]));
      err += static_cast<double>(w[i]) * e * e;
    }
    return err;
  };
  uint16_t best_h = f32_to_f16(d_plain);
  double best = eval(best_h);
  std::memcpy(q_out, q, static_cast<size_t>(g));
  auto consider = [&](uint16_t dh) {
    if (dh == best_h) return;
    const double e = eval(dh);
    if (e < best) {
      best = e;
      best_h = dh;
      std::memcpy(q_out, q, static_cast<size_t>(g));
    }
  };
  const float bases[2] = {d_plain, d_alt};
  for (float base : bases) {
    if (base == 0.0f) continue;
    for (int t = -kSteps; t <= kSteps; ++t) consider(f32_to_f16(base * (1.0f + kStep * static_cast<float>(t))));
  }
  // Weighted least-squares scale for the best q: d = sum w x q / sum w q^2.
  double num = 0.0, den = 0.0;
  for (int i = 0; i < g; ++i) {
    num += static_cast<double>(w[i]) * v[i] * q_out[i];
    den += static_cast<double>(w[i]) * q_out[i] * q_out[i];
  }
  if (den > 0.0) consider(f32_to_f16(static_cast<float>(num / den)));
  return best_h;
}

// Loads block b (g elements, zeros of weight 0 past n).
void load_block(float* v, float* w, const float* x, const float* imp, int64_t n, int64_t b, int g) {
  for (int i = 0; i < g; ++i) {
    const int64_t k = b * g + i;
    v[i] = k < n ? x[k] : 0.0f;
    w[i] = k < n ? imp[k] : 0.0f;
  }
}

// Largest-magnitude element (the first one on ties, as the plain quantiser picks).
float extreme(const float* v, int g) {
  float amax = 0.0f, vmax = 0.0f;
  for (int i = 0; i < g; ++i) {
    if (std::fabs(v[i]) > amax) {
      amax = std::fabs(v[i]);
      vmax = v[i];
    }
  }
  return vmax;
}

template <int G, typename Block>
void q4_sym_row(Block* out, const float* x, const float* imp, int64_t n) {
  float v[G], w[G];
  int8_t q[G];
  for (int64_t b = 0; b < (n + G - 1) / G; ++b) {
    load_block(v, w, x, imp, n, b, G);
    const float vmax = extreme(v, G);
    out[b].d = fit_sym(v, w, G, -8, 7, vmax / -8.0f, vmax / 7.0f, q);
    for (int j = 0; j < G / 2; ++j) {
      const int lo = q[j] + 8, hi = q[j + G / 2] + 8;
      out[b].q[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

}  // namespace

void quantize_row_q8g32_weighted(BlockQ8G32* out, const float* x, const float* imp, int64_t n) {
  float v[32], w[32];
  for (int64_t b = 0; b < (n + 31) / 32; ++b) {
    load_block(v, w, x, imp, n, b, 32);
    float amax = 0.0f;
    for (float f : v) amax = std::max(amax, std::fabs(f));
    out[b].d = fit_sym(v, w, 32, -127, 127, amax / 127.0f, 0.0f, out[b].q);
  }
}

void quantize_row_q4g32_weighted(BlockQ4G32* out, const float* x, const float* imp, int64_t n) {
  q4_sym_row<32>(out, x, imp, n);
}

void quantize_row_q4g64_weighted(BlockQ4G64* out, const float* x, const float* imp, int64_t n) {
  q4_sym_row<64>(out, x, imp, n);
}

void quantize_row_q4g32a_weighted(BlockQ4G32A* out, const float* x, const float* imp, int64_t n) {
  for (int64_t b = 0; b < (n + 31) / 32; ++b) {
    const int64_t k0 = b * 32;
    const int g = static_cast<int>(std::min<int64_t>(n, k0 + 32) - k0);  // real elements only
    const float* v = x + k0;
    const float* w = imp + k0;
    float lo = v[0], hi = v[0];
    for (int i = 0; i < g; ++i) {
      lo = std::min(lo, v[i]);
      hi = std::max(hi, v[i]);
    }
    uint8_t u[32] = {}, best_u[32] = {};
    auto eval = [&](uint16_t dh, uint16_t mh) {
      const float d = f16_to_f32(dh), m = f16_to_f32(mh);
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      double err = 0.0;
      for (int i = 0; i < g; ++i) {
        u[i] = static_cast<uint8_t>(round_clamp((v[i] - m) * id, 0, 15));
        const double e = static_cast<double>(v[i]) - static_cast<double>(d * static_cast<float>(u[i]) + m);
        err += static_cast<double>(w[i]) * e * e;
      }
      return err;
    };
    uint16_t best_d = f32_to_f16((hi - lo) / 15.0f), best_m = f32_to_f16(lo);
    double best = eval(best_d, best_m);
    std::memcpy(best_u, u, sizeof u);
    auto consider = [&](uint16_t dh, uint16_t mh) {
      if (dh == best_d && mh == best_m) return;
      const double e = eval(dh, mh);
      if (e < best) {
        best = e;
        best_d = dh;
        best_m = mh;
        std::memcpy(best_u, u, sizeof u);
      }
    };
    const float range = hi - lo;
    for (int t = -kSteps; t <= kSteps; ++t) {
      const uint16_t dh = f32_to_f16(range / 15.0f * (1.0f + kStep * static_cast<float>(t)));
      consider(dh, f32_to_f16(lo));
      consider(dh, f32_to_f16(lo - 0.5f * (15.0f * f16_to_f32(dh) - range)));
    }
    // Weighted least squares for (d, m) with the best u held fixed: minimise sum w (x - d u - m)^2.
    double sw = 0, su = 0, suu = 0, sx = 0, sux = 0;
    for (int i = 0; i < g; ++i) {
      const double wi = w[i], ui = best_u[i];
      sw += wi;
      su += wi * ui;
      suu += wi * ui * ui;
      sx += wi * v[i];
      sux += wi * ui * v[i];
    }
    const double det = sw * suu - su * su;
    if (det > 0.0 && sw > 0.0) {
      const double d = (sw * sux - su * sx) / det;
      const double m = (sx - d * su) / sw;
      if (d > 0.0) consider(f32_to_f16(static_cast<float>(d)), f32_to_f16(static_cast<float>(m)));
    }
    out[b].d = best_d;
    out[b].m = best_m;
    for (int j = 0; j < 16; ++j) out[b].q[j] = static_cast<uint8_t>(best_u[j] | (best_u[j + 16] << 4));
  }
}

Status quantize_tensor_weighted(DType dst, const float* src, int64_t rows, int64_t cols,
                                std::span<const float> importance, std::span<uint8_t> out) {
  if (importance.empty() || !is_quantised(dst)) return quantize_tensor(dst, src, rows, cols, out);
  if (cols <= 0 || static_cast<int64_t>(importance.size()) != cols) {
    return invalid_argument("[quant] quantize_tensor_weighted: " + std::to_string(importance.size()) +
                            " importance values for a matrix of " + std::to_string(cols) + " columns");
  }
  double sum = 0.0;
  for (float f : importance) {
    if (!std::isfinite(f) || f < 0.0f) {
      return invalid_argument("[quant] quantize_tensor_weighted: importance value " + std::to_string(f) +
                              " is not a finite value >= 0");
    }
    sum += f;
  }
  if (sum == 0.0) return quantize_tensor(dst, src, rows, cols, out);
  const float floor = static_cast<float>(1e-3 * sum / static_cast<double>(cols));
  std::vector<float> w(importance.begin(), importance.end());
  for (float& f : w) f += floor;

  if (dst == DType::kQ4G32R8) {
    if (rows % kR8Rows != 0) {
      return invalid_argument("[quant] quantize_tensor_weighted: q4_g32r8 needs a multiple of 8 rows, got " +
                              std::to_string(rows));
    }
    std::vector<uint8_t> tmp(out.size());
    POCKET_RETURN_IF_ERROR(quantize_tensor_weighted(DType::kQ4G32, src, rows, cols, importance, tmp));
    interleave_r8(out.data(), tmp.data(), rows, cols);
    return Status::ok();
  }
  if (rows < 0) return invalid_argument("[quant] quantize_tensor_weighted: negative row count");
  const uint64_t shape[2] = {static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)};
  const auto need = tensor_bytes(dst, shape);
  const auto rb = row_bytes(dst, static_cast<uint64_t>(cols));
  if (!need || !rb || out.size() != *need) {
    return invalid_argument("[quant] quantize_tensor_weighted: output holds " + std::to_string(out.size()) + " bytes, " +
                            std::string(dtype_name(dst)) + " [" + std::to_string(rows) + ", " + std::to_string(cols) +
                            "] needs " + (need ? std::to_string(*need) : std::string("?")));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = src + r * cols;
    uint8_t* o = out.data() + static_cast<uint64_t>(r) * *rb;
    switch (dst) {
      case DType::kQ8G32: quantize_row_q8g32_weighted(reinterpret_cast<BlockQ8G32*>(o), x, w.data(), cols); break;
      case DType::kQ4G32: quantize_row_q4g32_weighted(reinterpret_cast<BlockQ4G32*>(o), x, w.data(), cols); break;
      case DType::kQ4G64: quantize_row_q4g64_weighted(reinterpret_cast<BlockQ4G64*>(o), x, w.data(), cols); break;
      case DType::kQ4G32A: quantize_row_q4g32a_weighted(reinterpret_cast<BlockQ4G32A*>(o), x, w.data(), cols); break;
      default: return unsupported("[quant] quantize_tensor_weighted: " + std::string(dtype_name(dst)));
    }
  }
  return Status::ok();
}

}  // namespace pocket::quant
