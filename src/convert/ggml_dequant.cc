// ggml block dequantisers; the layouts are documented in ggml_dequant.h.
#include "convert/ggml_dequant.h"

#include <cstring>

#include "convert/gguf_reader.h"
#include "core/half.h"

namespace pocket {
namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// The 6-bit scale and min of sub-block s (0..7) of a Q4_K / Q5_K super-block.
void k_scale_min(int s, const uint8_t* q, int* sc, int* m) {
  if (s < 4) {
    *sc = q[s] & 63;
    *m = q[s + 4] & 63;
  } else {
    *sc = (q[s + 4] & 15) | ((q[s - 4] >> 6) << 4);
    *m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
  }
}

void q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((b[2 + j] & 15) - 8) * d;
    y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
  }
}

void q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(b[4 + j] & 15) * d + m;
    y[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
  }
}

void q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// Q4_K and Q5_K share everything but the fifth bit; qh == nullptr for Q4_K.
void q45_k(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const uint8_t* scales = b + 4;
  for (int g = 0; g < 4; ++g) {
    for (int half = 0; half < 2; ++half) {
      const int s = 2 * g + half;
      int sc, m;
      k_scale_min(s, scales, &sc, &m);
      const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        int q = half == 0 ? (qs[32 * g + l] & 15) : (qs[32 * g + l] >> 4);
        if (qh != nullptr && (qh[l] >> s & 1)) q += 16;
        y[64 * g + 32 * half + l] = ds * static_cast<float>(q) - dm;
      }
    }
  }
}

void q6_k(const uint8_t* b, float* y) {
  const float d = half_at(b + 208);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192 + 8 * h);
    float* o = y + 128 * h;
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q0 = ((ql[l] & 15) | ((qh[l] >> 0 & 3) << 4)) - 32;
      const int q1 = ((ql[l + 32] & 15) | ((qh[l] >> 2 & 3) << 4)) - 32;
      const int q2 = ((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
      const int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
      o[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q0);
      o[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q1);
      o[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q2);
      o[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q3);
    }
  }
}

}  // namespace

bool ggml_can_dequantize(uint32_t t) {
  return t == ggml::kF32 || t == ggml::kF16 || t == ggml::kBF16 || t == ggml::kQ4_0 || t == ggml::kQ4_1 ||
         t == ggml::kQ8_0 || t == ggml::kQ4_K || t == ggml::kQ5_K || t == ggml::kQ6_K;
}

Status ggml_dequantize_row(uint32_t type, const uint8_t* src, int64_t n, float* out) {
  uint64_t bb = 0, be = 0;
  const char* name = "unknown";
  const bool known = ggml_type_size(type, &bb, &be, &name);
  if (!known || !ggml_can_dequantize(type)) {
    return unsupported("[gguf] ggml type " + std::string(name) + " (" + std::to_string(type) +
                       ") cannot be imported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K)");
  }
  if (n < 0 || static_cast<uint64_t>(n) % be != 0) {
    return invalid_argument("[gguf] a row of " + std::to_string(n) + " elements is not a whole number of " + name + " blocks");
  }
  const int64_t blocks = n / static_cast<int64_t>(be);
  for (int64_t i = 0; i < blocks; ++i) {
    const uint8_t* b = src + i * static_cast<int64_t>(bb);
    float* y = out + i * static_cast<int64_t>(be);
    switch (type) {
      case ggml::kF32: std::memcpy(y, b, 4); break;
      case ggml::kF16: y[0] = half_at(b); break;
      case ggml::kBF16: {
        uint16_t h;
        std::memcpy(&h, b, 2);
        y[0] = bf16_to_f32(h);
        break;
      }
      case ggml::kQ4_0: q4_0(b, y); break;
      case ggml::kQ4_1: q4_1(b, y); break;
      case ggml::kQ8_0: q8_0(b, y); break;
      case ggml::kQ4_K: q45_k(b, nullptr, b + 16, y); break;
      case ggml::kQ5_K: q45_k(b, b + 16, b + 48, y); break;
      case ggml::kQ6_K: q6_k(b, y); break;
      default: break;
    }
  }
  return Status::ok();
}

}  // namespace pocket
