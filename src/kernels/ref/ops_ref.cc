// Scalar float32 reference operators.
#include "kernels/ref/ops_ref.h"

#include <cmath>

#include "core/half.h"

namespace pocket::ref {

void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (scale * x[i]);
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void row_to_f32(float* out, const uint8_t* row, DType t, int64_t n) {
  switch (t) {
    case DType::kF32: {
      const auto* p = reinterpret_cast<const float*>(row);
      for (int64_t i = 0; i < n; ++i) out[i] = p[i];
      return;
    }
    case DType::kF16: {
      const auto* p = reinterpret_cast<const uint16_t*>(row);
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(p[i]);
      return;
    }
    case DType::kBF16: {
      const auto* p = reinterpret_cast<const uint16_t*>(row);
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) out[i] = NAN;  // block types are dequantised by quant/
      return;
  }
}

void matvec_rows(float* y, const uint8_t* w, DType t, const float* x, int64_t n, int64_t r0, int64_t r1) {
  switch (t) {
    case DType::kF32: {
      const auto* m = reinterpret_cast<const float*>(w);
      for (int64_t r = r0; r < r1; ++r) y[r] = dot_f32(m + r * n, x, n);
      return;
    }
    case DType::kF16: {
      const auto* m = reinterpret_cast<const uint16_t*>(w);
      for (int64_t r = r0; r < r1; ++r) {
        const uint16_t* row = m + r * n;
        float s = 0.0f;
        for (int64_t i = 0; i < n; ++i) s += f16_to_f32(row[i]) * x[i];
        y[r] = s;
      }
      return;
    }
    case DType::kBF16: {
      const auto* m = reinterpret_cast<const uint16_t*>(w);
      for (int64_t r = r0; r < r1; ++r) {
        const uint16_t* row = m + r * n;
        float s = 0.0f;
        for (int64_t i = 0; i < n; ++i) s += bf16_to_f32(row[i]) * x[i];
        y[r] = s;
      }
      return;
    }
    default:
      for (int64_t r = r0; r < r1; ++r) y[r] = NAN;
      return;
  }
}

void softmax(float* x, int64_t n) {
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  for (int64_t i = 0; i < n; ++i) x[i] /= sum;
}

void rope_interleaved(float* x, int64_t head_dim, int64_t pos, float theta) {
  for (int64_t i = 0; i < head_dim; i += 2) {
    const float freq = 1.0f / std::pow(theta, static_cast<float>(i) / static_cast<float>(head_dim));
    const float angle = static_cast<float>(pos) * freq;
    const float c = std::cos(angle), s = std::sin(angle);
    const float a = x[i], b = x[i + 1];
    x[i] = a * c - b * s;
    x[i + 1] = a * s + b * c;
  }
}

void rope_neox(float* x, int64_t head_dim, int64_t pos, float theta) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float freq = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
    const float angle = static_cast<float>(pos) * freq;
    const float c = std::cos(angle), s = std::sin(angle);
    const float a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = a * s + b * c;
  }
}

void swiglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g * (1.0f / (1.0f + std::exp(-g))) * up[i];
  }
}

}  // namespace pocket::ref
