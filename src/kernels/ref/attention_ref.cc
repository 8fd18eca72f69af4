// Scalar flash-style attention: for each (query row, kv head) task, the query heads of that group walk the
// causal keys in tiles of kKeyTile with a running max and sum (online softmax), so memory is O(tile).
#include "kernels/ref/attention_ref.h"

#include <algorithm>
#include <cmath>

#include "core/half.h"
#include "kernels/ref/ops_ref.h"

namespace pocket::kernels::ref {
namespace {
constexpr int64_t kKeyTile = 64;
}

void attention(float* out, const float* q, const uint16_t* k, const uint16_t* v, const AttentionShape& s,
               int64_t t0, int64_t t1) {
  const int64_t hd = s.head_dim, g = s.n_heads / s.n_kv_heads, kv_stride = kv_pos_stride(s),
                head_stride = kv_head_stride(s);
  float score[kMaxGroup][kKeyTile];
  float run_max[kMaxGroup], run_sum[kMaxGroup];
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t row = t % s.m, kvh = t / s.m;
    const int64_t n_keys = s.pos0 + row + 1;  // causal: keys 0 .. pos0 + row
    const float* qg = q + (row * s.n_heads + kvh * g) * hd;  // [g, hd]
    float* og = out + (row * s.n_heads + kvh * g) * hd;      // [g, hd], the running numerators
    std::fill(og, og + g * hd, 0.0f);
    std::fill(run_max, run_max + g, -INFINITY);
    std::fill(run_sum, run_sum + g, 0.0f);
    for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyTile) {
      const int64_t nt = std::min(kKeyTile, n_keys - j0);
      for (int64_t j = 0; j < nt; ++j) {
        const uint16_t* kj = k + (j0 + j) * kv_stride + kvh * head_stride;
        for (int64_t h = 0; h < g; ++h) {
          float d = 0.0f;
          for (int64_t e = 0; e < hd; ++e) d += qg[h * hd + e] * f16_to_f32(kj[e]);
          score[h][j] = d * s.scale;
        }
      }
      for (int64_t h = 0; h < g; ++h) {
        float mx = run_max[h];
        for (int64_t j = 0; j < nt; ++j) mx = std::max(mx, score[h][j]);
        const float c = std::exp(run_max[h] - mx);  // 0 on the first tile (exp(-inf))
        run_sum[h] *= c;
        for (int64_t e = 0; e < hd; ++e) og[h * hd + e] *= c;
        for (int64_t j = 0; j < nt; ++j) {
          score[h][j] = std::exp(score[h][j] - mx);
          run_sum[h] += score[h][j];
        }
        run_max[h] = mx;
      }
      for (int64_t j = 0; j < nt; ++j) {
        const uint16_t* vj = v + (j0 + j) * kv_stride + kvh * head_stride;
        for (int64_t h = 0; h < g; ++h) {
          for (int64_t e = 0; e < hd; ++e) og[h * hd + e] += score[h][j] * f16_to_f32(vj[e]);
        }
      }
    }
    for (int64_t h = 0; h < g; ++h) {
      const float inv = 1.0f / run_sum[h];
      for (int64_t e = 0; e < hd; ++e) og[h * hd + e] *= inv;
    }
  }
}

void rope_heads(float* x, int64_t n_heads, int64_t head_dim, const float* cs, const float* sn, RopeStyle style) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* p = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      // Pair i: (p[i], p[i + half]) for NeoX, (p[2i], p[2i + 1]) interleaved; ops_ref's rotation.
      float& a = style == RopeStyle::kNeox ? p[i] : p[2 * i];
      float& b = style == RopeStyle::kNeox ? p[i + half] : p[2 * i + 1];
      const float x0 = a, x1 = b;
      a = x0 * cs[i] - x1 * sn[i];
      b = x0 * sn[i] + x1 * cs[i];
    }
  }
}

}  // namespace pocket::kernels::ref
