// Scalar reference matmuls: per block an exact int32 dot product, then one float multiply-add.
#include "kernels/ref/matmul_ref.h"

#include "core/half.h"

namespace pocket::kernels::ref {
namespace {

using quant::ActBlock;

// Signed 4-bit value of element i of a 32-element nibble block (byte j: j low, j + 16 high).
inline int nib32(const uint8_t* q, int i) { return i < 16 ? (q[i] & 0xf) : (q[i - 16] >> 4); }

// y[i, r] = sum over blocks of block_dot(r, i, b); BlockDot returns the float contribution of block b.
template <typename BlockDot>
void run(float* y, int64_t ldy, int64_t m, int64_t r0, int64_t r1, int64_t nb, BlockDot&& block_dot) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = r0; r < r1; ++r) {
      float s = 0.0f;
      for (int64_t b = 0; b < nb; ++b) s += block_dot(r, i, b);
      y[i * ldy + r] = s;
    }
  }
}

}  // namespace

void matmul_q8g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1) {
  const int64_t nb = quant::act_blocks(n);
  const auto* wb = reinterpret_cast<const quant::BlockQ8G32*>(w);
  run(y, ldy, m, r0, r1, nb, [&](int64_t r, int64_t i, int64_t b) {
    const auto& wk = wb[r * nb + b];
    const ActBlock& a = x[i * nb + b];
    int32_t sum = 0;
    for (int k = 0; k < 32; ++k) sum += wk.q[k] * a.q[k];
    return f16_to_f32(wk.d) * a.d * static_cast<float>(sum);
  });
}

void matmul_q4g32(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1) {
  const int64_t nb = quant::act_blocks(n);
  const auto* wb = reinterpret_cast<const quant::BlockQ4G32*>(w);
  run(y, ldy, m, r0, r1, nb, [&](int64_t r, int64_t i, int64_t b) {
    const auto& wk = wb[r * nb + b];
    const ActBlock& a = x[i * nb + b];
    int32_t sum = 0;
    for (int k = 0; k < 32; ++k) sum += (nib32(wk.q, k) - 8) * a.q[k];
    return f16_to_f32(wk.d) * a.d * static_cast<float>(sum);
  });
}

void matmul_q4g32r8(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n,
                    int64_t r0, int64_t r1) {
  const int64_t nb = quant::act_blocks(n);
  const auto* wb = reinterpret_cast<const quant::BlockQ4G32R8*>(w);
  run(y, ldy, m, r0, r1, nb, [&](int64_t r, int64_t i, int64_t b) {
    const auto& wk = wb[(r / 8) * nb + b];
    const int64_t lane = r % 8;
    const ActBlock& a = x[i * nb + b];
    int32_t sum = 0;
    for (int k = 0; k < 32; ++k) {
      const uint8_t byte = wk.q[32 * ((k % 16) / 4) + 4 * lane + k % 4];
      sum += ((k < 16 ? byte & 0xf : byte >> 4) - 8) * a.q[k];
    }
    return f16_to_f32(wk.d[lane]) * a.d * static_cast<float>(sum);
  });
}

void matmul_q4g64(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                  int64_t r1) {
  const int64_t na = quant::act_blocks(n);
  const int64_t nb = (n + 63) / 64;
  const auto* wb = reinterpret_cast<const quant::BlockQ4G64*>(w);
  // Sums over the 32-element activation blocks; weight block b / 2 holds element 32 * (b % 2) + k.
  run(y, ldy, m, r0, r1, na, [&](int64_t r, int64_t i, int64_t b) {
    const auto& wk = wb[r * nb + b / 2];
    const ActBlock& a = x[i * na + b];
    const int half = static_cast<int>(b % 2);
    int32_t sum = 0;
    for (int k = 0; k < 32; ++k) {
      const int u = half == 0 ? (wk.q[k] & 0xf) : (wk.q[k] >> 4);
      sum += (u - 8) * a.q[k];
    }
    return f16_to_f32(wk.d) * a.d * static_cast<float>(sum);
  });
}

void matmul_q4g32a(float* y, int64_t ldy, const uint8_t* w, const ActBlock* x, int64_t m, int64_t n, int64_t r0,
                   int64_t r1) {
  const int64_t nb = quant::act_blocks(n);
  const auto* wb = reinterpret_cast<const quant::BlockQ4G32A*>(w);
  run(y, ldy, m, r0, r1, nb, [&](int64_t r, int64_t i, int64_t b) {
    const auto& wk = wb[r * nb + b];
    const ActBlock& a = x[i * nb + b];
    int32_t sum = 0, qsum = 0;
    for (int k = 0; k < 32; ++k) {
      sum += nib32(wk.q, k) * a.q[k];
      qsum += a.q[k];
    }
    // sum_k (d u_k + m) d_a q_k = d d_a sum(u q) + m d_a sum(q)
    return a.d * (f16_to_f32(wk.d) * static_cast<float>(sum) + f16_to_f32(wk.m) * static_cast<float>(qsum));
  });
}

void matmul_f32(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1) {
  const auto* wf = reinterpret_cast<const float*>(w);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = r0; r < r1; ++r) {
      float s = 0.0f;
      for (int64_t k = 0; k < n; ++k) s += wf[r * n + k] * x[i * n + k];
      y[i * ldy + r] = s;
    }
  }
}

void matmul_f16(float* y, int64_t ldy, const uint8_t* w, const float* x, int64_t m, int64_t n, int64_t r0,
                int64_t r1) {
  const auto* wh = reinterpret_cast<const uint16_t*>(w);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = r0; r < r1; ++r) {
      float s = 0.0f;
      for (int64_t k = 0; k < n; ++k) s += f16_to_f32(wh[r * n + k]) * x[i * n + k];
      y[i * ldy + r] = s;
    }
  }
}

}  // namespace pocket::kernels::ref
