// Block formats: byte layout, round-trip error bounds, ragged rows, the activation quantiser, and the
// quantize_tensor / dequantize_row entry points.
#include "quant/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/half.h"

namespace pocket::quant {
namespace {

std::vector<float> random_row(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = dist(rng);
  return x;
}

std::vector<uint8_t> quantise(DType t, const std::vector<float>& x, int64_t rows, int64_t cols) {
  const uint64_t shape[2] = {static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)};
  std::vector<uint8_t> out(*tensor_bytes(t, shape));
  EXPECT_TRUE(quantize_tensor(t, x.data(), rows, cols, out).is_ok());
  return out;
}

TEST(QuantLayout, Q4G32NibbleOrderIsLowHalfThenHighHalf) {
  // Values -8..7 twice: the largest magnitude is -8, so d = 1 exactly and u = x + 8.
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i % 16 - 8);
  BlockQ4G32 b;
  quantize_row_q4g32(&b, x.data(), 32);
  EXPECT_EQ(f16_to_f32(b.d), 1.0f);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.q[j], j | (j << 4)) << j;
}

TEST(QuantLayout, Q4G64ByteJHoldsElementsJAndJPlus32) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = i < 32 ? -8.0f : 7.0f;
  BlockQ4G64 b;
  quantize_row_q4g64(&b, x.data(), 64);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(b.q[j], 0x0f << 4) << j;  // low nibble u = 0, high u = 15
}

TEST(QuantLayout, RaggedRowPadsWithZeros) {
  const auto x = random_row(40, 1);
  BlockQ8G32 q8[2];
  quantize_row_q8g32(q8, x.data(), 40);
  for (int i = 8; i < 32; ++i) EXPECT_EQ(q8[1].q[i], 0);
  BlockQ4G32 q4[2];
  quantize_row_q4g32(q4, x.data(), 40);
  for (int j = 8; j < 16; ++j) EXPECT_EQ(q4[1].q[j], 0x88);  // q = 0 stored as u = 8, both nibbles
}

// Round trip: each element's error is at most half a quantisation step (d / 2) (one step for the clipped
// side of symmetric Q4, see below), plus the effect of storing
// the scale (and min) in f16 (relative 2^-11 of the block's largest magnitude, which can push the extreme
// element one step past the clamp) — bounded here by 2^-9 of that magnitude.
struct RoundTripCase {
  DType t;
  int64_t group;
};

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, ErrorWithinHalfStep) {
  const auto [t, group] = GetParam();
  for (int64_t cols : {32, 64, 172, 1000}) {
    const int64_t rows = 3;
    const auto x = random_row(rows * cols, static_cast<uint32_t>(cols), 2.0f);
    const auto q = quantise(t, x, rows, cols);
    std::vector<float> y(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(dequantize_row(t, q, rows, cols, r, y.data()).is_ok());
      for (int64_t k0 = 0; k0 < cols; k0 += group) {
        const int64_t k1 = std::min(cols, k0 + group);
        float lo = INFINITY, hi = -INFINITY, amax = 0.0f;
        for (int64_t k = k0; k < k1; ++k) {
          const float v = x[r * cols + k];
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          amax = std::max(amax, std::fabs(v));
        }
        const float step = t == DType::kQ8G32 ? amax / 127 : t == DType::kQ4G32A ? (hi - lo) / 15 : amax / 8;
        const float slack = amax * 0x1p-9f;
        for (int64_t k = k0; k < k1; ++k) {
          // Symmetric Q4 maps the largest-magnitude element to -8 exactly, so the other sign only reaches
          // +7 steps: an element beyond 7.5 steps of that sign is clipped, with an error of at most one step.
          const bool sym4 = t == DType::kQ4G32 || t == DType::kQ4G64;
          const bool clipped = sym4 && std::fabs(x[r * cols + k]) > 7.5f * step * 0.999f;
          const float bound = (clipped ? step : 0.5f * step) * 1.001f + slack;
          ASSERT_NEAR(y[k], x[r * cols + k], bound) << dtype_name(t) << " cols " << cols << " row " << r << " k " << k;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTrip,
                         ::testing::Values(RoundTripCase{DType::kQ8G32, 32}, RoundTripCase{DType::kQ4G32, 32},
                                           RoundTripCase{DType::kQ4G64, 64}, RoundTripCase{DType::kQ4G32A, 32}));

TEST(QuantRoundTrip, PlainTypesConvert) {
  const auto x = random_row(2 * 37, 5);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    const auto q = quantise(t, x, 2, 37);
    std::vector<float> y(37);
    ASSERT_TRUE(dequantize_row(t, q, 2, 37, 1, y.data()).is_ok());
    const float rel = t == DType::kF32 ? 0.0f : t == DType::kF16 ? 0x1p-11f : 0x1p-8f;
    for (int k = 0; k < 37; ++k) EXPECT_NEAR(y[k], x[37 + k], std::fabs(x[37 + k]) * rel + 1e-7f);
  }
}

TEST(QuantRoundTrip, ConstantAndZeroBlocks) {
  std::vector<float> x(64, 0.0f);
  for (int i = 32; i < 64; ++i) x[i] = 3.0f;
  for (DType t : {DType::kQ8G32, DType::kQ4G32, DType::kQ4G64, DType::kQ4G32A}) {
    const auto q = quantise(t, x, 1, 64);
    std::vector<float> y(64);
    ASSERT_TRUE(dequantize_row(t, q, 1, 64, 0, y.data()).is_ok());
    for (int i = 0; i < 64; ++i) EXPECT_NEAR(y[i], x[i], 3.0f * 0x1p-10f) << dtype_name(t) << " " << i;
  }
}

TEST(ActQuant, WithinHalfStepAndSumConsistent) {
  const int64_t n = 172;
  const auto x = random_row(n, 9, 3.0f);
  std::vector<ActBlock> a(static_cast<size_t>(act_blocks(n)));
  quantize_act_row_ref(a.data(), x.data(), n);
  for (int64_t b = 0; b < act_blocks(n); ++b) {
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) {
      const int64_t k = b * 32 + i;
      sum += a[b].q[i];
      EXPECT_LE(std::abs(a[b].q[i]), 127);
      if (k < n) {
        EXPECT_NEAR(a[b].d * a[b].q[i], x[k], 0.5f * a[b].d * 1.0001f);
      } else {
        EXPECT_EQ(a[b].q[i], 0);
      }
    }
    EXPECT_EQ(a[b].s, static_cast<float>(sum) * a[b].d);
    EXPECT_EQ(a[b].s8, -8.0f * a[b].s);
  }
}

TEST(QuantErrors, WrongOutputSizeAndBadRow) {
  std::vector<float> x(64, 1.0f);
  std::vector<uint8_t> out(35);
  const Status s = quantize_tensor(DType::kQ8G32, x.data(), 1, 64, out);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("needs 68"), std::string::npos) << s.message();
  std::vector<uint8_t> q(68);
  ASSERT_TRUE(quantize_tensor(DType::kQ8G32, x.data(), 1, 64, q).is_ok());
  float y[64];
  EXPECT_EQ(dequantize_row(DType::kQ8G32, q, 1, 64, 1, y).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dequantize_row(DType::kQ8G32, std::span<const uint8_t>(q).first(60), 1, 64, 0, y).code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace pocket::quant
